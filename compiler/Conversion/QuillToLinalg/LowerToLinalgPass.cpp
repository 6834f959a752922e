// quill-lower-to-linalg: applies every quill-to-linalg pattern and checks
// that no quill compute op is left.
#include "compiler/Conversion/Passes.h"
#include "compiler/Conversion/QuillToLinalg/QuillToLinalg.h"
#include "dialects/Quill/IR/QuillDialect.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/StringSwitch.h"

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
    std::optional<LaneMode> lanes = llvm::StringSwitch<std::optional<LaneMode>>(laneReductions)
                                        .Case("none", LaneMode::None)
                                        .Case("gpu", LaneMode::Gpu)
                                        .Case("emulate", LaneMode::Emulate)
                                        .Default(std::nullopt);
    if (!lanes) {
      getOperation().emitError("quill-lower-to-linalg: lane-reductions must be none, gpu or "
                               "emulate, not '")
          << laneReductions << "'";
      return signalPassFailure();
    }
    RewritePatternSet patterns(&getContext());
    populateLowerMatVecPatterns(patterns, prefetchWeights, *lanes);
    populateLowerNormPatterns(patterns, *lanes);
    populateLowerElementwisePatterns(patterns);
    populateLowerStatePatterns(patterns);
    populateLowerAttentionPatterns(patterns, *lanes);
    populateLowerFlashAttentionPatterns(patterns, *lanes);
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
