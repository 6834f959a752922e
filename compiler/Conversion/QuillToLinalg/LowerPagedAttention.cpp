// quill.paged_attention -> per token row (per unit of a row's slice of kv
// heads when tiled): scores block by block through the row's block table,
// one softmax, the weighted sum block by block.
//
// Each row reads only its own sequence's blocks in position order, so its
// result is the same whatever the other rows of the batch are.
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

struct LowerPagedAttention : OpRewritePattern<PagedAttentionOp> {
  LowerPagedAttention(MLIRContext *ctx, std::shared_ptr<const KernelBuilder> builder)
      : OpRewritePattern(ctx), builder(std::move(builder)) {}
  std::shared_ptr<const KernelBuilder> builder; ///< Scores and weighted sums.

  LogicalResult matchAndRewrite(PagedAttentionOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    PatternRewriter &b = rewriter;
    const int64_t rows = op.getQuery().getType().getDimSize(0);
    const int64_t width = op.getQuery().getType().getDimSize(1);
    const int64_t kvHeads = op.getNumKvHeads();
    // Untiled: every row, all its kv heads at once. Tiled: units [begin,
    // end) of (row, slice of `heads` kv heads, as wide as the result's
    // rows), unit u being slice u mod slices of row u / slices, so that a
    // step of fewer rows than threads still splits.
    Value begin = arith::ConstantIndexOp::create(b, loc, 0);
    Value end = arith::ConstantIndexOp::create(b, loc, rows);
    OpFoldResult count = b.getIndexAttr(rows);
    int64_t heads = kvHeads;
    if (op.isTiled()) {
      begin = op.getTile()[0];
      end = op.getTile()[1];
      count = arith::SubIOp::create(b, loc, end, begin).getResult();
      heads = op.getType().getDimSize(1) / (width / kvHeads);
    }
    const int64_t outWidth = width / kvHeads * heads;
    Value init = tensor::EmptyOp::create(
        b, loc, ArrayRef<OpFoldResult>{count, b.getIndexAttr(outWidth)}, b.getF32Type());
    Value slices = arith::ConstantIndexOp::create(b, loc, kvHeads / heads);
    auto loop = scf::ForOp::create(
        b, loc, begin, end, arith::ConstantIndexOp::create(b, loc, 1), ValueRange{init},
        [&](OpBuilder &nb, Location l, Value u, ValueRange carried) {
          Value t = u;
          OpFoldResult head = nb.getIndexAttr(0);
          if (heads != kvHeads) {
            t = arith::DivUIOp::create(nb, l, u, slices);
            head = arith::MulIOp::create(nb, l, arith::RemUIOp::create(nb, l, u, slices),
                                         arith::ConstantIndexOp::create(nb, l, heads))
                       .getResult();
          }
          Value flat = attendRow(nb, l, op, t, head, heads);
          Value at = arith::SubIOp::create(nb, l, u, begin);
          Value out = insertRow(nb, l, flat, carried[0], at, nb.getIndexAttr(outWidth));
          scf::YieldOp::create(nb, l, ValueRange{out});
        });
    rewriter.replaceOp(op, castTo(b, loc, loop.getResult(0), op.getType()));
    return success();
  }

  /// Row t's query over positions 0..positions[t] of its sequence, kv
  /// heads [head, head + heads): the flattened [heads, group, head_dim]
  /// output.
  Value attendRow(OpBuilder &b, Location loc, PagedAttentionOp op, Value t, OpFoldResult head,
                  int64_t heads) const {
    const int64_t kvHeads = op.getNumKvHeads();
    const int64_t group = op.getNumHeads() / kvHeads;
    const int64_t headDim = op.getHeadDim();
    const int64_t blockSize = op.getBlockSize();
    const int64_t tableWidth = op.getTables().getType().getDimSize(1);
    const int64_t context = tableWidth * blockSize;
    const int64_t width = kvHeads * group * headDim;
    auto f32 = b.getF32Type();
    auto index = [&](int64_t v) -> OpFoldResult { return b.getIndexAttr(v); };
    auto constant = [&](int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); };
    auto toIndex = [&](Value v) {
      return arith::IndexCastOp::create(b, loc, b.getIndexType(), v).getResult();
    };

    // Positions first..p (first 0, or the sliding window's start): n of
    // them, in blocks firstBlock .. ceil((p + 1) / blockSize) - 1. The blocks
    // before the window are never read: the runtime may have freed them.
    Value p = toIndex(tensor::ExtractOp::create(b, loc, op.getPositions(), ValueRange{t}));
    Value end = arith::AddIOp::create(b, loc, p, constant(1));
    const bool windowed = op.getWindow().has_value();
    Value first = windowed ? windowStart(b, loc, p, op.getWindow()) : Value();
    Value n = windowed ? arith::SubIOp::create(b, loc, end, first).getResult() : end;
    Value firstBlock = windowed
                           ? arith::DivUIOp::create(b, loc, first, constant(blockSize)).getResult()
                           : constant(0);
    Value blockCount = arith::DivUIOp::create(
        b, loc, arith::AddIOp::create(b, loc, end, constant(blockSize - 1)), constant(blockSize));

    Value row = tensor::ExtractSliceOp::create(b, loc, RankedTensorType::get({width}, f32),
                                               op.getQuery(), ArrayRef<OpFoldResult>{t, index(0)},
                                               ArrayRef<OpFoldResult>{index(1), index(width)},
                                               ArrayRef<OpFoldResult>{index(1), index(1)});
    Value query =
        tensor::ExpandShapeOp::create(b, loc, RankedTensorType::get({kvHeads, group, headDim}, f32),
                                      row, SmallVector<ReassociationIndices>{{0, 1, 2}});
    if (heads != kvHeads)
      query = tensor::ExtractSliceOp::create(
          b, loc, RankedTensorType::get({heads, group, headDim}, f32), query,
          ArrayRef<OpFoldResult>{head, index(0), index(0)},
          ArrayRef<OpFoldResult>{index(heads), index(group), index(headDim)},
          ArrayRef<OpFoldResult>{index(1), index(1), index(1)});
    query = scaleQuery(b, loc, query, heads, group, index(heads), headDim);

    // Block j of the sequence: positions [from, from + len) of it, from
    // slot `slot` of physical block tables[t, j] on (cache rows [len, kv
    // head, d]), scores [start, start + len) of the window's.
    struct BlockRange {
      Value start, len;
      OpFoldResult slot, lenFold;
    };
    auto blockRange = [&](OpBuilder &nb, Location l, Value j) {
      auto c = [&](int64_t v) { return arith::ConstantIndexOp::create(nb, l, v); };
      Value blockStart = arith::MulIOp::create(nb, l, j, c(blockSize));
      if (!windowed) {
        Value len = arith::MinUIOp::create(nb, l, arith::SubIOp::create(nb, l, n, blockStart),
                                           c(blockSize));
        return BlockRange{blockStart, len, nb.getIndexAttr(0), len};
      }
      Value from = arith::MaxUIOp::create(nb, l, blockStart, first);
      Value to = arith::MinUIOp::create(
          nb, l, arith::AddIOp::create(nb, l, blockStart, c(blockSize)), end);
      Value len = arith::SubIOp::create(nb, l, to, from);
      return BlockRange{arith::SubIOp::create(nb, l, from, first), len,
                        arith::SubIOp::create(nb, l, from, blockStart).getResult(), len};
    };
    auto blockRows = [&](OpBuilder &nb, Location l, Value cache, Value j, const BlockRange &r) {
      Value len = r.len;
      Value physical = arith::IndexCastOp::create(
          nb, l, nb.getIndexType(),
          tensor::ExtractOp::create(nb, l, op.getTables(), ValueRange{t, j}));
      // [blocks, block size, kv head, head width] (headsView).
      Value view = headsView(nb, l, cache, kvHeads, headDim);
      Type element = elementTypeOf(view);
      const int64_t perHead = headWidth(cache, headDim);
      return tensor::ExtractSliceOp::create(
                 nb, l, RankedTensorType::get({ShapedType::kDynamic, heads, perHead}, element),
                 view, ArrayRef<OpFoldResult>{physical, r.slot, head, nb.getIndexAttr(0)},
                 ArrayRef<OpFoldResult>{nb.getIndexAttr(1), len, nb.getIndexAttr(heads),
                                        nb.getIndexAttr(perHead)},
                 ArrayRef<OpFoldResult>{nb.getIndexAttr(1), nb.getIndexAttr(1), nb.getIndexAttr(1),
                                        nb.getIndexAttr(1)})
          .getResult();
    };
    auto scoreSlice = [&](OpBuilder &nb, Value scores, const BlockRange &r) {
      return std::make_pair(
          ArrayRef<OpFoldResult>{nb.getIndexAttr(0), nb.getIndexAttr(0), r.start}.vec(),
          ArrayRef<OpFoldResult>{nb.getIndexAttr(heads), nb.getIndexAttr(group), r.lenFold}.vec());
    };
    SmallVector<OpFoldResult> unitStrides(3, b.getIndexAttr(1));

    // scores[k, g, t] for all n positions, block by block.
    Value scores =
        scratchSlice(b, loc, {heads, group, context}, {index(heads), index(group), n}, 0.0f);
    auto scoreLoop = scf::ForOp::create(
        b, loc, firstBlock, blockCount, constant(1), ValueRange{scores},
        [&](OpBuilder &nb, Location l, Value j, ValueRange carried) {
          BlockRange r = blockRange(nb, l, j);
          auto [offsets, sizes] = scoreSlice(nb, carried[0], r);
          Value part =
              tensor::ExtractSliceOp::create(nb, l, carried[0], offsets, sizes, unitStrides);
          part = builder->attentionScores(nb, l, query, blockRows(nb, l, op.getKeys(), j, r), part);
          Value next =
              tensor::InsertSliceOp::create(nb, l, part, carried[0], offsets, sizes, unitStrides);
          scf::YieldOp::create(nb, l, ValueRange{next});
        });
    std::pair<Value, Value> numerators =
        softmaxNumerators(b, loc, scoreLoop.getResult(0), heads, group, index(heads));
    Value probs = numerators.first, sums = numerators.second;

    // out[k, g, d] accumulated block by block, in position order.
    Value out = scratchSlice(b, loc, {heads, group, headDim},
                             {index(heads), index(group), index(headDim)}, 0.0f);
    auto sumLoop = scf::ForOp::create(
        b, loc, firstBlock, blockCount, constant(1), ValueRange{out},
        [&](OpBuilder &nb, Location l, Value j, ValueRange carried) {
          BlockRange r = blockRange(nb, l, j);
          auto [offsets, sizes] = scoreSlice(nb, probs, r);
          Value part = tensor::ExtractSliceOp::create(nb, l, probs, offsets, sizes, unitStrides);
          Value next = builder->attentionWeightedSum(
              nb, l, part, blockRows(nb, l, op.getValues(), j, r), carried[0]);
          scf::YieldOp::create(nb, l, ValueRange{next});
        });
    return tensor::CollapseShapeOp::create(b, loc, divideRows(b, loc, sumLoop.getResult(0), sums),
                                           SmallVector<ReassociationIndices>{{0, 1, 2}});
  }
};

} // namespace

void mlir::quill::populateLowerPagedAttentionPatterns(
    RewritePatternSet &patterns, std::shared_ptr<const KernelBuilder> builder) {
  patterns.add<LowerPagedAttention>(patterns.getContext(), std::move(builder));
}
