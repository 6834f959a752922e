// quill.linear / quill.logits -> a matrix-vector linalg.generic over the
// (possibly tiled) rows of the weight.
#include "compiler/Conversion/QuillToLinalg/LinalgBuilders.h"
#include "compiler/Conversion/QuillToLinalg/QuillToLinalg.h"
#include "dialects/Quill/IR/QuillDialect.h"

using namespace mlir;
using namespace mlir::quill;

namespace {

template <typename OpTy> struct LowerMatVec : OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;

  LogicalResult matchAndRewrite(OpTy op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value weight = op.getWeight();
    auto weightType = cast<RankedTensorType>(weight.getType());
    int64_t cols = weightType.getDimSize(1);
    OpFoldResult rows = rewriter.getIndexAttr(weightType.getDimSize(0));
    if (op.isTiled()) {
      // Only rows [begin, end) of the output: slice the weight's rows.
      Value begin = op.getTile()[0], end = op.getTile()[1];
      rows = arith::SubIOp::create(rewriter, loc, end, begin).getResult();
      weight = tensor::ExtractSliceOp::create(
          rewriter, loc, weight,
          ArrayRef<OpFoldResult>{begin, rewriter.getIndexAttr(0)},
          ArrayRef<OpFoldResult>{rows, rewriter.getIndexAttr(cols)},
          ArrayRef<OpFoldResult>{rewriter.getIndexAttr(1), rewriter.getIndexAttr(1)});
    }
    Value init = filledTensor(rewriter, loc, {rows}, 0.0f);
    MLIRContext *ctx = rewriter.getContext();
    AffineExpr r, k;
    bindDims(ctx, r, k);
    SmallVector<AffineMap> maps = {AffineMap::get(2, 0, {r, k}, ctx),
                                   AffineMap::get(2, 0, {k}, ctx),
                                   AffineMap::get(2, 0, {r}, ctx)};
    auto fastMath = reductionFastMath(rewriter);
    Value result = buildGeneric(
        rewriter, loc, ValueRange{weight, op.getInput()}, init, maps,
        {utils::IteratorType::parallel, utils::IteratorType::reduction},
        [&](OpBuilder &b, Location l, ValueRange args) -> Value {
          Value product = arith::MulFOp::create(b, l, args[0], args[1], fastMath);
          return arith::AddFOp::create(b, l, args[2], product, fastMath);
        });
    rewriter.replaceOp(op, castTo(rewriter, loc, result, op.getType()));
    return success();
  }
};

} // namespace

void mlir::quill::populateLowerMatVecPatterns(RewritePatternSet &patterns) {
  patterns.add<LowerMatVec<LinearOp>, LowerMatVec<LogitsOp>>(patterns.getContext());
}
