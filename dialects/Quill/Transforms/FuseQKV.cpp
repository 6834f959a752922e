// quill-fuse-qkv: plain linear layers that share an input -> one linear over
// their weights packed together, split by slices.
#include "dialects/Quill/IR/QuillDialect.h"
#include "dialects/Quill/Transforms/Passes.h"

#include "llvm/ADT/MapVector.h"

namespace mlir::quill {
#define GEN_PASS_DEF_FUSEQKV
#include "dialects/Quill/Transforms/Passes.h.inc"
} // namespace mlir::quill

using namespace mlir;
using namespace mlir::quill;

namespace {

struct FuseQKVPass : mlir::quill::impl::FuseQKVBase<FuseQKVPass> {
  void runOnOperation() override {
    getOperation().walk([&](Block *block) {
      // Siblings in program order, grouped by input and weight encoding
      // (a packed weight has one; a mixed Q4_K_M layer keeps its Q6_K V
      // apart).
      // Biased and unbiased layers are kept apart too: a packed layer has
      // a bias for every row or none.
      llvm::MapVector<std::tuple<Value, Type, unsigned>, SmallVector<LinearOp>> siblings;
      for (auto linear : block->getOps<LinearOp>())
        // Vectors only: slices of [T, rows] outputs would not be contiguous.
        if (!linear.getResidual() && !linear.isTiled() && !linear.getSwiglu() &&
            linear.getType().getRank() == 1 && linear.getWeight().getDefiningOp<WeightOp>() &&
            (!linear.getBias() || linear.getBias().getDefiningOp<WeightOp>()))
          siblings[{linear.getInput(),
                    cast<RankedTensorType>(linear.getWeight().getType()).getElementType(),
                    unsigned(bool(linear.getBias()))}]
              .push_back(linear);
      for (auto &[input, group] : siblings)
        if (group.size() >= 2)
          fuse(group);
    });
  }

  void fuse(SmallVectorImpl<LinearOp> &group) {
    // The fused op goes where the first sibling was, so that it precedes
    // every use of every sibling; the weights (which have no operands) move
    // up to it.
    LinearOp first = group.front();
    for (LinearOp linear : group)
      for (Value operand : {Value(linear.getWeight()), Value(linear.getBias())}) {
        Operation *weight = operand ? operand.getDefiningOp() : nullptr;
        if (weight && weight->getBlock() == first->getBlock() && first->isBeforeInBlock(weight))
          weight->moveBefore(first);
      }
    LinearOp last = first;
    OpBuilder b(first);
    SmallVector<Value> weights;
    int64_t rows = 0;
    for (LinearOp linear : group) {
      weights.push_back(linear.getWeight());
      rows += linear.getType().getDimSize(0);
    }
    auto weightType = cast<RankedTensorType>(group[0].getWeight().getType());
    Type f32 = b.getF32Type();
    Location loc = last.getLoc();
    Value packed = ConcatOp::create(
        b, loc,
        RankedTensorType::get({rows, weightType.getDimSize(1)}, weightType.getElementType()),
        weights, /*scale=*/Value(), /*interleave=*/false);
    Value bias;
    if (group[0].getBias()) {
      SmallVector<Value> biases;
      for (LinearOp linear : group)
        biases.push_back(linear.getBias());
      bias = ConcatOp::create(b, loc, RankedTensorType::get({rows}, f32), biases,
                              /*scale=*/Value(), /*interleave=*/false);
    }
    Value fused =
        LinearOp::create(b, loc, RankedTensorType::get({rows}, f32), last.getInput(), packed,
                         /*residual=*/Value(), bias, /*tile=*/ValueRange{},
                         /*rows=*/Value(), /*swiglu=*/UnitAttr(), /*normEps=*/FloatAttr(),
                         /*q8Input=*/UnitAttr(), /*bf16Input=*/UnitAttr());
    int64_t offset = 0;
    for (LinearOp linear : group) {
      Value part = SliceOp::create(b, loc, linear.getType(), fused, offset);
      offset += linear.getType().getDimSize(0);
      linear.replaceAllUsesWith(part);
    }
    for (LinearOp linear : group)
      linear.erase();
  }
};

} // namespace
