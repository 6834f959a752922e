// quill-lower-to-linalg: applies every quill-to-linalg pattern and checks
// that no quill compute op is left.
#include "compiler/Conversion/Passes.h"
#include "compiler/Conversion/QuillToLinalg/QuillToLinalg.h"
#include "dialects/Quill/IR/QuillDialect.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::quill {
#define GEN_PASS_DEF_LOWERTOLINALG
#include "compiler/Conversion/Passes.h.inc"
} // namespace mlir::quill

using namespace mlir;
using namespace mlir::quill;

namespace {
struct LowerToLinalgPass : mlir::quill::impl::LowerToLinalgBase<LowerToLinalgPass> {
  using LowerToLinalgBase::LowerToLinalgBase;
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateLowerMatVecPatterns(patterns, prefetchWeights);
    populateLowerNormPatterns(patterns);
    populateLowerElementwisePatterns(patterns);
    populateLowerStatePatterns(patterns);
    populateLowerAttentionPatterns(patterns);
    populateLowerFlashAttentionPatterns(patterns);
    populateLowerPagedAttentionPatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
    WalkResult leftover = getOperation().walk([](Operation *op) {
      if (isa_and_nonnull<QuillDialect>(op->getDialect()) &&
          !isa<ScheduleOp, DispatchOp, WeightOp, KVCacheOp>(op)) {
        op->emitError("quill-lower-to-linalg: no lowering for this op");
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (leftover.wasInterrupted())
      signalPassFailure();
  }
};
} // namespace
