// Attention for small heads (head_dim 8 or 16, as in stories260K), where
// the generic forms spend most of their time on head_dim-wide vectors: the
// scores sum each position's products horizontally (about ten instructions
// per position and head), and the weighted sum keeps its accumulators in
// memory. Here, per kv head: keys are read 8 positions at a time as one
// [8, head_dim] tile and transposed in registers, so each query head's 8
// scores are head_dim FMAs of broadcast query elements; the weighted sum
// carries one head_dim vector per query head in registers over the
// positions.
#include "compiler/Target/CPU/CpuKernelBuilder.h"

#include "compiler/Conversion/QuillToLinalg/CacheAccess.h"
#include "compiler/Conversion/QuillToLinalg/LinalgBuilders.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace mlir::quill {

namespace {
constexpr int64_t kPositions = 8; ///< Positions per key tile: one AVX2 vector of scores.
} // namespace

Value smallHeadScores(OpBuilder &b, Location loc, Value query, Value keys, Value init) {
  auto queryType = cast<RankedTensorType>(query.getType());
  const int64_t group = queryType.getDimSize(1);
  const int64_t headDim = queryType.getDimSize(2);
  if (headDim % 8 != 0 || headDim > 16 || ShapedType::isDynamic(group) || group > 8 ||
      isQuantizedCache(keys))
    return Value(); // The generic form.

  auto f32 = b.getF32Type();
  auto constant = [&](OpBuilder &nb, Location l, int64_t v) -> Value {
    return arith::ConstantIndexOp::create(nb, l, v);
  };
  Value units = tensor::DimOp::create(b, loc, query, 0);
  Value positions = tensor::DimOp::create(b, loc, keys, 0);
  Value tiles = arith::DivUIOp::create(
      b, loc, arith::AddIOp::create(b, loc, positions, constant(b, loc, kPositions - 1)),
      constant(b, loc, kPositions));
  // Keys are read in the cache's element type and widened in registers.
  Type element = elementTypeOf(keys);
  auto tileType = VectorType::get({kPositions, headDim}, element);
  auto rowType = VectorType::get({kPositions}, f32);
  Value padding = arith::ConstantOp::create(b, loc, b.getZeroAttr(element));
  Value zeros = arith::ConstantOp::create(b, loc, DenseElementsAttr::get(rowType, 0.0f));
  // Keys [position, kv head, d] read as [position, d] at one kv head.
  AffineMap keyTile =
      AffineMap::get(3, 0, {b.getAffineDimExpr(0), b.getAffineDimExpr(2)}, b.getContext());

  auto heads = scf::ForOp::create(
      b, loc, constant(b, loc, 0), units, constant(b, loc, 1), ValueRange{init},
      [&](OpBuilder &hb, Location hl, Value k, ValueRange headCarried) {
        // The query elements of this kv head's group, read once.
        SmallVector<Value> q;
        for (int64_t g = 0; g < group; ++g)
          for (int64_t d = 0; d < headDim; ++d)
            q.push_back(vector::BroadcastOp::create(
                hb, hl, rowType,
                tensor::ExtractOp::create(
                    hb, hl, query, ValueRange{k, constant(hb, hl, g), constant(hb, hl, d)})));
        auto tileLoop = scf::ForOp::create(
            hb, hl, constant(hb, hl, 0), tiles, constant(hb, hl, 1), ValueRange{headCarried[0]},
            [&](OpBuilder &tb, Location tl, Value tile, ValueRange carried) {
              Value t0 = arith::MulIOp::create(tb, tl, tile, constant(tb, tl, kPositions));
              // Past the last position: zeros read, nothing written.
              Value keysTile = vector::TransferReadOp::create(
                  tb, tl, tileType, keys, ValueRange{t0, k, constant(tb, tl, 0)},
                  AffineMapAttr::get(keyTile), padding, /*mask=*/Value(),
                  tb.getBoolArrayAttr({false, true}));
              Value byDim = vector::TransposeOp::create(tb, tl, widenToF32(tb, tl, keysTile),
                                                        ArrayRef<int64_t>{1, 0});
              Value scores = carried[0];
              for (int64_t g = 0; g < group; ++g) {
                Value acc = zeros;
                for (int64_t d = 0; d < headDim; ++d) {
                  Value column = vector::ExtractOp::create(tb, tl, byDim, ArrayRef<int64_t>{d});
                  acc = vector::FMAOp::create(tb, tl, q[g * headDim + d], column, acc);
                }
                scores = vector::TransferWriteOp::create(tb, tl, acc, scores,
                                                         ValueRange{k, constant(tb, tl, g), t0},
                                                         ArrayRef<bool>{false})
                             .getResult();
              }
              scf::YieldOp::create(tb, tl, ValueRange{scores});
            });
        scf::YieldOp::create(hb, hl, ValueRange{tileLoop.getResult(0)});
      });
  return heads.getResult(0);
}

Value smallHeadWeightedSum(OpBuilder &b, Location loc, Value probs, Value values, Value init) {
  auto probsType = cast<RankedTensorType>(probs.getType());
  const int64_t group = probsType.getDimSize(1);
  const int64_t headDim = cast<RankedTensorType>(init.getType()).getDimSize(2);
  if (headDim % 8 != 0 || headDim > 16 || ShapedType::isDynamic(group) || group > 8 ||
      isQuantizedCache(values))
    return Value(); // The generic form.

  auto f32 = b.getF32Type();
  auto constant = [&](OpBuilder &nb, Location l, int64_t v) -> Value {
    return arith::ConstantIndexOp::create(nb, l, v);
  };
  auto rowType = VectorType::get({headDim}, f32);
  Type element = elementTypeOf(values);
  Value padding = f32Constant(b, loc, 0.0f);
  Value valuePadding = arith::ConstantOp::create(b, loc, b.getZeroAttr(element));
  Value units = tensor::DimOp::create(b, loc, init, 0);
  Value positions = tensor::DimOp::create(b, loc, values, 0);
  // Values [position, kv head, d] read as a row of d at one kv head.
  AffineMap valueRow = AffineMap::get(3, 0, {b.getAffineDimExpr(2)}, b.getContext());
  auto heads = scf::ForOp::create(
      b, loc, constant(b, loc, 0), units, constant(b, loc, 1), ValueRange{init},
      [&](OpBuilder &hb, Location hl, Value k, ValueRange headCarried) {
        SmallVector<Value> start;
        for (int64_t g = 0; g < group; ++g)
          start.push_back(vector::TransferReadOp::create(
              hb, hl, rowType, headCarried[0],
              ValueRange{k, constant(hb, hl, g), constant(hb, hl, 0)}, padding,
              ArrayRef<bool>{true}));
        auto sums = scf::ForOp::create(
            hb, hl, constant(hb, hl, 0), positions, constant(hb, hl, 1), start,
            [&](OpBuilder &tb, Location tl, Value t, ValueRange acc) {
              Value row = widenToF32(
                  tb, tl,
                  vector::TransferReadOp::create(tb, tl, VectorType::get({headDim}, element),
                                                 values, ValueRange{t, k, constant(tb, tl, 0)},
                                                 AffineMapAttr::get(valueRow), valuePadding,
                                                 /*mask=*/Value(), tb.getBoolArrayAttr({true})));
              SmallVector<Value> next;
              for (int64_t g = 0; g < group; ++g) {
                Value p =
                    tensor::ExtractOp::create(tb, tl, probs, ValueRange{k, constant(tb, tl, g), t});
                next.push_back(vector::FMAOp::create(
                    tb, tl, vector::BroadcastOp::create(tb, tl, rowType, p), row, acc[g]));
              }
              scf::YieldOp::create(tb, tl, next);
            });
        Value out = headCarried[0];
        for (int64_t g = 0; g < group; ++g)
          out = vector::TransferWriteOp::create(
                    hb, hl, sums.getResult(g), out,
                    ValueRange{k, constant(hb, hl, g), constant(hb, hl, 0)}, ArrayRef<bool>{true})
                    .getResult();
        scf::YieldOp::create(hb, hl, ValueRange{out});
      });
  return heads.getResult(0);
}

} // namespace mlir::quill
