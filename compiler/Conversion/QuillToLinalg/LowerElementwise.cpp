// quill.add, quill.swiglu and quill.rope -> elementwise linalg.generic ops.
#include "compiler/Conversion/QuillToLinalg/LinalgBuilders.h"
#include "compiler/Conversion/QuillToLinalg/QuillToLinalg.h"
#include "dialects/Quill/IR/QuillDialect.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <algorithm>
#include <functional>
#include <tuple>

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

/// A batch step's table of cos and sin, [live rows, pairs], row by row with
/// each row's pairs as vectors of 8 (the last shorter): every row is then
/// the same code, whatever the live row count. A table built as one
/// [rows, pairs] generic let LLVM unroll a head's few pairs (4 for
/// stories260K) and vectorize across rows, 8 at a time: rows in such a group
/// took libmvec's cosf, sinf and powf, the rest libm's, whose last bits
/// differ, and a token's logits changed with the rows beside it.
std::pair<Value, Value>
liveRowsTable(OpBuilder &b, Location loc, ArrayRef<Value> tables,
              const std::function<Value(OpBuilder &, Location, Value)> &positionOf,
              const RopeFrequencies &frequencies) {
  const int64_t pairs = frequencies.headDim / 2;
  auto f32 = b.getF32Type();
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value rows = tensor::DimOp::create(b, loc, tables[0], 0);
  auto loop = scf::ForOp::create(
      b, loc, zero, rows, one, ValueRange{tables[0], tables[1]},
      [&](OpBuilder &nb, Location l, Value t, ValueRange carried) {
        Value position = arith::IndexCastOp::create(nb, l, nb.getI64Type(), positionOf(nb, l, t));
        Value positionF = arith::SIToFPOp::create(nb, l, f32, position);
        Value cosOut = carried[0], sinOut = carried[1];
        for (int64_t start = 0; start < pairs; start += 8) {
          const int64_t n = std::min<int64_t>(8, pairs - start);
          auto type = VectorType::get({n}, f32);
          Value first = arith::ConstantIndexOp::create(nb, l, start);
          Value freq;
          if (frequencies.table) {
            Value padding = arith::ConstantOp::create(nb, l, nb.getF32FloatAttr(0.0f));
            freq = vector::TransferReadOp::create(nb, l, type, frequencies.table, ValueRange{first},
                                                  padding, ArrayRef<bool>{true});
          } else {
            // llama2.c: 1 / theta^(d / head_dim), d = 2 * pair.
            SmallVector<float> ratios;
            for (int64_t i = 0; i < n; ++i)
              ratios.push_back(float(2 * (start + i)) / float(frequencies.headDim));
            Value ratio = arith::ConstantOp::create(
                nb, l, DenseElementsAttr::get(type, ArrayRef<float>(ratios)));
            Value theta =
                arith::ConstantOp::create(nb, l, DenseElementsAttr::get(type, frequencies.theta));
            Value ones = arith::ConstantOp::create(nb, l, DenseElementsAttr::get(type, 1.0f));
            freq = arith::DivFOp::create(nb, l, ones, math::PowFOp::create(nb, l, theta, ratio));
          }
          Value angle = arith::MulFOp::create(
              nb, l, vector::BroadcastOp::create(nb, l, type, positionF), freq);
          Value cos = math::CosOp::create(nb, l, angle);
          Value sin = math::SinOp::create(nb, l, angle);
          if (frequencies.attentionFactor != 1.0f) {
            Value factor = arith::ConstantOp::create(
                nb, l, DenseElementsAttr::get(type, frequencies.attentionFactor));
            cos = arith::MulFOp::create(nb, l, cos, factor);
            sin = arith::MulFOp::create(nb, l, sin, factor);
          }
          cosOut = vector::TransferWriteOp::create(nb, l, cos, cosOut, ValueRange{t, first},
                                                   ArrayRef<bool>{true})
                       .getResult();
          sinOut = vector::TransferWriteOp::create(nb, l, sin, sinOut, ValueRange{t, first},
                                                   ArrayRef<bool>{true})
                       .getResult();
        }
        scf::YieldOp::create(nb, l, ValueRange{cosOut, sinOut});
      });
  return {loop.getResult(0), loop.getResult(1)};
}

/// The CPU's rotation of [rows,] width values by the table's rows: each
/// head in vectors of n values (n / 2 pairs, n the largest power of two up
/// to 16 dividing head_dim), the pairs' cos and sin read once and each
/// doubled, the partners swapped by a shuffle. The products, difference and
/// sum are rotateWith's, so the values are the same bits; the generic form
/// reads each element's partner and table entry through gathers, about 20
/// times slower (6% of a prefill).
Value rotateInVectors(OpBuilder &b, Location loc, Value input, Value init, Value cosTable,
                      Value sinTable, Value begin, int64_t headDim) {
  auto resultType = cast<RankedTensorType>(init.getType());
  const bool hasRows = resultType.getRank() == 2;
  const int64_t width = resultType.getDimSize(resultType.getRank() - 1);
  int64_t n = 16;
  while (headDim % n)
    n /= 2;
  auto f32 = b.getF32Type();
  auto type = VectorType::get({n}, f32);
  auto halfType = VectorType::get({n / 2}, f32);
  SmallVector<int64_t> doubled, swapped, blend;
  for (int64_t i = 0; i < n; ++i) {
    doubled.push_back(i / 2);
    swapped.push_back(i ^ 1);
    // Even lanes from the difference, odd ones from the sum.
    blend.push_back(i % 2 ? n + i : i);
  }
  auto index = [&](OpBuilder &nb, Location l, int64_t v) -> Value {
    return arith::ConstantIndexOp::create(nb, l, v);
  };
  Value padding = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0f));
  // Row `t` of the result (none for a single vector) and its heads.
  auto rotateRow = [&](OpBuilder &rb, Location rl, ArrayRef<Value> tableRow,
                       ArrayRef<Value> inputRow, Value out) -> Value {
    auto heads = scf::ForOp::create(
        rb, rl, index(rb, rl, 0), index(rb, rl, width / headDim), index(rb, rl, 1), ValueRange{out},
        [&](OpBuilder &nb, Location l, Value head, ValueRange carried) {
          Value headStart = arith::MulIOp::create(nb, l, head, index(nb, l, headDim));
          Value result = carried[0];
          for (int64_t start = 0; start < headDim; start += n) {
            auto at = [&](ArrayRef<Value> row, Value column) {
              SmallVector<Value> indices(row);
              indices.push_back(column);
              return indices;
            };
            Value column = arith::AddIOp::create(nb, l, headStart, index(nb, l, start));
            Value x = vector::TransferReadOp::create(nb, l, type, input, at(inputRow, column),
                                                     padding, ArrayRef<bool>{true});
            auto tableHalf = [&](Value table) -> Value {
              Value half = vector::TransferReadOp::create(nb, l, halfType, table,
                                                          at(tableRow, index(nb, l, start / 2)),
                                                          padding, ArrayRef<bool>{true});
              return vector::ShuffleOp::create(nb, l, half, half, doubled);
            };
            Value cos = tableHalf(cosTable), sin = tableHalf(sinTable);
            Value partner = vector::ShuffleOp::create(nb, l, x, x, swapped);
            Value own = arith::MulFOp::create(nb, l, x, cos);
            Value cross = arith::MulFOp::create(nb, l, partner, sin);
            Value difference = arith::SubFOp::create(nb, l, own, cross);
            Value sum = arith::AddFOp::create(nb, l, own, cross);
            Value rotated = vector::ShuffleOp::create(nb, l, difference, sum, blend);
            result = vector::TransferWriteOp::create(nb, l, rotated, result, at(tableRow, column),
                                                     ArrayRef<bool>{true})
                         .getResult();
          }
          scf::YieldOp::create(nb, l, result);
        });
    return heads.getResult(0);
  };
  if (!hasRows)
    return rotateRow(b, loc, {}, {}, init);
  Value rows = tensor::DimOp::create(b, loc, init, 0);
  auto loop = scf::ForOp::create(
      b, loc, index(b, loc, 0), rows, index(b, loc, 1), ValueRange{init},
      [&](OpBuilder &nb, Location l, Value t, ValueRange carried) {
        Value inputRow = begin ? arith::AddIOp::create(nb, l, t, begin).getResult() : t;
        scf::YieldOp::create(nb, l, rotateRow(nb, l, {t}, {inputRow}, carried[0]));
      });
  return loop.getResult(0);
}

/// Each output element reads its pair (x[2j], x[2j+1]) and rotates it by
/// p / theta^(d / head_dim), d = 2j mod head_dim, where p is pos (one
/// vector) or pos + t (row t of [T, width]); the cos and sin of each
/// (row, d) come from a table computed first, shared by the heads.
struct LowerRoPE : OpRewritePattern<RoPEOp> {
  LowerRoPE(MLIRContext *ctx, bool vectorForm) : OpRewritePattern(ctx), vectorForm(vectorForm) {}
  /// The CPU's form: a batch step's table built row by row in vectors
  /// (liveRowsTable), the rotation in vectors (rotateInVectors). The
  /// neutral one stays generics (no vector ops).
  bool vectorForm;

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
    Value cosTable, sinTable;
    if (rank == 2 && live && vectorForm) {
      std::tie(cosTable, sinTable) = liveRowsTable(rewriter, loc, tables, positionOf, frequencies);
    } else {
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
      cosTable = table.getResult(0), sinTable = table.getResult(1);
    }
    Value result =
        vectorForm
            ? rotateInVectors(rewriter, loc, input, init, cosTable, sinTable, begin,
                              frequencies.headDim)
            : buildElementwise(
                  rewriter, loc, ValueRange{}, init,
                  [&](OpBuilder &b, Location l, ValueRange) -> Value {
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
                    return rotateWith(b, l, v0, v1, parity,
                                      tensor::ExtractOp::create(b, l, cosTable, pair),
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
  patterns.add<LowerBinary<AddOp, addScalars>, LowerBinary<SwiGLUOp, swigluScalar>>(
      patterns.getContext());
  populateLowerRoPEPatterns(patterns, /*vectorForm=*/false);
}

void mlir::quill::populateLowerRoPEPatterns(RewritePatternSet &patterns, bool vectorForm) {
  patterns.add<LowerRoPE>(patterns.getContext(), vectorForm);
}
