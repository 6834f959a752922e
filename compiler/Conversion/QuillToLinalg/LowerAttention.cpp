// quill.attention -> scores, softmax and weighted sum as linalg.generic ops
// over [kv head, query head in group, position], for kv heads [begin, end).
#include "compiler/Conversion/QuillToLinalg/CacheAccess.h"
#include "compiler/Conversion/QuillToLinalg/KernelBuilder.h"
#include "compiler/Conversion/QuillToLinalg/LinalgBuilders.h"
#include "compiler/Conversion/QuillToLinalg/QuillToLinalg.h"
#include "dialects/Quill/IR/QuillDialect.h"

#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::quill;

namespace {

struct LowerAttention : OpRewritePattern<AttentionOp> {
  LowerAttention(MLIRContext *ctx, std::shared_ptr<const KernelBuilder> builder)
      : OpRewritePattern(ctx), builder(std::move(builder)) {}
  std::shared_ptr<const KernelBuilder> builder; ///< Scores and weighted sums.

  LogicalResult matchAndRewrite(AttentionOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    PatternRewriter &b = rewriter;
    // Kv heads [begin, end).
    OpFoldResult begin = b.getIndexAttr(0), units = b.getIndexAttr(op.getNumKvHeads());
    if (op.isTiled()) {
      begin = op.getTile()[0];
      units = arith::SubIOp::create(b, loc, op.getTile()[1], op.getTile()[0]).getResult();
    }
    auto queryType = op.getQuery().getType();
    if (queryType.getRank() == 1) {
      Value flat = attendOne(b, loc, op, op.getQuery(), op.getPos(), begin, units);
      rewriter.replaceOp(op, castTo(b, loc, flat, op.getType()));
      return success();
    }
    if (op.getTileRows())
      return lowerRowTile(op, rewriter);
    // T query rows: row t is at position pos + t and sees positions 0..pos+t
    // (causal). Kv head by kv head, every query row of it in turn: one
    // head's keys and values (positions x head width) stay in L2 across
    // the rows, where all the tile's heads' would be read from L3 again for
    // every row (1.3 MiB at 448 positions). Each (row, head) is the same
    // computation as together with the other heads.
    int64_t rows = queryType.getDimSize(0), width = queryType.getDimSize(1);
    int64_t rowWidth = width / op.getNumKvHeads(); // Per kv head.
    // Static when untiled, so the per-row results keep static types.
    OpFoldResult outWidth;
    if (auto fixed = getConstantIntValue(units))
      outWidth = b.getIndexAttr(*fixed * rowWidth);
    else
      outWidth = arith::MulIOp::create(b, loc, getValueOrCreateConstantIndexOp(b, loc, units),
                                       arith::ConstantIndexOp::create(b, loc, rowWidth))
                     .getResult();
    Value init = tensor::EmptyOp::create(
        b, loc, ArrayRef<OpFoldResult>{b.getIndexAttr(rows), outWidth}, b.getF32Type());
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    Value first = getValueOrCreateConstantIndexOp(b, loc, begin);
    // Rows taken together (attendRows): the target's block, cut to divide
    // the rows; one at a time with a sliding window (each row's own start).
    int64_t block =
        op.getWindow()
            ? 1
            : builder->attentionRowBlock(op.getNumHeads() / op.getNumKvHeads(), op.getHeadDim());
    while (rows % block)
      --block;
    auto heads = scf::ForOp::create(
        b, loc, zero, getValueOrCreateConstantIndexOp(b, loc, units), one, ValueRange{init},
        [&](OpBuilder &hb, Location hl, Value k, ValueRange headCarried) {
          Value head = arith::AddIOp::create(hb, hl, first, k);
          Value column =
              arith::MulIOp::create(hb, hl, k, arith::ConstantIndexOp::create(hb, hl, rowWidth));
          // Blocks of query rows (or one row at a time).
          auto loop = scf::ForOp::create(
              hb, hl, zero, arith::ConstantIndexOp::create(hb, hl, rows / block), one,
              ValueRange{headCarried[0]},
              [&](OpBuilder &nb, Location l, Value i, ValueRange carried) {
                Value t =
                    arith::MulIOp::create(nb, l, i, arith::ConstantIndexOp::create(nb, l, block));
                Value part;
                if (block == 1) {
                  Value query = queryRow(nb, l, op, t);
                  Value position = arith::AddIOp::create(nb, l, op.getPos(), t);
                  part = tensor::ExpandShapeOp::create(
                      nb, l, RankedTensorType::get({1, rowWidth}, nb.getF32Type()),
                      attendOne(nb, l, op, query, position, head, nb.getIndexAttr(1)),
                      SmallVector<ReassociationIndices>{{0, 1}});
                } else {
                  part = attendRows(nb, l, op, t, block, head);
                }
                Value out = tensor::InsertSliceOp::create(
                    nb, l, part, carried[0], ArrayRef<OpFoldResult>{t, column},
                    ArrayRef<OpFoldResult>{nb.getIndexAttr(block), nb.getIndexAttr(rowWidth)},
                    ArrayRef<OpFoldResult>{nb.getIndexAttr(1), nb.getIndexAttr(1)});
                scf::YieldOp::create(nb, l, ValueRange{out});
              });
          scf::YieldOp::create(hb, hl, loop.getResults());
        });
    rewriter.replaceOp(op, castTo(b, loc, heads.getResult(0), op.getType()));
    return success();
  }

  /// Row t of a [T, width] query, as a vector.
  static Value queryRow(OpBuilder &b, Location loc, AttentionOp op, Value t) {
    int64_t width = op.getQuery().getType().getDimSize(1);
    return tensor::ExtractSliceOp::create(
        b, loc, RankedTensorType::get({width}, b.getF32Type()), op.getQuery(),
        ArrayRef<OpFoldResult>{t, b.getIndexAttr(0)},
        ArrayRef<OpFoldResult>{b.getIndexAttr(1), b.getIndexAttr(width)},
        ArrayRef<OpFoldResult>{b.getIndexAttr(1), b.getIndexAttr(1)});
  }

  /// Positions [first, first + positions) of kv heads [begin, begin +
  /// units) of `cache`, viewed as [position, kv head, head width]
  /// (headsView: elements, or a Q8_0 head's bytes).
  static Value cacheHeads(OpBuilder &b, Location loc, Value cache, AttentionOp op,
                          OpFoldResult first, OpFoldResult begin, OpFoldResult positions,
                          OpFoldResult units) {
    const int64_t headDim = op.getHeadDim();
    Value view = headsView(b, loc, cache, op.getNumKvHeads(), headDim);
    return tensor::ExtractSliceOp::create(
        b, loc, view, ArrayRef<OpFoldResult>{first, begin, b.getIndexAttr(0)},
        ArrayRef<OpFoldResult>{positions, units, b.getIndexAttr(headWidth(cache, headDim))},
        ArrayRef<OpFoldResult>{b.getIndexAttr(1), b.getIndexAttr(1), b.getIndexAttr(1)});
  }

  /// `query` ([units, heads, d], at most [maxUnits, heads, d]) attending to
  /// `keys` and `values` (cacheHeads views of `positions` rows):
  /// scores[k, g, t] = q[k, g, :] . K[t, k, :] (rewritten by `maskScores`
  /// where given), softmax over t, the probability-weighted sum of V rows.
  /// [units, heads, d].
  Value softmaxAttention(OpBuilder &b, Location loc, AttentionOp op, Value query, Value keys,
                         Value values, int64_t maxUnits, OpFoldResult units, int64_t heads,
                         OpFoldResult positions,
                         llvm::function_ref<Value(Value)> maskScores) const {
    const int64_t headDim = op.getHeadDim();
    const int64_t context = op.getKeys().getType().getDimSize(0);
    Value scores = scratchSlice(b, loc, {maxUnits, heads, context},
                                {units, b.getIndexAttr(heads), positions}, 0.0f);
    query = scaleQuery(b, loc, query, maxUnits, heads, units, headDim);
    scores = builder->attentionScores(b, loc, query, keys, scores);
    if (maskScores)
      scores = maskScores(scores);
    auto [exps, sums] = softmaxNumerators(b, loc, scores, maxUnits, heads, units); // Unnormalized.
    Value out = scratchSlice(b, loc, {maxUnits, heads, headDim},
                             {units, b.getIndexAttr(heads), b.getIndexAttr(headDim)}, 0.0f);
    return divideRows(b, loc, builder->attentionWeightedSum(b, loc, exps, values, out), sums);
  }

  /// Query rows [t0, t0 + block) at kv head `head`, together: their query
  /// heads as one group of block x group over positions 0..pos+t0+block-1,
  /// each key and value row read once for all of them. A row's later
  /// positions are masked to -inf, so exp gives them exactly 0: its max,
  /// sum and weighted sum (plus zeros) are those it has alone, but for its
  /// exponentials' last bits (which positions of the exp loop LLVM
  /// vectorizes, libmvec, and which fall in the scalar tail, libm, moves
  /// with the loop's length).
  /// [block, group * head_dim].
  Value attendRows(OpBuilder &b, Location loc, AttentionOp op, Value t0, int64_t block,
                   Value head) const {
    const int64_t kvHeads = op.getNumKvHeads();
    const int64_t group = op.getNumHeads() / kvHeads;
    const int64_t headDim = op.getHeadDim();
    const int64_t entries = block * group, rowWidth = group * headDim;
    auto f32 = b.getF32Type();
    auto index = [&](int64_t v) -> OpFoldResult { return b.getIndexAttr(v); };
    Value firstPosition = arith::AddIOp::create(b, loc, op.getPos(), t0);
    OpFoldResult positions =
        arith::AddIOp::create(b, loc, firstPosition, arith::ConstantIndexOp::create(b, loc, block))
            .getResult();
    // The rows' query heads of this kv head, [1, block x group, d].
    Value column =
        arith::MulIOp::create(b, loc, head, arith::ConstantIndexOp::create(b, loc, rowWidth));
    Value rowsQuery =
        tensor::ExtractSliceOp::create(b, loc, op.getQuery(), ArrayRef<OpFoldResult>{t0, column},
                                       ArrayRef<OpFoldResult>{index(block), index(rowWidth)},
                                       ArrayRef<OpFoldResult>{index(1), index(1)});
    Value query = tensor::ExpandShapeOp::create(
        b, loc, RankedTensorType::get({1, entries, headDim}, f32),
        tensor::CollapseShapeOp::create(b, loc, rowsQuery,
                                        SmallVector<ReassociationIndices>{{0, 1}}),
        SmallVector<ReassociationIndices>{{0, 1, 2}});
    // Entry e (row e / group) sees positions up to firstPosition + e / group.
    auto maskLater = [&](Value scores) {
      return buildElementwise(
          b, loc, ValueRange{}, scores, [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
            Value e = linalg::IndexOp::create(nb, l, 1);
            Value p = linalg::IndexOp::create(nb, l, 2);
            Value last = arith::AddIOp::create(
                nb, l, firstPosition,
                arith::DivUIOp::create(nb, l, e, arith::ConstantIndexOp::create(nb, l, group)));
            Value later = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::ugt, p, last);
            Value minusInfinity = f32Constant(nb, l, -std::numeric_limits<float>::infinity());
            return arith::SelectOp::create(nb, l, later, minusInfinity, args[0]);
          });
    };
    OpFoldResult one = index(1), start = index(0);
    Value keys = cacheHeads(b, loc, op.getKeys(), op, start, head, positions, one);
    Value values = cacheHeads(b, loc, op.getValues(), op, start, head, positions, one);
    Value out = softmaxAttention(b, loc, op, query, keys, values, /*maxUnits=*/1, one, entries,
                                 positions, maskLater);
    return tensor::ExpandShapeOp::create(
        b, loc, RankedTensorType::get({block, rowWidth}, f32),
        tensor::CollapseShapeOp::create(b, loc, out, SmallVector<ReassociationIndices>{{0, 1, 2}}),
        SmallVector<ReassociationIndices>{{0, 1}});
  }

  /// tile_rows: units [b, e) of (query row, kv head), one after another.
  LogicalResult lowerRowTile(AttentionOp op, PatternRewriter &b) const {
    Location loc = op.getLoc();
    auto queryType = op.getQuery().getType();
    const int64_t width = queryType.getDimSize(1);
    const int64_t kvHeads = op.getNumKvHeads();
    const int64_t rowWidth = width / kvHeads;
    Value first = op.getTile()[0];
    Value units = arith::SubIOp::create(b, loc, op.getTile()[1], first);
    Value init = tensor::EmptyOp::create(
        b, loc, ArrayRef<OpFoldResult>{units, b.getIndexAttr(rowWidth)}, b.getF32Type());
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    Value heads = arith::ConstantIndexOp::create(b, loc, kvHeads);
    auto rowLoop = scf::ForOp::create(
        b, loc, zero, units, one, ValueRange{init},
        [&](OpBuilder &rb, Location rl, Value i, ValueRange carried) {
          Value unit = arith::AddIOp::create(rb, rl, first, i);
          Value t = arith::DivUIOp::create(rb, rl, unit, heads);
          Value k = arith::RemUIOp::create(rb, rl, unit, heads);
          Value query = queryRow(rb, rl, op, t);
          Value position = arith::AddIOp::create(rb, rl, op.getPos(), t);
          Value flat = attendOne(rb, rl, op, query, position, k, rb.getIndexAttr(1));
          Value out = insertRow(rb, rl, flat, carried[0], i, rb.getIndexAttr(rowWidth));
          scf::YieldOp::create(rb, rl, ValueRange{out});
        });
    b.replaceOp(op, castTo(b, loc, rowLoop.getResult(0), op.getType()));
    return success();
  }

  /// One query vector at `pos` over cached positions 0..pos (the window's
  /// last ones with a sliding window), kv heads
  /// [begin, begin + units): the flattened [units, group, head_dim] output.
  Value attendOne(OpBuilder &b, Location loc, AttentionOp op, Value queryVector, Value pos,
                  OpFoldResult begin, OpFoldResult units) const {
    const int64_t kvHeads = op.getNumKvHeads();
    const int64_t group = op.getNumHeads() / kvHeads;
    const int64_t headDim = op.getHeadDim();
    auto f32 = b.getF32Type();
    auto index = [&](int64_t v) -> OpFoldResult { return b.getIndexAttr(v); };
    // Positions [first, pos]: all of them, or the sliding window's.
    OpFoldResult first = index(0);
    OpFoldResult positions =
        arith::AddIOp::create(b, loc, pos, arith::ConstantIndexOp::create(b, loc, 1)).getResult();
    if (op.getWindow()) {
      Value start = windowStart(b, loc, pos, op.getWindow());
      positions =
          arith::SubIOp::create(b, loc, getValueOrCreateConstantIndexOp(b, loc, positions), start)
              .getResult();
      first = start;
    }

    // q as [kv head, group, d], the tile's kv heads.
    Value query =
        tensor::ExpandShapeOp::create(b, loc, RankedTensorType::get({kvHeads, group, headDim}, f32),
                                      queryVector, SmallVector<ReassociationIndices>{{0, 1, 2}});
    query = tensor::ExtractSliceOp::create(
        b, loc, query, ArrayRef<OpFoldResult>{begin, index(0), index(0)},
        ArrayRef<OpFoldResult>{units, index(group), index(headDim)},
        ArrayRef<OpFoldResult>{index(1), index(1), index(1)});
    Value keys = cacheHeads(b, loc, op.getKeys(), op, first, begin, positions, units);
    Value values = cacheHeads(b, loc, op.getValues(), op, first, begin, positions, units);
    Value out = softmaxAttention(b, loc, op, query, keys, values, kvHeads, units, group, positions,
                                 /*maskScores=*/nullptr);
    return tensor::CollapseShapeOp::create(b, loc, out,
                                           SmallVector<ReassociationIndices>{{0, 1, 2}});
  }
};

} // namespace

void mlir::quill::populateLowerAttentionPatterns(RewritePatternSet &patterns,
                                                 std::shared_ptr<const KernelBuilder> builder) {
  patterns.add<LowerAttention>(patterns.getContext(), std::move(builder));
}
