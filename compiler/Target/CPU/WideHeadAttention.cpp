// Attention for heads of 24 or more dimensions (a multiple of 8: 32, 48,
// 64, 128), where the generic forms become scalar loops that LLVM
// vectorizes one position at a time, with the partial sums in memory. Here,
// per kv head and position: the key row is read once, in vectors of the
// cache's element type widened in registers, and each query head's score is
// a chain of FMAs over the row's vectors then one horizontal sum; the
// weighted sum carries every query head's head_dim accumulators in
// registers across the positions, each value row read once. A Q8_0 cache's
// rows are decoded block by block (fp16 scale, int8 vectors) in registers.
#include "compiler/Target/CPU/CpuKernelBuilder.h"

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
  auto heads = scf::ForOp::create(
      b, loc, indexConstant(b, loc, 0), units, indexConstant(b, loc, 1), ValueRange{init},
      [&](OpBuilder &hb, Location hl, Value k, ValueRange headCarried) {
        // This kv head's query heads, read once.
        SmallVector<Value> q = readHeads(hb, hl, query, k, group, headDim, lanes);
        auto positionLoop = scf::ForOp::create(
            hb, hl, indexConstant(hb, hl, 0), positions, indexConstant(hb, hl, 1),
            ValueRange{headCarried[0]},
            [&](OpBuilder &tb, Location tl, Value t, ValueRange carried) {
              SmallVector<Value> row = readRow(tb, tl, keys, t, k, headDim, lanes);
              Value scores = carried[0];
              for (int64_t g = 0; g < group; ++g) {
                Value acc = arith::MulFOp::create(tb, tl, q[g * chunks], row[0], fastMath);
                for (int64_t c = 1; c < chunks; ++c)
                  acc = vector::FMAOp::create(tb, tl, q[g * chunks + c], row[c], acc);
                Value score = vector::ReductionOp::create(tb, tl, vector::CombiningKind::ADD, acc,
                                                          /*acc=*/Value(), fastMath.getValue());
                scores = tensor::InsertOp::create(tb, tl, score, scores,
                                                  ValueRange{k, indexConstant(tb, tl, g), t});
              }
              scf::YieldOp::create(tb, tl, ValueRange{scores});
            });
        scf::YieldOp::create(hb, hl, ValueRange{positionLoop.getResult(0)});
      });
  return heads.getResult(0);
}

Value wideHeadWeightedSum(OpBuilder &b, Location loc, Value probs, Value values, Value init) {
  auto probsType = cast<RankedTensorType>(probs.getType());
  const int64_t group = probsType.getDimSize(1);
  const int64_t headDim = cast<RankedTensorType>(init.getType()).getDimSize(2);
  const int64_t lanes = laneCount(headDim, group);
  if (!lanes || group * (headDim / lanes) > kMaxAccumulators)
    return Value(); // The generic form.
  const int64_t chunks = headDim / lanes;
  auto vectorType = VectorType::get({lanes}, b.getF32Type());
  Value units = tensor::DimOp::create(b, loc, init, 0);
  Value positions = tensor::DimOp::create(b, loc, values, 0);
  auto heads = scf::ForOp::create(
      b, loc, indexConstant(b, loc, 0), units, indexConstant(b, loc, 1), ValueRange{init},
      [&](OpBuilder &hb, Location hl, Value k, ValueRange headCarried) {
        SmallVector<Value> start = readHeads(hb, hl, headCarried[0], k, group, headDim, lanes);
        auto sums = scf::ForOp::create(
            hb, hl, indexConstant(hb, hl, 0), positions, indexConstant(hb, hl, 1), start,
            [&](OpBuilder &tb, Location tl, Value t, ValueRange acc) {
              SmallVector<Value> row = readRow(tb, tl, values, t, k, headDim, lanes);
              SmallVector<Value> next;
              for (int64_t g = 0; g < group; ++g) {
                Value p = vector::BroadcastOp::create(
                    tb, tl, vectorType,
                    tensor::ExtractOp::create(tb, tl, probs,
                                              ValueRange{k, indexConstant(tb, tl, g), t}));
                for (int64_t c = 0; c < chunks; ++c)
                  next.push_back(vector::FMAOp::create(tb, tl, p, row[c], acc[g * chunks + c]));
              }
              scf::YieldOp::create(tb, tl, next);
            });
        Value out = headCarried[0];
        for (int64_t g = 0; g < group; ++g)
          for (int64_t c = 0; c < chunks; ++c)
            out = vector::TransferWriteOp::create(
                      hb, hl, sums.getResult(g * chunks + c), out,
                      ValueRange{k, indexConstant(hb, hl, g), indexConstant(hb, hl, c * lanes)},
                      ArrayRef<bool>{true})
                      .getResult();
        scf::YieldOp::create(hb, hl, ValueRange{out});
      });
  return heads.getResult(0);
}

} // namespace mlir::quill
