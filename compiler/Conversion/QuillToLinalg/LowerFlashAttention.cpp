// quill.attention_partial / quill.attention_merge -> linalg: attention over
// chunks of the cache, then the chunks combined in a fixed order.
#include "compiler/Conversion/QuillToLinalg/CacheAccess.h"
#include "compiler/Conversion/QuillToLinalg/KernelBuilder.h"
#include "compiler/Conversion/QuillToLinalg/LinalgBuilders.h"
#include "compiler/Conversion/QuillToLinalg/QuillToLinalg.h"
#include "dialects/Quill/IR/QuillDialect.h"

#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <cmath>
#include <limits>
#include <tuple>

using namespace mlir;
using namespace mlir::quill;

namespace {

using utils::IteratorType;
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

/// A chunk's softmax statistics over scores [rows, positions]: each row's
/// maximum, exp(score - max) in place, and each row's sum of those. At
/// most `maxRows` rows (the statistics' stack buffers).
std::tuple<Value, Value, Value> chunkSoftmax(OpBuilder &b, Location loc, Value scores,
                                             int64_t maxRows) {
  MLIRContext *ctx = b.getContext();
  AffineExpr g, t;
  bindDims(ctx, g, t);
  auto map2 = [&](ArrayRef<AffineExpr> e) { return AffineMap::get(2, 0, e, ctx); };
  SmallVector<IteratorType> reduceT = {IteratorType::parallel, IteratorType::reduction};
  OpFoldResult rows = tensor::getMixedSize(b, loc, scores, 0);
  Value max = buildGeneric(
      b, loc, ValueRange{scores}, scratchSlice(b, loc, {maxRows}, {rows}, kNegInf),
      {map2({g, t}), map2({g})}, reduceT, [](OpBuilder &bb, Location bl, ValueRange args) -> Value {
        return arith::MaximumFOp::create(bb, bl, args[1], args[0]);
      });
  Value exps = buildGeneric(b, loc, ValueRange{max}, scores, {map2({g}), map2({g, t})},
                            {IteratorType::parallel, IteratorType::parallel},
                            [](OpBuilder &bb, Location bl, ValueRange args) -> Value {
                              return math::ExpOp::create(
                                  bb, bl, arith::SubFOp::create(bb, bl, args[1], args[0]));
                            });
  Value sum = buildGeneric(b, loc, ValueRange{exps}, scratchSlice(b, loc, {maxRows}, {rows}, 0.0f),
                           {map2({g, t}), map2({g})}, reduceT,
                           [](OpBuilder &bb, Location bl, ValueRange args) -> Value {
                             return arith::AddFOp::create(bb, bl, args[1], args[0]);
                           });
  return {max, exps, sum};
}

struct LowerAttentionPartial : OpRewritePattern<AttentionPartialOp> {
  LowerAttentionPartial(MLIRContext *ctx, std::shared_ptr<const KernelBuilder> builder)
      : OpRewritePattern(ctx), builder(std::move(builder)) {}
  std::shared_ptr<const KernelBuilder> builder; ///< Scores and weighted sums.

  LogicalResult matchAndRewrite(AttentionPartialOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    PatternRewriter &b = rewriter;
    const int64_t kvHeads = op.getNumKvHeads(), group = op.getGroup();
    const int64_t headDim = op.getHeadDim(), chunk = op.getChunk(), chunks = op.getChunks();
    const int64_t rowWidth = group * (headDim + 2);
    auto f32 = b.getF32Type();
    auto index = [&](OpBuilder &nb, int64_t v) -> OpFoldResult { return nb.getIndexAttr(v); };
    auto constant = [&](OpBuilder &nb, Location l, int64_t v) -> Value {
      return arith::ConstantIndexOp::create(nb, l, v);
    };

    Value first = constant(b, loc, 0), last = constant(b, loc, kvHeads * chunks);
    if (op.isTiled()) {
      first = op.getTile()[0];
      last = op.getTile()[1];
    }
    Value count = arith::SubIOp::create(b, loc, last, first);
    Value init = tensor::EmptyOp::create(
        b, loc, ArrayRef<OpFoldResult>{count, b.getIndexAttr(rowWidth)}, f32);
    // Views: q as [kv head, group, d]; caches as [position, kv head, d].
    Value query =
        tensor::ExpandShapeOp::create(b, loc, RankedTensorType::get({kvHeads, group, headDim}, f32),
                                      op.getQuery(), SmallVector<ReassociationIndices>{{0, 1, 2}});
    Value keys = headsView(b, loc, op.getKeys(), kvHeads, headDim);
    Value values = headsView(b, loc, op.getValues(), kvHeads, headDim);
    const int64_t width = headWidth(op.getKeys(), headDim);
    Value positions = arith::AddIOp::create(b, loc, op.getPos(), constant(b, loc, 1));
    // With a sliding window, chunks start no earlier than its first position.
    Value firstPosition =
        op.getWindow() ? windowStart(b, loc, op.getPos(), op.getWindow()) : Value();
    Value root = f32Constant(b, loc, std::sqrt(float(headDim)));

    // The tile's units chunk by chunk: at chunk c they are the kv heads
    // [ceil((first - c) / chunks), ceil((last - c) / chunks)), side by side
    // in the cache, so the builder reads each position's rows of all of
    // them together. Each head's row of the result is the same whichever
    // heads share the call.
    auto headBound = [&](OpBuilder &nb, Location l, Value unit, Value part) -> Value {
      Value up = arith::SubIOp::create(
          nb, l, arith::AddIOp::create(nb, l, unit, constant(nb, l, chunks - 1)), part);
      return arith::DivUIOp::create(nb, l, up, constant(nb, l, chunks));
    };
    auto loop = scf::ForOp::create(
        b, loc, constant(b, loc, 0), constant(b, loc, chunks), constant(b, loc, 1),
        ValueRange{init}, [&](OpBuilder &nb, Location l, Value part, ValueRange carried) {
          Value head = headBound(nb, l, first, part);
          Value heads = arith::SubIOp::create(nb, l, headBound(nb, l, last, part), head);
          OpFoldResult hf = heads;
          // Positions [start, start + n) of this chunk; n may be 0.
          Value chunkStart = arith::MulIOp::create(nb, l, part, constant(nb, l, chunk));
          Value start = firstPosition
                            ? arith::MaxUIOp::create(nb, l, chunkStart, firstPosition).getResult()
                            : chunkStart;
          Value stop = arith::MinUIOp::create(
              nb, l, arith::AddIOp::create(nb, l, chunkStart, constant(nb, l, chunk)), positions);
          Value n = arith::SubIOp::create(nb, l, arith::MaxUIOp::create(nb, l, stop, start), start);
          OpFoldResult nf = n;
          auto dynamic = ShapedType::kDynamic;
          Value q = tensor::ExtractSliceOp::create(
              nb, l, RankedTensorType::get({dynamic, group, headDim}, f32), query,
              ArrayRef<OpFoldResult>{head, index(nb, 0), index(nb, 0)},
              ArrayRef<OpFoldResult>{hf, index(nb, group), index(nb, headDim)},
              ArrayRef<OpFoldResult>{index(nb, 1), index(nb, 1), index(nb, 1)});
          auto rows = [&](Value view) -> Value {
            return tensor::ExtractSliceOp::create(
                nb, l, RankedTensorType::get({dynamic, dynamic, width}, elementTypeOf(view)), view,
                ArrayRef<OpFoldResult>{start, head, index(nb, 0)},
                ArrayRef<OpFoldResult>{nf, hf, index(nb, width)},
                ArrayRef<OpFoldResult>{index(nb, 1), index(nb, 1), index(nb, 1)});
          };
          // scores[h, g, t] = q[h, g] . K[t, h] / sqrt(head_dim)
          Value scores =
              scratchSlice(nb, l, {kvHeads, group, chunk}, {hf, index(nb, group), nf}, 0.0f);
          scores = builder->attentionScores(nb, l, q, rows(keys), scores);
          scores = buildElementwise(nb, l, ValueRange{}, scores,
                                    [&](OpBuilder &bb, Location bl, ValueRange args) -> Value {
                                      return arith::DivFOp::create(bb, bl, args[0], root);
                                    });
          // Per (head, query head) row: max, exps, sum.
          auto byRow = [&](Value x) {
            return tensor::CollapseShapeOp::create(nb, l, x,
                                                   SmallVector<ReassociationIndices>{{0, 1}, {2}})
                .getResult();
          };
          auto [max, exps, sum] = chunkSoftmax(nb, l, byRow(scores), kvHeads * group);
          Value e =
              tensor::ExpandShapeOp::create(nb, l, cast<RankedTensorType>(scores.getType()), exps,
                                            SmallVector<ReassociationIndices>{{0, 1}, {2}},
                                            ArrayRef<OpFoldResult>{hf, index(nb, group), nf});
          // o[h, g, d] = sum_t e[h, g, t] V[t, h, d].
          Value o = builder->attentionWeightedSum(
              nb, l, e, rows(values),
              scratchSlice(nb, l, {kvHeads, group, headDim},
                           {hf, index(nb, group), index(nb, headDim)}, 0.0f));
          // Each head's row: per query head, o (head_dim), max, sum, at
          // unit head * chunks + part of the tile.
          auto headRows = scf::ForOp::create(
              nb, l, constant(nb, l, 0), heads, constant(nb, l, 1), ValueRange{carried[0]},
              [&](OpBuilder &rb, Location rl, Value h, ValueRange out) {
                auto rindex = [&](int64_t v) -> OpFoldResult { return rb.getIndexAttr(v); };
                Value row =
                    tensor::EmptyOp::create(rb, rl, ArrayRef<int64_t>{group, headDim + 2}, f32);
                Value stat = arith::MulIOp::create(rb, rl, h, constant(rb, rl, group));
                auto put = [&](Value from, ArrayRef<OpFoldResult> offsets, int64_t column,
                               int64_t columns) {
                  auto type = RankedTensorType::get({group, columns}, f32);
                  Value piece =
                      from == o
                          ? tensor::ExtractSliceOp::create(
                                rb, rl, type, from, offsets,
                                ArrayRef<OpFoldResult>{rindex(1), rindex(group), rindex(columns)},
                                ArrayRef<OpFoldResult>{rindex(1), rindex(1), rindex(1)})
                                .getResult()
                          : tensor::ExpandShapeOp::create(
                                rb, rl, type,
                                tensor::ExtractSliceOp::create(
                                    rb, rl, RankedTensorType::get({group}, f32), from, offsets,
                                    ArrayRef<OpFoldResult>{rindex(group)},
                                    ArrayRef<OpFoldResult>{rindex(1)}),
                                SmallVector<ReassociationIndices>{{0, 1}})
                                .getResult();
                  row = tensor::InsertSliceOp::create(
                      rb, rl, piece, row, ArrayRef<OpFoldResult>{rindex(0), rindex(column)},
                      ArrayRef<OpFoldResult>{rindex(group), rindex(columns)},
                      ArrayRef<OpFoldResult>{rindex(1), rindex(1)});
                };
                put(o, {h, rindex(0), rindex(0)}, 0, headDim);
                put(max, {stat}, headDim, 1);
                put(sum, {stat}, headDim + 1, 1);
                Value flat = tensor::CollapseShapeOp::create(
                    rb, rl, row, SmallVector<ReassociationIndices>{{0, 1}});
                Value unit = arith::AddIOp::create(
                    rb, rl,
                    arith::MulIOp::create(rb, rl, arith::AddIOp::create(rb, rl, head, h),
                                          constant(rb, rl, chunks)),
                    part);
                Value at = arith::SubIOp::create(rb, rl, unit, first);
                Value next = tensor::InsertSliceOp::create(
                    rb, rl, flat, out[0], ArrayRef<OpFoldResult>{at, rindex(0)},
                    ArrayRef<OpFoldResult>{rindex(1), rindex(rowWidth)},
                    ArrayRef<OpFoldResult>{rindex(1), rindex(1)});
                scf::YieldOp::create(rb, rl, ValueRange{next});
              });
          scf::YieldOp::create(nb, l, headRows.getResults());
        });
    rewriter.replaceOp(op, castTo(b, loc, loop.getResult(0), op.getType()));
    return success();
  }
};

struct LowerAttentionMerge : OpRewritePattern<AttentionMergeOp> {
  using OpRewritePattern::OpRewritePattern;

  /// Output elements [b, e) (a tile: the GPU's units), each merging its own
  /// column of the chunks with the untiled form's operations in its order:
  /// M = max_c m_c, then sum_c exp(m_c - M) o_c[d] / sum_c exp(m_c - M) l_c.
  static LogicalResult mergeElements(AttentionMergeOp op, PatternRewriter &b) {
    Location loc = op.getLoc();
    const int64_t heads = op.getNumHeads(), kvHeads = op.getNumKvHeads();
    const int64_t group = heads / kvHeads;
    const int64_t rowWidth = op.getPartials().getType().getDimSize(1);
    const int64_t headDim = rowWidth / group - 2;
    const int64_t chunks = op.getPartials().getType().getDimSize(0) / kvHeads;
    Value partials = op.getPartials();
    auto index = [&](OpBuilder &nb, Location l, int64_t v) -> Value {
      return arith::ConstantIndexOp::create(nb, l, v);
    };
    Value begin = op.getTile()[0], end = op.getTile()[1];
    Value count = arith::SubIOp::create(b, loc, end, begin);
    Value init = tensor::EmptyOp::create(b, loc, ArrayRef<OpFoldResult>{count}, b.getF32Type());
    auto loop = scf::ForOp::create(
        b, loc, index(b, loc, 0), count, index(b, loc, 1), ValueRange{init},
        [&](OpBuilder &nb, Location l, Value i, ValueRange carried) {
          Value element = arith::AddIOp::create(nb, l, begin, i);
          Value head = arith::DivUIOp::create(nb, l, element, index(nb, l, headDim));
          Value d = arith::RemUIOp::create(nb, l, element, index(nb, l, headDim));
          Value kvHead = arith::DivUIOp::create(nb, l, head, index(nb, l, group));
          Value g = arith::RemUIOp::create(nb, l, head, index(nb, l, group));
          Value base = arith::MulIOp::create(nb, l, g, index(nb, l, headDim + 2));
          Value firstRow = arith::MulIOp::create(nb, l, kvHead, index(nb, l, chunks));
          auto at = [&](OpBuilder &ib, Location il, Value c, Value column) -> Value {
            Value row = arith::AddIOp::create(ib, il, firstRow, c);
            return tensor::ExtractOp::create(ib, il, partials, ValueRange{row, column});
          };
          Value mColumn = arith::AddIOp::create(nb, l, base, index(nb, l, headDim));
          Value lColumn = arith::AddIOp::create(nb, l, base, index(nb, l, headDim + 1));
          Value oColumn = arith::AddIOp::create(nb, l, base, d);
          auto best = scf::ForOp::create(
              nb, l, index(nb, l, 0), index(nb, l, chunks), index(nb, l, 1),
              ValueRange{f32Constant(nb, l, kNegInf)},
              [&](OpBuilder &ib, Location il, Value c, ValueRange acc) {
                Value m = at(ib, il, c, mColumn);
                scf::YieldOp::create(ib, il,
                                     ValueRange{arith::MaximumFOp::create(ib, il, acc[0], m)});
              });
          Value top = best.getResult(0);
          auto sums = scf::ForOp::create(
              nb, l, index(nb, l, 0), index(nb, l, chunks), index(nb, l, 1),
              ValueRange{f32Constant(nb, l, 0.0f), f32Constant(nb, l, 0.0f)},
              [&](OpBuilder &ib, Location il, Value c, ValueRange acc) {
                Value m = at(ib, il, c, mColumn);
                // exp(m - M): 0 for empty chunks (m = -inf).
                Value w = math::ExpOp::create(ib, il, arith::SubFOp::create(ib, il, m, top));
                Value total = arith::AddFOp::create(
                    ib, il, acc[0], arith::MulFOp::create(ib, il, w, at(ib, il, c, lColumn)));
                Value sum = arith::AddFOp::create(
                    ib, il, acc[1], arith::MulFOp::create(ib, il, w, at(ib, il, c, oColumn)));
                scf::YieldOp::create(ib, il, ValueRange{total, sum});
              });
          Value out = arith::DivFOp::create(nb, l, sums.getResult(1), sums.getResult(0));
          scf::YieldOp::create(
              nb, l,
              ValueRange{
                  tensor::InsertOp::create(nb, l, out, carried[0], ValueRange{i}).getResult()});
        });
    b.replaceOp(op, castTo(b, loc, loop.getResult(0), op.getType()));
    return success();
  }

  LogicalResult matchAndRewrite(AttentionMergeOp op, PatternRewriter &rewriter) const override {
    if (op.isTiled())
      return mergeElements(op, rewriter);
    Location loc = op.getLoc();
    PatternRewriter &b = rewriter;
    MLIRContext *ctx = b.getContext();
    const int64_t kvHeads = op.getNumKvHeads();
    const int64_t group = op.getNumHeads() / kvHeads;
    const int64_t headDim = op.getType().getDimSize(0) / op.getNumHeads();
    const int64_t chunks = op.getPartials().getType().getDimSize(0) / kvHeads;
    auto f32 = b.getF32Type();
    auto index = [&](int64_t v) -> OpFoldResult { return b.getIndexAttr(v); };
    // [kv head, chunk, group, head_dim + 2]
    Value p = tensor::ExpandShapeOp::create(
        b, loc, RankedTensorType::get({kvHeads, chunks, group, headDim + 2}, f32), op.getPartials(),
        SmallVector<ReassociationIndices>{{0, 1}, {2, 3}});
    auto column = [&](int64_t at, int64_t width) -> Value {
      SmallVector<int64_t> shape = {kvHeads, chunks, group};
      if (width > 1)
        shape.push_back(width);
      return tensor::ExtractSliceOp::create(
          b, loc, RankedTensorType::get(shape, f32), p,
          ArrayRef<OpFoldResult>{index(0), index(0), index(0), index(at)},
          ArrayRef<OpFoldResult>{index(kvHeads), index(chunks), index(group), index(width)},
          ArrayRef<OpFoldResult>{index(1), index(1), index(1), index(1)});
    };
    Value o = column(0, headDim), m = column(headDim, 1), l = column(headDim + 1, 1);
    AffineExpr k, c, g, d;
    bindDims(ctx, k, c, g, d);
    auto map3 = [&](ArrayRef<AffineExpr> e) { return AffineMap::get(3, 0, e, ctx); };
    auto map4 = [&](ArrayRef<AffineExpr> e) { return AffineMap::get(4, 0, e, ctx); };
    AffineExpr k3 = getAffineDimExpr(0, ctx), c3 = getAffineDimExpr(1, ctx),
               g3 = getAffineDimExpr(2, ctx);
    // Loops (k, c, g): chunks in ascending order, a fixed merge order.
    SmallVector<IteratorType> overChunks = {IteratorType::parallel, IteratorType::reduction,
                                            IteratorType::parallel};
    Value best = buildGeneric(b, loc, ValueRange{m},
                              filledTensor(b, loc, {index(kvHeads), index(group)}, kNegInf),
                              {map3({k3, c3, g3}), map3({k3, g3})}, overChunks,
                              [](OpBuilder &nb, Location nl, ValueRange args) -> Value {
                                return arith::MaximumFOp::create(nb, nl, args[1], args[0]);
                              });
    // w[k, c, g] = exp(m - M): 0 for empty chunks (m = -inf).
    Value weights = buildGeneric(
        b, loc, ValueRange{m, best},
        tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{kvHeads, chunks, group}, f32),
        {map3({k3, c3, g3}), map3({k3, g3}), map3({k3, c3, g3})},
        {IteratorType::parallel, IteratorType::parallel, IteratorType::parallel},
        [](OpBuilder &nb, Location nl, ValueRange args) -> Value {
          return math::ExpOp::create(nb, nl, arith::SubFOp::create(nb, nl, args[0], args[1]));
        });
    Value total = buildGeneric(b, loc, ValueRange{weights, l},
                               filledTensor(b, loc, {index(kvHeads), index(group)}, 0.0f),
                               {map3({k3, c3, g3}), map3({k3, c3, g3}), map3({k3, g3})}, overChunks,
                               [](OpBuilder &nb, Location nl, ValueRange args) -> Value {
                                 Value scaled = arith::MulFOp::create(nb, nl, args[0], args[1]);
                                 return arith::AddFOp::create(nb, nl, args[2], scaled);
                               });
    // out[k, g, d] = sum_c w o / total, loops (k, c, g, d).
    Value sums =
        buildGeneric(b, loc, ValueRange{weights, o},
                     filledTensor(b, loc, {index(kvHeads), index(group), index(headDim)}, 0.0f),
                     {map4({k, c, g}), map4({k, c, g, d}), map4({k, g, d})},
                     {IteratorType::parallel, IteratorType::reduction, IteratorType::parallel,
                      IteratorType::parallel},
                     [](OpBuilder &nb, Location nl, ValueRange args) -> Value {
                       Value scaled = arith::MulFOp::create(nb, nl, args[0], args[1]);
                       return arith::AddFOp::create(nb, nl, args[2], scaled);
                     });
    AffineExpr k2 = getAffineDimExpr(0, ctx), g2 = getAffineDimExpr(1, ctx),
               d2 = getAffineDimExpr(2, ctx);
    Value out =
        buildGeneric(b, loc, ValueRange{total}, sums,
                     {AffineMap::get(3, 0, {k2, g2}, ctx), AffineMap::get(3, 0, {k2, g2, d2}, ctx)},
                     {IteratorType::parallel, IteratorType::parallel, IteratorType::parallel},
                     [](OpBuilder &nb, Location nl, ValueRange args) -> Value {
                       return arith::DivFOp::create(nb, nl, args[1], args[0]);
                     });
    Value flat =
        tensor::CollapseShapeOp::create(b, loc, out, SmallVector<ReassociationIndices>{{0, 1, 2}});
    rewriter.replaceOp(op, flat);
    return success();
  }
};

} // namespace

void mlir::quill::populateLowerFlashAttentionPatterns(
    RewritePatternSet &patterns, std::shared_ptr<const KernelBuilder> builder) {
  patterns.add<LowerAttentionPartial>(patterns.getContext(), std::move(builder));
  patterns.add<LowerAttentionMerge>(patterns.getContext());
}
