// quill-fuse-gate-up: swiglu(linear(h, Wg), linear(h, Wu)) -> one linear over
// interleaved weights with a SwiGLU epilogue.
#include "dialects/Quill/IR/QuillDialect.h"
#include "dialects/Quill/Transforms/Passes.h"

namespace mlir::quill {
#define GEN_PASS_DEF_FUSEGATEUP
#include "dialects/Quill/Transforms/Passes.h.inc"
} // namespace mlir::quill

using namespace mlir;
using namespace mlir::quill;

namespace {

/// A linear layer the fusions may rewrite: plain (no epilogue, untiled)
/// over a named weight, used once.
bool isPlainLinear(LinearOp linear) {
  return linear && !linear.getResidual() && !linear.getBias() && !linear.isTiled() &&
         !linear.getSwiglu() && linear.getWeight().getDefiningOp<WeightOp>() && linear->hasOneUse();
}

struct FuseGateUpPass : mlir::quill::impl::FuseGateUpBase<FuseGateUpPass> {
  void runOnOperation() override {
    SmallVector<SwiGLUOp> candidates;
    getOperation().walk([&](SwiGLUOp op) { candidates.push_back(op); });
    for (SwiGLUOp swiglu : candidates) {
      auto gate = swiglu.getGate().getDefiningOp<LinearOp>();
      auto up = swiglu.getUp().getDefiningOp<LinearOp>();
      if (!isPlainLinear(gate) || !isPlainLinear(up) || gate.getInput() != up.getInput() ||
          gate.getRows() != up.getRows() || gate.getWeight().getType() != up.getWeight().getType())
        continue;
      // The fused op goes where the earlier projection was, so that it
      // precedes every use; the other weight (no operands) moves up to it.
      LinearOp earlier = gate->isBeforeInBlock(up) ? gate : up;
      for (LinearOp linear : {gate, up}) {
        Operation *weight = linear.getWeight().getDefiningOp();
        if (weight->getBlock() == earlier->getBlock() && earlier->isBeforeInBlock(weight))
          weight->moveBefore(earlier);
      }
      OpBuilder b(earlier);
      auto weightType = cast<RankedTensorType>(gate.getWeight().getType());
      auto packedType = RankedTensorType::get(
          {2 * weightType.getDimSize(0), weightType.getDimSize(1)}, weightType.getElementType());
      Value packed = ConcatOp::create(b, swiglu.getLoc(), packedType,
                                      ValueRange{gate.getWeight(), up.getWeight()},
                                      /*scale=*/Value(), /*interleave=*/true);
      Value fused = LinearOp::create(b, swiglu.getLoc(), swiglu.getType(), gate.getInput(), packed,
                                     /*residual=*/Value(), /*bias=*/Value(),
                                     /*tile=*/ValueRange{}, /*rows=*/gate.getRows(),
                                     /*swiglu=*/b.getUnitAttr(),
                                     /*normEps=*/FloatAttr(), /*q8Input=*/UnitAttr(),
                                     /*bf16Input=*/UnitAttr());
      swiglu.replaceAllUsesWith(fused);
      swiglu.erase();
      gate.erase();
      up.erase();
    }
  }
};

} // namespace
