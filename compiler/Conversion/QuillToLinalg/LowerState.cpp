// quill.embedding and quill.kv_write -> tensor slices of the table and cache.
#include "compiler/Conversion/QuillToLinalg/LinalgBuilders.h"
#include "compiler/Conversion/QuillToLinalg/QuillToLinalg.h"
#include "dialects/Quill/IR/QuillDialect.h"

using namespace mlir;
using namespace mlir::quill;

namespace {

struct LowerEmbedding : OpRewritePattern<EmbeddingOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(EmbeddingOp op, PatternRewriter &rewriter) const override {
    int64_t width = op.getType().getDimSize(0);
    // A rank-reducing slice: row `token` of the table.
    rewriter.replaceOpWithNewOp<tensor::ExtractSliceOp>(
        op, op.getType(), op.getTable(),
        ArrayRef<OpFoldResult>{op.getToken(), rewriter.getIndexAttr(0)},
        ArrayRef<OpFoldResult>{rewriter.getIndexAttr(1), rewriter.getIndexAttr(width)},
        ArrayRef<OpFoldResult>{rewriter.getIndexAttr(1), rewriter.getIndexAttr(1)});
    return success();
  }
};

struct LowerKVWrite : OpRewritePattern<KVWriteOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(KVWriteOp op, PatternRewriter &rewriter) const override {
    int64_t width = op.getRow().getType().getDimSize(0);
    rewriter.replaceOpWithNewOp<tensor::InsertSliceOp>(
        op, op.getRow(), op.getCache(),
        ArrayRef<OpFoldResult>{op.getPos(), rewriter.getIndexAttr(0)},
        ArrayRef<OpFoldResult>{rewriter.getIndexAttr(1), rewriter.getIndexAttr(width)},
        ArrayRef<OpFoldResult>{rewriter.getIndexAttr(1), rewriter.getIndexAttr(1)});
    return success();
  }
};

} // namespace

void mlir::quill::populateLowerStatePatterns(RewritePatternSet &patterns) {
  patterns.add<LowerEmbedding, LowerKVWrite>(patterns.getContext());
}
