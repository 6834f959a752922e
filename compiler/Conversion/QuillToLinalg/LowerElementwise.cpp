// quill.add, quill.swiglu and quill.rope -> elementwise linalg.generic ops.
#include "compiler/Conversion/QuillToLinalg/LinalgBuilders.h"
#include "compiler/Conversion/QuillToLinalg/QuillToLinalg.h"
#include "dialects/Quill/IR/QuillDialect.h"

#include "mlir/Dialect/Math/IR/Math.h"

using namespace mlir;
using namespace mlir::quill;

namespace {

Value emptyLike(OpBuilder &b, Location loc, RankedTensorType type) {
  return tensor::EmptyOp::create(b, loc, type.getShape(), type.getElementType());
}

Value addScalars(OpBuilder &b, Location loc, Value lhs, Value rhs) {
  return arith::AddFOp::create(b, loc, lhs, rhs);
}

/// A two-operand elementwise op whose scalar function is `Combine`.
template <typename OpTy, Value (*Combine)(OpBuilder &, Location, Value, Value)>
struct LowerBinary : OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;

  LogicalResult matchAndRewrite(OpTy op, PatternRewriter &rewriter) const override {
    Value result = buildElementwise(
        rewriter, op.getLoc(), op->getOperands(), emptyLike(rewriter, op.getLoc(), op.getType()),
        [](OpBuilder &b, Location l, ValueRange args) -> Value {
          return Combine(b, l, args[0], args[1]);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// Each output element reads its pair (x[2j], x[2j+1]) and rotates it by
/// p / theta^(d / head_dim), d = 2j mod head_dim, where p is pos (one
/// vector) or pos + t (row t of [T, width]).
struct LowerRoPE : OpRewritePattern<RoPEOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(RoPEOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value input = op.getInput();
    Value pos = op.getPos();
    int64_t headDim = op.getHeadDim();
    float theta = op.getTheta().convertToFloat();
    // With live rows, only rows [0, rows) are computed: a slice of the
    // result, the rest left undefined.
    Value init = emptyLike(rewriter, loc, op.getType());
    Value live = op.getRows();
    int64_t width = op.getType().getDimSize(op.getType().getRank() - 1);
    auto liveSlice = [&](Value full) {
      return tensor::ExtractSliceOp::create(
                 rewriter, loc, full, ArrayRef<OpFoldResult>{rewriter.getIndexAttr(0), rewriter.getIndexAttr(0)},
                 ArrayRef<OpFoldResult>{live, rewriter.getIndexAttr(width)},
                 ArrayRef<OpFoldResult>{rewriter.getIndexAttr(1), rewriter.getIndexAttr(1)})
          .getResult();
    };
    Value full = init;
    if (live)
      init = liveSlice(init);
    Value result = buildElementwise(
        rewriter, loc, ValueRange{}, init,
        [&](OpBuilder &b, Location l, ValueRange) -> Value {
          unsigned rank = op.getType().getRank();
          Value i = linalg::IndexOp::create(b, l, rank - 1);
          Value position = pos;
          SmallVector<Value> row;
          if (rank == 2) {
            // Row t is at pos + t, or at pos[t] given per-row positions.
            Value t = linalg::IndexOp::create(b, l, 0);
            if (isa<RankedTensorType>(pos.getType()))
              position = arith::IndexCastOp::create(
                  b, l, b.getIndexType(), tensor::ExtractOp::create(b, l, pos, ValueRange{t}));
            else
              position = arith::AddIOp::create(b, l, pos, t);
            row.push_back(t);
          }
          Value two = arith::ConstantIndexOp::create(b, l, 2);
          Value parity = arith::RemUIOp::create(b, l, i, two);
          Value first = arith::SubIOp::create(b, l, i, parity);
          Value second = arith::AddIOp::create(b, l, first, arith::ConstantIndexOp::create(b, l, 1));
          Value d = arith::RemUIOp::create(b, l, first, arith::ConstantIndexOp::create(b, l, headDim));
          SmallVector<Value> at0(row), at1(row);
          at0.push_back(first);
          at1.push_back(second);
          Value v0 = tensor::ExtractOp::create(b, l, input, at0);
          Value v1 = tensor::ExtractOp::create(b, l, input, at1);
          return rotatePair(b, l, v0, v1, parity, d, position, headDim, theta);
        });
    if (live)
      result = tensor::InsertSliceOp::create(
          rewriter, loc, result, full,
          ArrayRef<OpFoldResult>{rewriter.getIndexAttr(0), rewriter.getIndexAttr(0)},
          ArrayRef<OpFoldResult>{live, rewriter.getIndexAttr(width)},
          ArrayRef<OpFoldResult>{rewriter.getIndexAttr(1), rewriter.getIndexAttr(1)});
    rewriter.replaceOp(op, result);
    return success();
  }
};

} // namespace

void mlir::quill::populateLowerElementwisePatterns(RewritePatternSet &patterns) {
  patterns.add<LowerBinary<AddOp, addScalars>, LowerBinary<SwiGLUOp, swigluScalar>, LowerRoPE>(
      patterns.getContext());
}
