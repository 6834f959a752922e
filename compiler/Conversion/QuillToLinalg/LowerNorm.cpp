// quill.rmsnorm -> a sum-of-squares reduction per row, a per-row scale, and a
// scaled elementwise product (the order of llama2.c's rmsnorm). Works on one
// vector or on T rows ([T, width]) alike.
#include "compiler/Conversion/QuillToLinalg/LinalgBuilders.h"
#include "compiler/Conversion/QuillToLinalg/QuillToLinalg.h"
#include "dialects/Quill/IR/QuillDialect.h"

#include "mlir/Dialect/Math/IR/Math.h"

using namespace mlir;
using namespace mlir::quill;

namespace {

struct LowerRMSNorm : OpRewritePattern<RMSNormOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(RMSNormOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    auto type = op.getType();
    unsigned rank = type.getRank();
    int64_t width = type.getDimSize(rank - 1);
    auto fastMath = reductionFastMath(rewriter);
    // Leading dims (none for one vector, [T] for rows), and the maps that
    // drop the width.
    SmallVector<int64_t> rowShape(type.getShape().drop_back());
    SmallVector<AffineExpr> rowDims;
    for (unsigned i = 0; i + 1 < rank; ++i)
      rowDims.push_back(getAffineDimExpr(i, ctx));
    AffineMap identity = rewriter.getMultiDimIdentityMap(rank);
    AffineMap toRow = AffineMap::get(rank, 0, rowDims, ctx);
    AffineMap toWidth = AffineMap::get(rank, 0, {getAffineDimExpr(rank - 1, ctx)}, ctx);
    SmallVector<utils::IteratorType> reduceLast(rank, utils::IteratorType::parallel);
    reduceLast.back() = utils::IteratorType::reduction;

    // sum(x^2) per row.
    SmallVector<OpFoldResult> rowSizes;
    for (int64_t d : rowShape)
      rowSizes.push_back(rewriter.getIndexAttr(d));
    Value sums = buildGeneric(
        rewriter, loc, ValueRange{op.getInput()}, filledTensor(rewriter, loc, rowSizes, 0.0f),
        {identity, toRow}, reduceLast, [&](OpBuilder &b, Location l, ValueRange args) -> Value {
          Value square = arith::MulFOp::create(b, l, args[0], args[0], fastMath);
          return arith::AddFOp::create(b, l, args[1], square, fastMath);
        });
    // scale = 1 / sqrt(sum / width + eps), per row.
    float eps = op.getEps().convertToFloat();
    Value scales = buildElementwise(
        rewriter, loc, ValueRange{sums},
        tensor::EmptyOp::create(rewriter, loc, rowShape, rewriter.getF32Type()),
        [&](OpBuilder &b, Location l, ValueRange args) -> Value {
          Value mean = arith::DivFOp::create(b, l, args[0], f32Constant(b, l, float(width)));
          Value shifted = arith::AddFOp::create(b, l, mean, f32Constant(b, l, eps));
          Value root = math::SqrtOp::create(b, l, shifted);
          return arith::DivFOp::create(b, l, f32Constant(b, l, 1.0f), root);
        });
    // result = weight * (scale * x)
    Value out = tensor::EmptyOp::create(rewriter, loc, type.getShape(), rewriter.getF32Type());
    SmallVector<utils::IteratorType> parallel(rank, utils::IteratorType::parallel);
    Value result = buildGeneric(
        rewriter, loc, ValueRange{op.getInput(), op.getWeight(), scales}, out,
        {identity, toWidth, toRow, identity}, parallel,
        [&](OpBuilder &b, Location l, ValueRange args) -> Value {
          Value scaled = arith::MulFOp::create(b, l, args[2], args[0]);
          return arith::MulFOp::create(b, l, args[1], scaled);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

} // namespace

void mlir::quill::populateLowerNormPatterns(RewritePatternSet &patterns) {
  patterns.add<LowerRMSNorm>(patterns.getContext());
}
