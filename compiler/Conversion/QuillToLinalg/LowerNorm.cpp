// quill.rmsnorm -> a sum-of-squares reduction per row, a per-row scale, and a
// scaled elementwise product (the order of llama2.c's rmsnorm). Works on one
// vector or on T rows ([T, width]) alike, and per group (head) of elements.
#include "compiler/Conversion/QuillToLinalg/KernelBuilder.h"
#include "compiler/Conversion/QuillToLinalg/LinalgBuilders.h"
#include "compiler/Conversion/QuillToLinalg/QuillToLinalg.h"
#include "dialects/Quill/IR/QuillDialect.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::quill;

namespace {

struct LowerRMSNorm : OpRewritePattern<RMSNormOp> {
  LowerRMSNorm(MLIRContext *ctx, std::shared_ptr<const KernelBuilder> builder)
      : OpRewritePattern(ctx), builder(std::move(builder)) {}
  /// A tile's RMS scales (on the GPU, its sum of squares shared by a warp).
  std::shared_ptr<const KernelBuilder> builder;

  /// A tile (the GPU's units): elements [b, e) of one vector, each scaled
  /// by the whole vector's root mean square, or rows [b, e) of [T, width].
  LogicalResult lowerTile(RMSNormOp op, PatternRewriter &b) const {
    Location loc = op.getLoc();
    float eps = op.getEps().convertToFloat();
    Value first = op.getTile()[0];
    Value count = arith::SubIOp::create(b, loc, op.getTile()[1], first);
    const bool rows = op.getInput().getType().getRank() == 2;
    Value input = op.getInput();
    if (rows) {
      // Row by row, so that every temporary has a static shape (a tile's
      // row count is known only at run time).
      int64_t width = op.getInput().getType().getDimSize(1);
      auto rowType = RankedTensorType::get({1, width}, b.getF32Type());
      SmallVector<OpFoldResult> ones = {b.getIndexAttr(1), b.getIndexAttr(1)};
      SmallVector<OpFoldResult> rowSizes = {b.getIndexAttr(1), b.getIndexAttr(width)};
      Value out = tensor::EmptyOp::create(
          b, loc, ArrayRef<OpFoldResult>{count, b.getIndexAttr(width)}, b.getF32Type());
      Value zero = arith::ConstantIndexOp::create(b, loc, 0);
      Value one = arith::ConstantIndexOp::create(b, loc, 1);
      auto loop = scf::ForOp::create(
          b, loc, zero, count, one, ValueRange{out},
          [&](OpBuilder &nb, Location l, Value i, ValueRange carried) {
            Value at = arith::AddIOp::create(nb, l, first, i);
            Value row = tensor::ExtractSliceOp::create(
                nb, l, rowType, input, ArrayRef<OpFoldResult>{at, nb.getIndexAttr(0)}, rowSizes,
                ones);
            Value scale = builder->rmsScales(nb, l, row, eps);
            Value normed = buildElementwise(
                nb, l, ValueRange{},
                tensor::EmptyOp::create(nb, l, rowType.getShape(), nb.getF32Type()),
                [&](OpBuilder &eb, Location el, ValueRange) -> Value {
                  Value d = linalg::IndexOp::create(eb, el, 1);
                  Value zeroIndex = arith::ConstantIndexOp::create(eb, el, 0);
                  Value x = tensor::ExtractOp::create(eb, el, row, ValueRange{zeroIndex, d});
                  Value w = tensor::ExtractOp::create(eb, el, op.getWeight(), ValueRange{d});
                  Value s = tensor::ExtractOp::create(eb, el, scale, ValueRange{zeroIndex});
                  return arith::MulFOp::create(eb, el, w, arith::MulFOp::create(eb, el, s, x));
                });
            Value next = tensor::InsertSliceOp::create(
                nb, l, normed, carried[0], ArrayRef<OpFoldResult>{i, nb.getIndexAttr(0)}, rowSizes,
                ones);
            scf::YieldOp::create(nb, l, next);
          });
      builder->noteLowered(op);
      b.replaceOp(op, castTo(b, loc, loop.getResult(0), op.getType()));
      return success();
    }
    // One scale (0-d) for the vector's elements.
    Value scales = builder->rmsScales(b, loc, input, eps);
    Value out = tensor::EmptyOp::create(b, loc, ArrayRef<OpFoldResult>{count}, b.getF32Type());
    Value result = buildElementwise(
        b, loc, ValueRange{}, out, [&](OpBuilder &nb, Location l, ValueRange) -> Value {
          Value at = arith::AddIOp::create(nb, l, linalg::IndexOp::create(nb, l, 0), first);
          Value x = tensor::ExtractOp::create(nb, l, input, ValueRange{at});
          Value w = tensor::ExtractOp::create(nb, l, op.getWeight(), ValueRange{at});
          Value s = tensor::ExtractOp::create(nb, l, scales, ValueRange{});
          return arith::MulFOp::create(nb, l, w, arith::MulFOp::create(nb, l, s, x));
        });
    builder->noteLowered(op);
    b.replaceOp(op, castTo(b, loc, result, op.getType()));
    return success();
  }

  LogicalResult matchAndRewrite(RMSNormOp op, PatternRewriter &rewriter) const override {
    if (op.isTiled())
      return lowerTile(op, rewriter);
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    auto type = op.getType();
    Value input = op.getInput();
    // A grouped norm (per head) is the plain one over [..., n / g, g].
    SmallVector<ReassociationIndices> groups;
    if (std::optional<int64_t> group = op.getGroup()) {
      SmallVector<int64_t> shape(type.getShape().drop_back());
      shape.append({type.getShape().back() / *group, *group});
      for (unsigned i = 0; i + 1 < type.getRank(); ++i)
        groups.push_back({int64_t(i)});
      groups.push_back({int64_t(type.getRank()) - 1, int64_t(type.getRank())});
      type = RankedTensorType::get(shape, type.getElementType());
      input = tensor::ExpandShapeOp::create(rewriter, loc, type, input, groups);
    }
    unsigned rank = type.getRank();
    // Leading dims (none for one vector, [T] for rows), and the maps that
    // drop the width.
    SmallVector<int64_t> rowShape(type.getShape().drop_back());
    SmallVector<AffineExpr> rowDims;
    for (unsigned i = 0; i + 1 < rank; ++i)
      rowDims.push_back(getAffineDimExpr(i, ctx));
    AffineMap identity = rewriter.getMultiDimIdentityMap(rank);
    AffineMap toRow = AffineMap::get(rank, 0, rowDims, ctx);
    AffineMap toWidth = AffineMap::get(rank, 0, {getAffineDimExpr(rank - 1, ctx)}, ctx);

    Value scales = buildRmsScales(rewriter, loc, input, op.getEps().convertToFloat());
    // result = weight * (scale * x)
    Value out = tensor::EmptyOp::create(rewriter, loc, type.getShape(), rewriter.getF32Type());
    SmallVector<utils::IteratorType> parallel(rank, utils::IteratorType::parallel);
    Value result = buildGeneric(rewriter, loc, ValueRange{input, op.getWeight(), scales}, out,
                                {identity, toWidth, toRow, identity}, parallel,
                                [&](OpBuilder &b, Location l, ValueRange args) -> Value {
                                  Value scaled = arith::MulFOp::create(b, l, args[2], args[0]);
                                  return arith::MulFOp::create(b, l, args[1], scaled);
                                });
    if (!groups.empty())
      result = tensor::CollapseShapeOp::create(rewriter, loc, op.getType(), result, groups);
    rewriter.replaceOp(op, result);
    return success();
  }
};

} // namespace

void mlir::quill::populateLowerNormPatterns(RewritePatternSet &patterns,
                                            std::shared_ptr<const KernelBuilder> builder) {
  patterns.add<LowerRMSNorm>(patterns.getContext(), std::move(builder));
}
