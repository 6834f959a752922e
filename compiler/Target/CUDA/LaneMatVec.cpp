// Matrix-vector products and RMS scales with warp-shared reductions: on the
// GPU a warp computes each output element, its lanes reading adjacent
// elements of the weight row (coalesced), instead of one thread per row.
#include "compiler/Conversion/QuillToLinalg/LinalgBuilders.h"
#include "compiler/Target/CUDA/LaneReduction.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

namespace mlir::quill {

namespace {
Value index(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}

/// sum_k W[row, k] * X[at..., k], shared by the warp.
Value laneDot(OpBuilder &b, Location loc, LaneMode mode, Value weight, Value row, Value input,
              ValueRange at) {
  int64_t width = cast<RankedTensorType>(weight.getType()).getDimSize(1);
  return laneSum(b, loc, mode, width, [&](OpBuilder &nb, Location l, Value k, Value acc) {
    Value w = tensor::ExtractOp::create(nb, l, weight, ValueRange{row, k});
    SmallVector<Value> xAt(at);
    xAt.push_back(k);
    Value x = tensor::ExtractOp::create(nb, l, input, xAt);
    return math::FmaOp::create(nb, l, w, x, acc).getResult();
  });
}

/// for i in [0, count): out[prefix..., i] = element(i).
Value fillRow(OpBuilder &b, Location loc, OpFoldResult count, Value out, ValueRange prefix,
              function_ref<Value(OpBuilder &, Location, Value)> element) {
  auto loop = scf::ForOp::create(
      b, loc, index(b, loc, 0), getValueOrCreateConstantIndexOp(b, loc, count), index(b, loc, 1),
      ValueRange{out}, [&](OpBuilder &nb, Location l, Value i, ValueRange carried) {
        SmallVector<Value> at(prefix);
        at.push_back(i);
        Value next = tensor::InsertOp::create(nb, l, element(nb, l, i), carried[0], at);
        scf::YieldOp::create(nb, l, ValueRange{next});
      });
  return loop.getResult(0);
}
} // namespace

Value laneMatVecRows(OpBuilder &b, Location loc, LaneMode mode, Value weight, Value input,
                     OpFoldResult firstRow, OpFoldResult rows, Value init) {
  Value first = getValueOrCreateConstantIndexOp(b, loc, firstRow);
  return fillRow(b, loc, rows, init, ValueRange{}, [&](OpBuilder &nb, Location l, Value i) {
    Value row = arith::AddIOp::create(nb, l, first, i);
    return laneDot(nb, l, mode, weight, row, input, ValueRange{});
  });
}

Value laneMatMulRows(OpBuilder &b, Location loc, LaneMode mode, Value weight, Value input,
                     OpFoldResult firstRow, OpFoldResult rows, Value liveRows, Value init) {
  int64_t tokens = cast<RankedTensorType>(input.getType()).getDimSize(0);
  Value count = index(b, loc, tokens);
  if (liveRows)
    count = arith::MinUIOp::create(b, loc, liveRows, count);
  Value first = getValueOrCreateConstantIndexOp(b, loc, firstRow);
  // Token by token: the warp's weight rows stay in cache between tokens.
  auto loop = scf::ForOp::create(
      b, loc, index(b, loc, 0), count, index(b, loc, 1), ValueRange{init},
      [&](OpBuilder &tb, Location tl, Value t, ValueRange carried) {
        Value out = fillRow(tb, tl, rows, carried[0], ValueRange{t},
                            [&](OpBuilder &nb, Location l, Value i) {
                              Value row = arith::AddIOp::create(nb, l, first, i);
                              return laneDot(nb, l, mode, weight, row, input, ValueRange{t});
                            });
        scf::YieldOp::create(tb, tl, ValueRange{out});
      });
  return loop.getResult(0);
}

Value laneRmsScales(OpBuilder &b, Location loc, LaneMode mode, Value input, float eps) {
  auto type = cast<RankedTensorType>(input.getType());
  int64_t width = type.getDimSize(type.getRank() - 1);
  // 1 / sqrt(sum / width + eps), in buildRmsScales' (llama2.c's) order.
  auto scaleOf = [&](OpBuilder &nb, Location l, ValueRange at) -> Value {
    Value sum = laneSum(nb, l, mode, width, [&](OpBuilder &ib, Location il, Value k, Value acc) {
      SmallVector<Value> xAt(at);
      xAt.push_back(k);
      Value x = tensor::ExtractOp::create(ib, il, input, xAt);
      return math::FmaOp::create(ib, il, x, x, acc).getResult();
    });
    Value mean = arith::DivFOp::create(nb, l, sum, f32Constant(nb, l, float(width)));
    Value shifted = arith::AddFOp::create(nb, l, mean, f32Constant(nb, l, eps));
    Value root = math::SqrtOp::create(nb, l, shifted);
    return arith::DivFOp::create(nb, l, f32Constant(nb, l, 1.0f), root);
  };
  if (type.getRank() == 1)
    return tensor::FromElementsOp::create(b, loc, RankedTensorType::get({}, b.getF32Type()),
                                          ValueRange{scaleOf(b, loc, ValueRange{})});
  assert(type.getRank() == 2 && "RMS scales of a vector or of token rows");
  OpFoldResult tokens = tensor::getMixedSize(b, loc, input, 0);
  Value init = tensor::EmptyOp::create(b, loc, ArrayRef<OpFoldResult>{tokens}, b.getF32Type());
  return fillRow(b, loc, tokens, init, ValueRange{},
                 [&](OpBuilder &nb, Location l, Value t) { return scaleOf(nb, l, ValueRange{t}); });
}

} // namespace mlir::quill
