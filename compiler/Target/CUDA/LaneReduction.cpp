// Warp-shared reductions (see LaneReduction.h).
#include "compiler/Target/CUDA/LaneReduction.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace mlir::quill {

namespace {
/// Interleaved partial sums per lane where the width allows.
constexpr int64_t kAccumulators = 4;

Value index(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}

/// Lane `lane`'s partial sum: elements lane + 32 j.
Value lanePartial(OpBuilder &b, Location loc, Value lane, int64_t width, const LaneTerm &term) {
  Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0f));
  const int64_t stride = kWarpLanes * kAccumulators;
  if (width % stride != 0) {
    auto loop = scf::ForOp::create(
        b, loc, lane, index(b, loc, width), index(b, loc, kWarpLanes), ValueRange{zero},
        [&](OpBuilder &nb, Location l, Value k, ValueRange acc) {
          scf::YieldOp::create(nb, l, ValueRange{term(nb, l, k, acc[0])});
        });
    return loop.getResult(0);
  }
  // Accumulator u takes elements lane + 32 (4 i + u).
  SmallVector<Value> zeros(kAccumulators, zero);
  auto loop = scf::ForOp::create(
      b, loc, lane, index(b, loc, width), index(b, loc, stride), zeros,
      [&](OpBuilder &nb, Location l, Value k, ValueRange acc) {
        SmallVector<Value> next;
        for (int64_t u = 0; u < kAccumulators; ++u) {
          Value ku = u == 0 ? k : arith::AddIOp::create(nb, l, k, index(nb, l, u * kWarpLanes));
          next.push_back(term(nb, l, ku, acc[u]));
        }
        scf::YieldOp::create(nb, l, next);
      });
  Value low = arith::AddFOp::create(b, loc, loop.getResult(0), loop.getResult(1));
  Value high = arith::AddFOp::create(b, loc, loop.getResult(2), loop.getResult(3));
  return arith::AddFOp::create(b, loc, low, high);
}
} // namespace

Value warpCombine(OpBuilder &b, Location loc, LaneMode mode, Value value, const Combine &combine) {
  for (int32_t offset = kWarpLanes / 2; offset > 0; offset /= 2) {
    Value other;
    if (mode == LaneMode::Gpu) {
      other =
          gpu::ShuffleOp::create(b, loc, value, offset, int32_t(kWarpLanes), gpu::ShuffleMode::XOR)
              .getShuffleResult();
    } else {
      // Lane i takes lane i ^ offset, as shfl.xor does.
      SmallVector<int64_t> partner;
      for (int64_t i = 0; i < kWarpLanes; ++i)
        partner.push_back(i ^ offset);
      other = vector::ShuffleOp::create(b, loc, value, value, partner);
    }
    value = combine(b, loc, value, other);
  }
  if (mode == LaneMode::Gpu)
    return value;
  return vector::ExtractOp::create(b, loc, value, int64_t(0));
}

Value overLanes(OpBuilder &b, Location loc, Value initial,
                function_ref<Value(OpBuilder &, Location, Value lane, Value lanes)> body) {
  auto loop = scf::ForOp::create(
      b, loc, index(b, loc, 0), index(b, loc, kWarpLanes), index(b, loc, 1), ValueRange{initial},
      [&](OpBuilder &nb, Location l, Value lane, ValueRange carried) {
        scf::YieldOp::create(nb, l, ValueRange{body(nb, l, lane, carried[0])});
      });
  return loop.getResult(0);
}

Value laneSum(OpBuilder &b, Location loc, LaneMode mode, int64_t width, const LaneTerm &term) {
  auto add = [](OpBuilder &nb, Location l, Value x, Value y) -> Value {
    return arith::AddFOp::create(nb, l, x, y);
  };
  if (mode == LaneMode::Gpu) {
    Value lane = gpu::LaneIdOp::create(b, loc, b.getIndexAttr(kWarpLanes));
    return warpCombine(b, loc, mode, lanePartial(b, loc, lane, width, term), add);
  }
  // Emulate: the 32 partial sums in a vector, then the same butterfly.
  auto lanesType = VectorType::get({kWarpLanes}, b.getF32Type());
  Value initial = arith::ConstantOp::create(b, loc, DenseElementsAttr::get(lanesType, 0.0f));
  Value sums = overLanes(b, loc, initial, [&](OpBuilder &nb, Location l, Value lane, Value lanes) {
    Value partial = lanePartial(nb, l, lane, width, term);
    return vector::InsertOp::create(nb, l, partial, lanes, OpFoldResult(lane)).getResult();
  });
  return warpCombine(b, loc, mode, sums, add);
}

} // namespace mlir::quill
