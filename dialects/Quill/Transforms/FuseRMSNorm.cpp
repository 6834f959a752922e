// quill-fuse-rmsnorm: linear(rmsnorm(x, g), W) -> linear(x, W diag(g)) with
// the 1/rms(x) scale applied to the outputs.
#include "dialects/Quill/IR/QuillDialect.h"
#include "dialects/Quill/Transforms/Passes.h"

namespace mlir::quill {
#define GEN_PASS_DEF_FUSERMSNORM
#include "dialects/Quill/Transforms/Passes.h.inc"
} // namespace mlir::quill

using namespace mlir;
using namespace mlir::quill;

namespace {

/// The weights a linear reads, as packing parts: its named weight, or the
/// parts of its (unscaled) packed weight.
std::optional<std::pair<SmallVector<Value>, bool>> packingParts(LinearOp linear) {
  Value weight = linear.getWeight();
  if (weight.getDefiningOp<WeightOp>())
    return std::make_pair(SmallVector<Value>{weight}, false);
  if (auto concat = weight.getDefiningOp<ConcatOp>())
    if (!concat.getScale())
      return std::make_pair(SmallVector<Value>(concat.getParts()), concat.getInterleave());
  return std::nullopt;
}

struct FuseRMSNormPass : mlir::quill::impl::FuseRMSNormBase<FuseRMSNormPass> {
  void runOnOperation() override {
    SmallVector<RMSNormOp> norms;
    getOperation().walk([&](RMSNormOp norm) { norms.push_back(norm); });
    for (RMSNormOp norm : norms) {
      // Every user must be a linear layer the fold can rewrite.
      SmallVector<LinearOp> users;
      // A grouped (per-head) norm scales each head apart: no fold.
      bool foldable =
          !norm->use_empty() && !norm.getGroup() && norm.getWeight().getDefiningOp<WeightOp>();
      for (Operation *user : norm->getUsers()) {
        auto linear = dyn_cast<LinearOp>(user);
        // Only f32 weights take the scale exactly: any other encoding would
        // be rounded again.
        if (!linear || linear.getInput() != norm.getResult() || linear.getNormEps() ||
            linear.isTiled() || !packingParts(linear) ||
            !cast<RankedTensorType>(linear.getWeight().getType()).getElementType().isF32()) {
          foldable = false;
          break;
        }
        users.push_back(linear);
      }
      if (!foldable)
        continue;
      for (LinearOp linear : users) {
        auto [parts, interleave] = *packingParts(linear);
        OpBuilder b(linear);
        Operation *oldPack = linear.getWeight().getDefiningOp<ConcatOp>();
        Value packed = ConcatOp::create(b, linear.getLoc(), linear.getWeight().getType(), parts,
                                        norm.getWeight(), interleave);
        linear.getWeightMutable().assign(packed);
        linear.getInputMutable().assign(norm.getInput());
        linear.setNormEpsAttr(norm.getEpsAttr());
        if (oldPack && oldPack->use_empty())
          oldPack->erase();
      }
      norm.erase();
    }
  }
};

} // namespace
