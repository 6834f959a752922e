// quill-specialize-gpu-units: on the GPU a kernel call is one unit of work,
// so its temporaries shrink from the whole range to one unit's.
#include "dialects/Quill/Transforms/Passes.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::quill {
#define GEN_PASS_DEF_SPECIALIZEGPUUNITS
#include "dialects/Quill/Transforms/Passes.h.inc"
} // namespace mlir::quill

using namespace mlir;

namespace {
/// extract_slice(alloc_tensor)[0..][static sizes] -> a smaller alloc_tensor.
struct ShrinkScratch : OpRewritePattern<tensor::ExtractSliceOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tensor::ExtractSliceOp slice,
                                PatternRewriter &rewriter) const override {
    auto alloc = slice.getSource().getDefiningOp<bufferization::AllocTensorOp>();
    if (!alloc || !alloc->hasOneUse() || alloc.getCopy() || !alloc.getDynamicSizes().empty())
      return failure();
    RankedTensorType result = slice.getType();
    if (result.getRank() != slice.getSourceType().getRank() || !result.hasStaticShape() ||
        result == slice.getSourceType())
      return failure();
    auto isConstant = [](OpFoldResult v, int64_t c) {
      std::optional<int64_t> value = getConstantIntValue(v);
      return value && *value == c;
    };
    if (!llvm::all_of(slice.getMixedOffsets(), [&](OpFoldResult o) { return isConstant(o, 0); }) ||
        !llvm::all_of(slice.getMixedStrides(), [&](OpFoldResult s) { return isConstant(s, 1); }))
      return failure();
    rewriter.replaceOpWithNewOp<bufferization::AllocTensorOp>(slice, result, ValueRange{});
    rewriter.eraseOp(alloc); // An allocation is not erased as dead by itself.
    return success();
  }
};

struct SpecializeGpuUnitsPass
    : mlir::quill::impl::SpecializeGpuUnitsBase<SpecializeGpuUnitsPass> {
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    // Every kernel ends with (token, pos, begin, end): end becomes begin + 1.
    for (auto kernel : getOperation().getOps<func::FuncOp>()) {
      if (!kernel->hasAttr("quill.kernel") || kernel.isExternal() ||
          kernel.getNumArguments() < 4)
        continue;
      Block &entry = kernel.getBody().front();
      BlockArgument begin = entry.getArgument(entry.getNumArguments() - 2);
      BlockArgument end = entry.getArgument(entry.getNumArguments() - 1);
      OpBuilder b = OpBuilder::atBlockBegin(&entry);
      Value one = arith::ConstantIndexOp::create(b, kernel.getLoc(), 1);
      Value next = arith::AddIOp::create(b, kernel.getLoc(), begin, one);
      end.replaceAllUsesWith(next);
    }
    // Fold the sizes that depended on end - begin, then shrink: the
    // canonicalizer's patterns with ShrinkScratch among them.
    RewritePatternSet patterns(ctx);
    for (Dialect *dialect : ctx->getLoadedDialects())
      dialect->getCanonicalizationPatterns(patterns);
    for (RegisteredOperationName op : ctx->getRegisteredOperations())
      op.getCanonicalizationPatterns(patterns, ctx);
    patterns.add<ShrinkScratch>(ctx);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};
} // namespace
