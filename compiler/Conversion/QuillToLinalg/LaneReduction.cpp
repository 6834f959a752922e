// Warp-shared reductions (see LaneReduction.h).
#include "compiler/Conversion/QuillToLinalg/LaneReduction.h"

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

Value laneSum(OpBuilder &b, Location loc, LaneMode mode, int64_t width, const LaneTerm &term) {
  assert(mode != LaneMode::None && "laneSum needs a lane mode");
  if (mode == LaneMode::Gpu) {
    Value lane = gpu::LaneIdOp::create(b, loc, b.getIndexAttr(kWarpLanes));
    Value sum = lanePartial(b, loc, lane, width, term);
    for (int32_t offset = kWarpLanes / 2; offset > 0; offset /= 2) {
      Value other = gpu::ShuffleOp::create(b, loc, sum, offset, int32_t(kWarpLanes),
                                           gpu::ShuffleMode::XOR)
                        .getShuffleResult();
      sum = arith::AddFOp::create(b, loc, sum, other);
    }
    return sum;
  }
  // Emulate: the 32 partial sums in a vector, the butterfly as shuffles of
  // it (lane i adds lane i ^ offset, as shfl.xor does).
  auto lanesType = VectorType::get({kWarpLanes}, b.getF32Type());
  Value initial = arith::ConstantOp::create(b, loc, DenseElementsAttr::get(lanesType, 0.0f));
  auto lanes = scf::ForOp::create(
      b, loc, index(b, loc, 0), index(b, loc, kWarpLanes), index(b, loc, 1),
      ValueRange{initial}, [&](OpBuilder &nb, Location l, Value lane, ValueRange carried) {
        Value partial = lanePartial(nb, l, lane, width, term);
        scf::YieldOp::create(
            nb, l,
            ValueRange{vector::InsertOp::create(nb, l, partial, carried[0], OpFoldResult(lane))
                           .getResult()});
      });
  Value sums = lanes.getResult(0);
  for (int64_t offset = kWarpLanes / 2; offset > 0; offset /= 2) {
    SmallVector<int64_t> partner;
    for (int64_t i = 0; i < kWarpLanes; ++i)
      partner.push_back(i ^ offset);
    Value other = vector::ShuffleOp::create(b, loc, sums, sums, partner);
    sums = arith::AddFOp::create(b, loc, sums, other);
  }
  return vector::ExtractOp::create(b, loc, sums, int64_t(0));
}

void markWarpKernel(Operation *op) {
  if (auto kernel = op->getParentOfType<func::FuncOp>())
    kernel->setAttr(kWarpLanesAttr, OpBuilder(op).getI64IntegerAttr(kWarpLanes));
}

} // namespace mlir::quill
