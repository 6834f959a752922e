// quill-quantize-activations: products over block-quantized weights (Q8_0,
// Q4_0, Q4_K, Q6_K) take their input rounded to Q8_0 blocks, and those over
// bf16 weights their input rounded to bf16, as llama.cpp rounds the
// activations of such products, so that targets can compute them as int8
// or bf16 dot products.
#include "dialects/Quill/IR/QuillDialect.h"
#include "dialects/Quill/IR/WeightFormats.h"
#include "dialects/Quill/Transforms/Passes.h"

namespace mlir::quill {
#define GEN_PASS_DEF_QUANTIZEACTIVATIONS
#include "dialects/Quill/Transforms/Passes.h.inc"
} // namespace mlir::quill

using namespace mlir;
using namespace mlir::quill;

namespace {

/// Whether products over `weight` take Q8_0 activations.
bool takesQ8Input(Value weight) { return isBlockQuantized(weight.getType()); }
/// Whether they take bf16 activations.
bool takesBf16Input(Value weight) {
  return cast<RankedTensorType>(weight.getType()).getElementType().isBF16();
}

template <typename OpTy> void roundInputs(OpTy op) {
  if (takesQ8Input(op.getWeight()))
    op.setQ8Input(true);
  else if (takesBf16Input(op.getWeight()))
    op.setBf16Input(true);
}

struct QuantizeActivationsPass
    : mlir::quill::impl::QuantizeActivationsBase<QuantizeActivationsPass> {
  void runOnOperation() override {
    getOperation().walk([](Operation *op) {
      if (auto linear = dyn_cast<LinearOp>(op))
        roundInputs(linear);
      else if (auto logits = dyn_cast<LogitsOp>(op))
        roundInputs(logits);
      else if (auto qkv = dyn_cast<ProjectQKVOp>(op))
        roundInputs(qkv);
    });
  }
};

} // namespace
