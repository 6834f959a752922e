// quill.rmsnorm -> a sum-of-squares reduction, a scalar scale, and a scaled
// elementwise product (the order of llama2.c's rmsnorm).
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
    int64_t size = op.getType().getDimSize(0);
    auto fastMath = reductionFastMath(rewriter);

    // sum(x^2) into a 0-d tensor.
    Value init = filledTensor(rewriter, loc, {}, 0.0f);
    AffineExpr i = getAffineDimExpr(0, ctx);
    Value sumTensor = buildGeneric(
        rewriter, loc, ValueRange{op.getInput()}, init,
        {AffineMap::get(1, 0, {i}, ctx), AffineMap::get(1, 0, {}, ctx)},
        {utils::IteratorType::reduction},
        [&](OpBuilder &b, Location l, ValueRange args) -> Value {
          Value square = arith::MulFOp::create(b, l, args[0], args[0], fastMath);
          return arith::AddFOp::create(b, l, args[1], square, fastMath);
        });
    Value sum = tensor::ExtractOp::create(rewriter, loc, sumTensor, ValueRange{});

    // scale = 1 / sqrt(sum / size + eps)
    Value mean = arith::DivFOp::create(rewriter, loc, sum,
                                       f32Constant(rewriter, loc, float(size)));
    Value shifted = arith::AddFOp::create(
        rewriter, loc, mean, f32Constant(rewriter, loc, op.getEps().convertToFloat()));
    Value root = math::SqrtOp::create(rewriter, loc, shifted);
    Value scale = arith::DivFOp::create(rewriter, loc, f32Constant(rewriter, loc, 1.0f), root);

    // result = weight * (scale * x)
    Value out = tensor::EmptyOp::create(rewriter, loc, op.getType().getShape(),
                                        rewriter.getF32Type());
    Value result = buildElementwise(
        rewriter, loc, ValueRange{op.getInput(), op.getWeight()}, out,
        [&](OpBuilder &b, Location l, ValueRange args) -> Value {
          Value scaled = arith::MulFOp::create(b, l, scale, args[0]);
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
