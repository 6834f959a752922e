// quill.embedding(s) and quill.(paged_)kv_write -> reads of the table, slices
// of the cache.
#include "compiler/Conversion/QuillToLinalg/CacheAccess.h"
#include "compiler/Conversion/QuillToLinalg/LinalgBuilders.h"
#include "compiler/Conversion/QuillToLinalg/QuillToLinalg.h"
#include "compiler/Conversion/QuillToLinalg/WeightDecoding.h"
#include "dialects/Quill/IR/QuillDialect.h"

#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::quill;

namespace {

struct LowerEmbedding : OpRewritePattern<EmbeddingOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(EmbeddingOp op, PatternRewriter &rewriter) const override {
    // A rank-reducing slice: row `token` of the table, or a tile's elements
    // [b, e) of it.
    OpFoldResult first = rewriter.getIndexAttr(0);
    OpFoldResult width = rewriter.getIndexAttr(op.getTable().getType().getDimSize(1));
    if (op.isTiled()) {
      first = op.getTile()[0];
      width = arith::SubIOp::create(rewriter, op.getLoc(), op.getTile()[1], op.getTile()[0])
                  .getResult();
    }
    if (isEncodedWeight(op.getTable())) {
      // Only the one row is decoded.
      Value init = tensor::EmptyOp::create(rewriter, op.getLoc(), ArrayRef<OpFoldResult>{width},
                                           rewriter.getF32Type());
      Value row = decodedRow(rewriter, op.getLoc(), op.getTable(), op.getToken(), first, init);
      rewriter.replaceOp(op, castTo(rewriter, op.getLoc(), row, op.getType()));
      return success();
    }
    rewriter.replaceOpWithNewOp<tensor::ExtractSliceOp>(
        op, op.getType(), op.getTable(), ArrayRef<OpFoldResult>{op.getToken(), first},
        ArrayRef<OpFoldResult>{rewriter.getIndexAttr(1), width},
        ArrayRef<OpFoldResult>{rewriter.getIndexAttr(1), rewriter.getIndexAttr(1)});
    return success();
  }
};

struct LowerKVWrite : OpRewritePattern<KVWriteOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(KVWriteOp op, PatternRewriter &rewriter) const override {
    // One row at pos, or T rows at pos .. pos + T - 1; tiled, rows [b, e)
    // of them at pos + b.
    OpFoldResult at = op.getPos();
    Value source = op.getRow();
    if (op.isTiled()) {
      Location loc = op.getLoc();
      Value begin = op.getTile()[0];
      at = arith::AddIOp::create(rewriter, loc, op.getPos(), begin).getResult();
      Value count = arith::SubIOp::create(rewriter, loc, op.getTile()[1], begin);
      source = sliceRows(rewriter, loc, source, begin, count); // A tile of [T, width] rows.
    }
    // Rounded or quantized to the cache's element type.
    Value cache = op.getCache();
    Value updated =
        storeCacheRows(rewriter, op.getLoc(), source, elementTypeOf(cache), cacheStorage(cache),
                       ArrayRef<OpFoldResult>{at, rewriter.getIndexAttr(0)});
    rewriter.replaceOp(op, asCache(rewriter, op.getLoc(), cache.getType(), updated));
    return success();
  }
};

/// Row t into block tables[t, p / B], slot p mod B, for p = positions[t]:
/// one row at a time (rows of one sequence may share a block), the live
/// rows only.
struct LowerPagedKVWrite : OpRewritePattern<PagedKVWriteOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(PagedKVWriteOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    PatternRewriter &b = rewriter;
    auto rowsType = op.getRows().getType();
    int64_t count = rowsType.getDimSize(0), width = rowsType.getDimSize(1);
    int64_t blockSize = op.getCache().getType().getDimSize(1);
    auto index = [&](int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); };
    Value blockRows = index(blockSize);
    Type element = elementTypeOf(op.getCache());
    // The live rows only, where the step says how many.
    Value end = index(count);
    if (Value live = op.getLive())
      end = arith::MinUIOp::create(b, loc, live, end);
    auto loop = scf::ForOp::create(
        b, loc, index(0), end, index(1), ValueRange{cacheStorage(op.getCache())},
        [&](OpBuilder &nb, Location l, Value t, ValueRange carried) {
          auto toIndex = [&](Value v) {
            return arith::IndexCastOp::create(nb, l, nb.getIndexType(), v).getResult();
          };
          Value pos = toIndex(tensor::ExtractOp::create(nb, l, op.getPositions(), ValueRange{t}));
          Value entry = arith::DivUIOp::create(nb, l, pos, blockRows);
          Value slot = arith::RemUIOp::create(nb, l, pos, blockRows);
          Value block =
              toIndex(tensor::ExtractOp::create(nb, l, op.getTables(), ValueRange{t, entry}));
          Value row = tensor::ExtractSliceOp::create(
              nb, l, RankedTensorType::get({width}, nb.getF32Type()), op.getRows(),
              ArrayRef<OpFoldResult>{t, nb.getIndexAttr(0)},
              ArrayRef<OpFoldResult>{nb.getIndexAttr(1), nb.getIndexAttr(width)},
              ArrayRef<OpFoldResult>{nb.getIndexAttr(1), nb.getIndexAttr(1)});
          Value cache = storeCacheRows(nb, l, row, element, carried[0],
                                       ArrayRef<OpFoldResult>{block, slot, nb.getIndexAttr(0)});
          scf::YieldOp::create(nb, l, ValueRange{cache});
        });
    rewriter.replaceOp(op, asCache(rewriter, loc, op.getCache().getType(), loop.getResult(0)));
    return success();
  }
};

/// T tokens' rows: a gather, result[t, d] = table[tokens[t], d].
struct LowerEmbeddings : OpRewritePattern<EmbeddingsOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(EmbeddingsOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value table = op.getTable(), tokens = op.getTokens();
    auto tableType = cast<RankedTensorType>(table.getType());
    Value storage = weightStorage(table);
    // Token rows [begin, begin + rows): all, or a tile's.
    int64_t width = op.getType().getDimSize(1);
    Value begin;
    OpFoldResult rows = rewriter.getIndexAttr(op.getType().getDimSize(0));
    if (op.isTiled()) {
      begin = op.getTile()[0];
      rows = arith::SubIOp::create(rewriter, loc, op.getTile()[1], begin).getResult();
    }
    Value out = tensor::EmptyOp::create(rewriter, loc,
                                        ArrayRef<OpFoldResult>{rows, rewriter.getIndexAttr(width)},
                                        rewriter.getF32Type());
    Value result = buildElementwise(
        rewriter, loc, ValueRange{}, out, [&](OpBuilder &b, Location l, ValueRange) -> Value {
          Value t = linalg::IndexOp::create(b, l, 0);
          if (begin)
            t = arith::AddIOp::create(b, l, t, begin);
          Value d = linalg::IndexOp::create(b, l, 1);
          Value id = tensor::ExtractOp::create(b, l, tokens, ValueRange{t});
          Value row = arith::IndexCastOp::create(b, l, b.getIndexType(), id);
          return decodeWeightElement(b, l, storage, tableType, row, d);
        });
    rewriter.replaceOp(op, castTo(rewriter, loc, result, op.getType()));
    return success();
  }
};

} // namespace

void mlir::quill::populateLowerStatePatterns(RewritePatternSet &patterns) {
  patterns.add<LowerEmbedding, LowerEmbeddings, LowerKVWrite, LowerPagedKVWrite>(
      patterns.getContext());
}
