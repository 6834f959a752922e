// quill-lower-to-linalg: the target-neutral lowering. Applies every
// quill-to-linalg pattern with the generic KernelBuilder and reports any
// quill compute op left over.
#include "compiler/Conversion/Passes.h"
#include "compiler/Conversion/QuillToLinalg/QuillToLinalg.h"
#include "compiler/Conversion/QuillToLinalg/WeightDecoding.h"
#include "dialects/Quill/IR/QuillDialect.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::quill {
#define GEN_PASS_DEF_LOWERTOLINALG
#include "compiler/Conversion/Passes.h.inc"
} // namespace mlir::quill

using namespace mlir;
using namespace mlir::quill;

bool mlir::quill::isLoweredQuillOp(Operation *op) {
  return isa<ScheduleOp, DispatchOp, WeightOp, KVCacheOp>(op);
}

void mlir::quill::populateQuillToLinalgPatterns(RewritePatternSet &patterns,
                                                std::shared_ptr<const KernelBuilder> builder) {
  populateLowerMatVecPatterns(patterns, builder);
  populateLowerNormPatterns(patterns, builder);
  populateLowerElementwisePatterns(patterns);
  populateLowerStatePatterns(patterns);
  populateLowerAttentionPatterns(patterns, builder);
  populateLowerFlashAttentionPatterns(patterns, builder);
  populateLowerPagedAttentionPatterns(patterns, builder);
}

namespace {
struct LowerToLinalgPass : mlir::quill::impl::LowerToLinalgBase<LowerToLinalgPass> {
  void runOnOperation() override {
    if (failed(verifyBlockWeightsHaveBytes(getOperation())))
      return signalPassFailure();
    RewritePatternSet patterns(&getContext());
    populateQuillToLinalgPatterns(patterns, genericKernelBuilder());
    // The greedy driver, not the dialect conversion one: each pattern
    // rewrites one op into ops of other dialects with no type conversion,
    // so there is nothing for conversion's type mapping and rollback to do;
    // the walk below reports every op left over, as a partial conversion
    // with quill illegal would.
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
    WalkResult leftover = getOperation().walk([](Operation *op) {
      if (isa_and_nonnull<QuillDialect>(op->getDialect()) && !isLoweredQuillOp(op)) {
        op->emitError("quill-lower-to-linalg: no lowering for '") << op->getName() << "'";
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (leftover.wasInterrupted())
      signalPassFailure();
  }
};
} // namespace
