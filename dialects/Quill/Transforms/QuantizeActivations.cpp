// quill-quantize-activations: products over block-quantized weights (Q8_0,
// Q4_0, Q4_K, Q6_K) take their input rounded to Q8_0 blocks, as llama.cpp
// rounds the activations of such products, so that targets can compute
// them as int8 dot products.
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

struct QuantizeActivationsPass
    : mlir::quill::impl::QuantizeActivationsBase<QuantizeActivationsPass> {
  void runOnOperation() override {
    getOperation().walk([](Operation *op) {
      if (auto linear = dyn_cast<LinearOp>(op); linear && takesQ8Input(linear.getWeight()))
        linear.setQ8Input(true);
      else if (auto logits = dyn_cast<LogitsOp>(op); logits && takesQ8Input(logits.getWeight()))
        logits.setQ8Input(true);
      else if (auto qkv = dyn_cast<ProjectQKVOp>(op); qkv && takesQ8Input(qkv.getWeight()))
        qkv.setQ8Input(true);
    });
  }
};

} // namespace
