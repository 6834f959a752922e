// quill-cpu-lower-kernels: products and attention through the CPU's
// KernelBuilder (register-tiled microkernels), before the neutral lowering
// takes the rest.
#include "compiler/Conversion/QuillToLinalg/QuillToLinalg.h"
#include "compiler/Conversion/QuillToLinalg/WeightDecoding.h"
#include "compiler/Target/CPU/CpuKernelBuilder.h"
#include "compiler/Target/CPU/Passes.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::quill {
#define GEN_PASS_DEF_CPULOWERKERNELS
#include "compiler/Target/CPU/Passes.h.inc"
} // namespace mlir::quill

using namespace mlir;
using namespace mlir::quill;

namespace {
struct CpuLowerKernelsPass : mlir::quill::impl::CpuLowerKernelsBase<CpuLowerKernelsPass> {
  using Base::Base;
  void runOnOperation() override {
    if (vectorWidth < 1 || vectorWidth > 64 || (vectorWidth & (vectorWidth - 1)) != 0) {
      getOperation().emitError("quill-cpu-lower-kernels: vector-width must be a power of two "
                               "from 1 to 64, not ")
          << static_cast<int64_t>(vectorWidth);
      return signalPassFailure();
    }
    if (rowGroupPrefetchBytes < -1) {
      getOperation().emitError("quill-cpu-lower-kernels: weight-prefetch-distance must be -1 (per "
                               "type) or a byte count, not ")
          << static_cast<int64_t>(rowGroupPrefetchBytes);
      return signalPassFailure();
    }
    if (failed(verifyBlockWeightsHaveBytes(getOperation())))
      return signalPassFailure();
    auto builder = std::make_shared<const CpuKernelBuilder>(CpuKernelOptions{
        vectorWidth, prefetchWeights, int8Dot, int8Vnni ? Int8DotForm::Vnni : Int8DotForm::Avx2,
        int8Dot512, int8MatMul, bf16Dot, attentionRowBlocks, rowGroupPrefetchBytes});
    RewritePatternSet patterns(&getContext());
    populateLowerMatVecPatterns(patterns, builder);
    populateLowerAttentionPatterns(patterns, builder);
    populateLowerFlashAttentionPatterns(patterns, builder);
    populateLowerPagedAttentionPatterns(patterns, builder);
    populateLowerRoPEPatterns(patterns, /*vectorForm=*/true);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
