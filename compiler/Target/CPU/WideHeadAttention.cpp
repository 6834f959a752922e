// Attention for heads of 24 or more dimensions (a multiple of 8: 32, 48,
// 64, 128), where the generic forms become scalar loops that LLVM
// vectorizes one position at a time, with the partial sums in memory. Here,
// per tile of positions and kv head: each key row is read once, in vectors
// of the cache's element type widened in registers; each query head's
// partial products with it are a chain of FMAs over the row's vectors, and
// the tile's partials are summed together by a transpose-add tree into one
// vector of scores (in a horizontal sum's order). The weighted sum carries
// the head_dim accumulators of a span of kv heads in registers across the
// positions, each value row read once. A Q8_0 cache's rows are decoded
// block by block (fp16 scale, int8 vectors) in registers.
//
// The cache lies [position, kv head, d], so one head's rows are a head's
// width apart: walked head by head, every row is a new stream that the
// hardware prefetchers do not follow across pages (9 GB/s on one Zen 5
// core, against 25 for the same bytes in order). Positions outermost, with
// all the kv heads of a tile (scores) or of a span (sums) inside, read the
// cache nearly in order. Each score and each head's sum is the same
// chain of operations in the same order either way.
#include "compiler/Target/CPU/CpuKernelBuilder.h"
#include "compiler/Target/CPU/TransposedReduce.h"

#include "compiler/Conversion/QuillToLinalg/CacheAccess.h"
#include "compiler/Conversion/QuillToLinalg/LinalgBuilders.h"
#include "dialects/Quill/IR/QuillDialect.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace mlir::quill {

namespace {
/// The most query-head accumulator vectors the weighted sum keeps (AVX-512
/// has 32 registers; the row being read and the broadcasts need the rest).
constexpr int64_t kMaxAccumulators = 24;

/// The vector length a head of `headDim` is read in: 16 lanes where they
/// divide it, else 8; 0 where the shapes are not this kernel's.
int64_t laneCount(int64_t headDim, int64_t group) {
  if (ShapedType::isDynamic(group) || group > 16 || headDim <= 16 || headDim % 8 != 0)
    return 0;
  return headDim % 16 == 0 ? 16 : 8;
}

Value indexConstant(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}

/// The head_dim / lanes vectors of the Q8_0 head row (t, k) of `cache`
/// ([position, kv head, head bytes]) as f32: per block of 32, the fp16
/// scale from its two bytes, then int8 vectors converted and scaled.
SmallVector<Value> readQ8Row(OpBuilder &b, Location loc, Value cache, Value t, Value k,
                             int64_t headDim, int64_t lanes) {
  constexpr int64_t kBlockBytes = Q8_0Type::kBlockBytes, kBlock = Q8_0Type::kBlockElements;
  auto bytesType = VectorType::get({lanes}, b.getI8Type());
  auto f32Type = VectorType::get({lanes}, b.getF32Type());
  Value padding = arith::ConstantIntOp::create(b, loc, b.getI8Type(), 0);
  AffineMap row = AffineMap::get(3, 0, {b.getAffineDimExpr(2)}, b.getContext());
  auto byteAt = [&](int64_t offset) {
    Value v =
        tensor::ExtractOp::create(b, loc, cache, ValueRange{t, k, indexConstant(b, loc, offset)});
    return arith::ExtUIOp::create(b, loc, b.getI16Type(), v).getResult();
  };
  SmallVector<Value> vectors;
  for (int64_t block = 0; block < headDim / kBlock; ++block) {
    const int64_t base = block * kBlockBytes;
    Value bits = arith::OrIOp::create(
        b, loc, byteAt(base),
        arith::ShLIOp::create(b, loc, byteAt(base + 1),
                              arith::ConstantIntOp::create(b, loc, b.getI16Type(), 8)));
    Value half = arith::BitcastOp::create(b, loc, b.getF16Type(), bits);
    Value scale = vector::BroadcastOp::create(b, loc, f32Type,
                                              arith::ExtFOp::create(b, loc, b.getF32Type(), half));
    for (int64_t c = 0; c < kBlock / lanes; ++c) {
      Value q = vector::TransferReadOp::create(
          b, loc, bytesType, cache, ValueRange{t, k, indexConstant(b, loc, base + 2 + c * lanes)},
          AffineMapAttr::get(row), padding, /*mask=*/Value(), b.getBoolArrayAttr({true}));
      Value wide = arith::SIToFPOp::create(b, loc, f32Type, q);
      vectors.push_back(arith::MulFOp::create(b, loc, wide, scale));
    }
  }
  return vectors;
}

/// The head_dim / lanes vectors of row (t, k) of `cache` ([position, kv
/// head, head width]) as f32.
SmallVector<Value> readRow(OpBuilder &b, Location loc, Value cache, Value t, Value k,
                           int64_t headDim, int64_t lanes) {
  if (isQuantizedCache(cache))
    return readQ8Row(b, loc, cache, t, k, headDim, lanes);
  Type element = elementTypeOf(cache);
  auto type = VectorType::get({lanes}, element);
  Value padding = arith::ConstantOp::create(b, loc, b.getZeroAttr(element));
  AffineMap row = AffineMap::get(3, 0, {b.getAffineDimExpr(2)}, b.getContext());
  SmallVector<Value> vectors;
  for (int64_t c = 0; c < headDim / lanes; ++c)
    vectors.push_back(widenToF32(
        b, loc,
        vector::TransferReadOp::create(
            b, loc, type, cache, ValueRange{t, k, indexConstant(b, loc, c * lanes)},
            AffineMapAttr::get(row), padding, /*mask=*/Value(), b.getBoolArrayAttr({true}))));
  return vectors;
}
/// The group x head_dim / lanes f32 vectors of kv head `k` of `heads`
/// ([kv head, group, d]: the query, or the weighted sum's start), query
/// head by query head.
SmallVector<Value> readHeads(OpBuilder &b, Location loc, Value heads, Value k, int64_t group,
                             int64_t headDim, int64_t lanes) {
  auto type = VectorType::get({lanes}, b.getF32Type());
  Value zero = f32Constant(b, loc, 0.0f);
  SmallVector<Value> vectors;
  for (int64_t g = 0; g < group; ++g)
    for (int64_t c = 0; c < headDim / lanes; ++c)
      vectors.push_back(vector::TransferReadOp::create(
          b, loc, type, heads,
          ValueRange{k, indexConstant(b, loc, g), indexConstant(b, loc, c * lanes)}, zero,
          ArrayRef<bool>{true}));
  return vectors;
}

} // namespace

Value wideHeadScores(OpBuilder &b, Location loc, Value query, Value keys, Value init) {
  auto queryType = cast<RankedTensorType>(query.getType());
  const int64_t group = queryType.getDimSize(1), headDim = queryType.getDimSize(2);
  const int64_t lanes = laneCount(headDim, group);
  if (!lanes)
    return Value(); // The generic form.
  const int64_t chunks = headDim / lanes;
  auto fastMath = reductionFastMath(b);
  Value units = tensor::DimOp::create(b, loc, query, 0);
  Value positions = tensor::DimOp::create(b, loc, keys, 0);
  // Tiles of `lanes` positions, each kv head of a tile in turn: its rows
  // (a few KiB, read nearly in order) give one vector of scores per query
  // head. A last partial tile reads its last row again for the missing
  // lanes and stores only its own; every score is the same chain of
  // operations wherever it falls.
  Value tiles = arith::DivUIOp::create(
      b, loc, arith::AddIOp::create(b, loc, positions, indexConstant(b, loc, lanes - 1)),
      indexConstant(b, loc, lanes));
  Value last = arith::SubIOp::create(b, loc, positions, indexConstant(b, loc, 1));
  auto tileLoop = scf::ForOp::create(
      b, loc, indexConstant(b, loc, 0), tiles, indexConstant(b, loc, 1), ValueRange{init},
      [&](OpBuilder &tb, Location tl, Value tile, ValueRange tileCarried) {
        Value first = arith::MulIOp::create(tb, tl, tile, indexConstant(tb, tl, lanes));
        SmallVector<Value> rows;
        for (int64_t j = 0; j < lanes; ++j)
          rows.push_back(arith::MinUIOp::create(
              tb, tl, arith::AddIOp::create(tb, tl, first, indexConstant(tb, tl, j)), last));
        auto heads = scf::ForOp::create(
            tb, tl, indexConstant(tb, tl, 0), units, indexConstant(tb, tl, 1),
            ValueRange{tileCarried[0]},
            [&](OpBuilder &hb, Location hl, Value k, ValueRange carried) {
              SmallVector<Value> q = readHeads(hb, hl, query, k, group, headDim, lanes);
              Value scores = carried[0];
              for (int64_t g = 0; g < group; ++g) {
                SmallVector<Value> partials;
                for (Value t : rows) {
                  SmallVector<Value> row = readRow(hb, hl, keys, t, k, headDim, lanes);
                  Value acc = arith::MulFOp::create(hb, hl, q[g * chunks], row[0], fastMath);
                  for (int64_t c = 1; c < chunks; ++c)
                    acc = vector::FMAOp::create(hb, hl, q[g * chunks + c], row[c], acc);
                  partials.push_back(acc);
                }
                // One vector of the tile's scores (each lane's sum in the
                // order of a horizontal sum).
                Value sums = transposedReduce(
                    hb, hl, partials, lanes, [&](OpBuilder &rb, Location rl, Value x, Value y) {
                      return arith::AddFOp::create(rb, rl, x, y).getResult();
                    });
                scores = vector::TransferWriteOp::create(
                             hb, hl, sums, scores, ValueRange{k, indexConstant(hb, hl, g), first},
                             ArrayRef<bool>{false})
                             .getResult();
              }
              scf::YieldOp::create(hb, hl, ValueRange{scores});
            });
        scf::YieldOp::create(tb, tl, heads.getResults());
      });
  return tileLoop.getResult(0);
}

int64_t wideHeadRowBlock(int64_t group, int64_t headDim) {
  const int64_t lanes = laneCount(headDim, group);
  if (!lanes)
    return 1;
  // The rows' query heads are one group: at most 16 (laneCount), and one
  // accumulator per head and chunk.
  const int64_t rows = std::min(kMaxAccumulators / (group * (headDim / lanes)), 16 / group);
  return std::max<int64_t>(1, rows);
}

Value wideHeadWeightedSum(OpBuilder &b, Location loc, Value probs, Value values, Value init) {
  auto probsType = cast<RankedTensorType>(probs.getType());
  const int64_t group = probsType.getDimSize(1);
  const int64_t headDim = cast<RankedTensorType>(init.getType()).getDimSize(2);
  const int64_t lanes = laneCount(headDim, group);
  if (!lanes || group * (headDim / lanes) > kMaxAccumulators)
    return Value(); // The generic form.
  const int64_t chunks = headDim / lanes;
  // kv heads summed together: as many as keep their accumulators in
  // registers. Each position's value rows of those heads lie side by side,
  // so the cache is read in runs of span * head_dim elements rather than
  // one head's row per position.
  const int64_t span = std::max<int64_t>(1, kMaxAccumulators / (group * chunks));
  auto vectorType = VectorType::get({lanes}, b.getF32Type());
  Value units = tensor::DimOp::create(b, loc, init, 0);
  Value positions = tensor::DimOp::create(b, loc, values, 0);
  // The sums of kv heads [k0, k0 + count) over every position.
  auto sumHeads = [&](OpBuilder &hb, Location hl, Value k0, int64_t count, Value out) -> Value {
    SmallVector<Value> heads, start;
    for (int64_t i = 0; i < count; ++i) {
      heads.push_back(i ? arith::AddIOp::create(hb, hl, k0, indexConstant(hb, hl, i)).getResult()
                        : k0);
      llvm::append_range(start, readHeads(hb, hl, out, heads.back(), group, headDim, lanes));
    }
    auto sums = scf::ForOp::create(
        hb, hl, indexConstant(hb, hl, 0), positions, indexConstant(hb, hl, 1), start,
        [&](OpBuilder &tb, Location tl, Value t, ValueRange acc) {
          SmallVector<Value> next;
          for (int64_t i = 0; i < count; ++i) {
            SmallVector<Value> row = readRow(tb, tl, values, t, heads[i], headDim, lanes);
            for (int64_t g = 0; g < group; ++g) {
              Value p = vector::BroadcastOp::create(
                  tb, tl, vectorType,
                  tensor::ExtractOp::create(tb, tl, probs,
                                            ValueRange{heads[i], indexConstant(tb, tl, g), t}));
              for (int64_t c = 0; c < chunks; ++c)
                next.push_back(
                    vector::FMAOp::create(tb, tl, p, row[c], acc[(i * group + g) * chunks + c]));
            }
          }
          scf::YieldOp::create(tb, tl, next);
        });
    for (int64_t i = 0; i < count; ++i)
      for (int64_t g = 0; g < group; ++g)
        for (int64_t c = 0; c < chunks; ++c)
          out =
              vector::TransferWriteOp::create(
                  hb, hl, sums.getResult((i * group + g) * chunks + c), out,
                  ValueRange{heads[i], indexConstant(hb, hl, g), indexConstant(hb, hl, c * lanes)},
                  ArrayRef<bool>{true})
                  .getResult();
    return out;
  };
  // Whole spans of kv heads, then the rest one by one.
  Value spans = arith::DivUIOp::create(b, loc, units, indexConstant(b, loc, span));
  auto spanLoop = scf::ForOp::create(
      b, loc, indexConstant(b, loc, 0), spans, indexConstant(b, loc, 1), ValueRange{init},
      [&](OpBuilder &hb, Location hl, Value s, ValueRange carried) {
        Value k0 = arith::MulIOp::create(hb, hl, s, indexConstant(hb, hl, span));
        scf::YieldOp::create(hb, hl, sumHeads(hb, hl, k0, span, carried[0]));
      });
  Value done = arith::MulIOp::create(b, loc, spans, indexConstant(b, loc, span));
  auto restLoop =
      scf::ForOp::create(b, loc, done, units, indexConstant(b, loc, 1), spanLoop.getResults(),
                         [&](OpBuilder &hb, Location hl, Value k, ValueRange carried) {
                           scf::YieldOp::create(hb, hl, sumHeads(hb, hl, k, 1, carried[0]));
                         });
  return restLoop.getResult(0);
}

} // namespace mlir::quill
