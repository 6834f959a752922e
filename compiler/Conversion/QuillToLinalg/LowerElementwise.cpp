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
    Value result = buildElementwise(rewriter, op.getLoc(), op->getOperands(),
                                    emptyLike(rewriter, op.getLoc(), op.getType()),
                                    [](OpBuilder &b, Location l, ValueRange args) -> Value {
                                      return Combine(b, l, args[0], args[1]);
                                    });
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// Each output element reads its pair (x[2j], x[2j+1]) and rotates it by
/// p / theta^(d / head_dim), d = 2j mod head_dim, where p is pos (one
/// vector) or pos + t (row t of [T, width]); the cos and sin of each
/// (row, d) come from a table computed first, shared by the heads.
struct LowerRoPE : OpRewritePattern<RoPEOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(RoPEOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value input = op.getInput();
    Value pos = op.getPos();
    RopeFrequencies frequencies = ropeFrequencies(op);
    // Rows [begin, end) (a tile of a batch step's kernel; all rows
    // otherwise), of which those before `rows` are live: only they are
    // computed, the rest of the result is left undefined.
    Value live = op.getRows();
    unsigned resultRank = op.getType().getRank();
    int64_t width = op.getType().getDimSize(resultRank - 1);
    auto index = [&](int64_t v) { return arith::ConstantIndexOp::create(rewriter, loc, v); };
    Value begin, count, full, init;
    if (!live && !op.isTiled()) {
      init = emptyLike(rewriter, loc, op.getType());
    } else if (!live) {
      // A tile of rows, all live (a prefill's, on the GPU): written straight
      // into the kernel's output rows.
      begin = op.getTile()[0];
      Value tileRows = arith::SubIOp::create(rewriter, loc, op.getTile()[1], begin);
      init = tensor::EmptyOp::create(rewriter, loc,
                                     ArrayRef<OpFoldResult>{tileRows, rewriter.getIndexAttr(width)},
                                     rewriter.getF32Type());
    } else {
      begin = op.isTiled() ? op.getTile()[0] : index(0);
      Value end = op.isTiled() ? op.getTile()[1] : index(op.getInput().getType().getDimSize(0));
      Value tileRows = arith::SubIOp::create(rewriter, loc, end, begin);
      // A fixed-size (stack) buffer: its live rows are written, then copied
      // out as the tile's result.
      full = scratchSlice(rewriter, loc, {op.getInput().getType().getDimSize(0), width},
                          {tileRows, rewriter.getIndexAttr(width)}, std::nullopt);
      Value liveEnd = live ? arith::MinUIOp::create(rewriter, loc, end, live).getResult() : end;
      Value some = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::ugt, liveEnd, begin);
      count = arith::SelectOp::create(
          rewriter, loc, some, arith::SubIOp::create(rewriter, loc, liveEnd, begin), index(0));
      init = tensor::ExtractSliceOp::create(
          rewriter, loc, full,
          ArrayRef<OpFoldResult>{rewriter.getIndexAttr(0), rewriter.getIndexAttr(0)},
          ArrayRef<OpFoldResult>{count, rewriter.getIndexAttr(width)},
          ArrayRef<OpFoldResult>{rewriter.getIndexAttr(1), rewriter.getIndexAttr(1)});
    }
    // cos and sin of each (row, pair of a head) once, in a table every head
    // reads (12 heads: 12 times fewer sin, cos and pow than per element).
    const unsigned rank = op.getType().getRank();
    const int64_t pairs = frequencies.headDim / 2;
    auto f32 = rewriter.getF32Type();
    SmallVector<Value> tables;
    if (rank == 2 && live) {
      // A batch step's live rows (a dynamic count): fixed-size buffers.
      OpFoldResult rows = tensor::getMixedSize(rewriter, loc, init, 0);
      const int64_t maxRows = op.getInput().getType().getDimSize(0);
      for (int k = 0; k < 2; ++k)
        tables.push_back(scratchSlice(rewriter, loc, {maxRows, pairs},
                                      {rows, rewriter.getIndexAttr(pairs)}, std::nullopt));
    } else {
      // All rows, or a GPU unit's tile of them (one row once specialized).
      SmallVector<OpFoldResult> sizes;
      if (rank == 2)
        sizes.push_back(tensor::getMixedSize(rewriter, loc, init, 0));
      sizes.push_back(rewriter.getIndexAttr(pairs));
      for (int k = 0; k < 2; ++k)
        tables.push_back(tensor::EmptyOp::create(rewriter, loc, sizes, f32));
    }
    // The position of row t of the result (index values).
    auto positionOf = [&](OpBuilder &b, Location l, Value t) -> Value {
      if (begin)
        t = arith::AddIOp::create(b, l, t, begin);
      // Row t is at pos + t, or at pos[t] given per-row positions.
      if (isa<RankedTensorType>(pos.getType()))
        return arith::IndexCastOp::create(b, l, b.getIndexType(),
                                          tensor::ExtractOp::create(b, l, pos, ValueRange{t}));
      return arith::AddIOp::create(b, l, pos, t);
    };
    AffineMap identity = rewriter.getMultiDimIdentityMap(rank);
    auto table = linalg::GenericOp::create(
        rewriter, loc, TypeRange{tables[0].getType(), tables[1].getType()}, ValueRange{}, tables,
        SmallVector<AffineMap>{identity, identity},
        SmallVector<utils::IteratorType>(rank, utils::IteratorType::parallel),
        [&](OpBuilder &b, Location l, ValueRange) {
          Value j = linalg::IndexOp::create(b, l, rank - 1);
          Value d = arith::MulIOp::create(b, l, j, arith::ConstantIndexOp::create(b, l, 2));
          Value position = rank == 2 ? positionOf(b, l, linalg::IndexOp::create(b, l, 0)) : pos;
          auto [cos, sin] = ropeCosSin(b, l, d, position, frequencies);
          linalg::YieldOp::create(b, l, ValueRange{cos, sin});
        });
    Value cosTable = table.getResult(0), sinTable = table.getResult(1);
    Value result = buildElementwise(
        rewriter, loc, ValueRange{}, init, [&](OpBuilder &b, Location l, ValueRange) -> Value {
          Value i = linalg::IndexOp::create(b, l, rank - 1);
          // The input's row (the tile's rows start at `begin`), and the
          // table's (the tile's own).
          SmallVector<Value> row, tableRow;
          if (rank == 2) {
            Value t = linalg::IndexOp::create(b, l, 0);
            tableRow.push_back(t);
            row.push_back(begin ? arith::AddIOp::create(b, l, t, begin).getResult() : t);
          }
          Value two = arith::ConstantIndexOp::create(b, l, 2);
          Value parity = arith::RemUIOp::create(b, l, i, two);
          Value first = arith::SubIOp::create(b, l, i, parity);
          Value second =
              arith::AddIOp::create(b, l, first, arith::ConstantIndexOp::create(b, l, 1));
          Value d = arith::RemUIOp::create(
              b, l, first, arith::ConstantIndexOp::create(b, l, frequencies.headDim));
          SmallVector<Value> at0(row), at1(row), pair(tableRow);
          at0.push_back(first);
          at1.push_back(second);
          pair.push_back(arith::DivUIOp::create(b, l, d, two));
          Value v0 = tensor::ExtractOp::create(b, l, input, at0);
          Value v1 = tensor::ExtractOp::create(b, l, input, at1);
          return rotateWith(b, l, v0, v1, parity, tensor::ExtractOp::create(b, l, cosTable, pair),
                            tensor::ExtractOp::create(b, l, sinTable, pair));
        });
    if (full)
      result = tensor::InsertSliceOp::create(
          rewriter, loc, result, full,
          ArrayRef<OpFoldResult>{rewriter.getIndexAttr(0), rewriter.getIndexAttr(0)},
          ArrayRef<OpFoldResult>{count, rewriter.getIndexAttr(width)},
          ArrayRef<OpFoldResult>{rewriter.getIndexAttr(1), rewriter.getIndexAttr(1)});
    result = castTo(rewriter, loc, result, op.getType());
    rewriter.replaceOp(op, result);
    return success();
  }
};

} // namespace

void mlir::quill::populateLowerElementwisePatterns(RewritePatternSet &patterns) {
  patterns.add<LowerBinary<AddOp, addScalars>, LowerBinary<SwiGLUOp, swigluScalar>, LowerRoPE>(
      patterns.getContext());
}
