// Work shared by the 32 lanes of a GPU warp (a warp per unit of work):
// lane l takes elements l, l + 32, l + 64, ... (so a warp's loads are 128
// contiguous bytes), then the lanes' partial results meet in a butterfly.
// The building blocks (laneSum, warpCombine) and the kernels built from
// them: matrix-vector products and RMS scales (LaneMatVec.cpp), attention
// (LaneAttention.cpp). Each has an Emulate mode that computes the same
// values in the same order on one CPU thread, for tests without a GPU.
#pragma once

#include "mlir/IR/Builders.h"

#include <functional>

namespace mlir::quill {

/// How reductions inside matrix-vector kernels are spread.
enum class LaneMode {
  Gpu,     ///< The warp's 32 lanes share it: gpu.lane_id, gpu.shuffle xor.
  Emulate, ///< The same sums, in the same order, computed by one CPU thread.
};

/// Lanes of a warp on every NVIDIA GPU.
constexpr int64_t kWarpLanes = 32;

/// Adds the term of element k into the running f32 sum `acc`.
using LaneTerm = std::function<Value(OpBuilder &, Location, Value k, Value acc)>;

/// sum over k in [0, width) of `term`, as a warp computes it: each lane
/// keeps four interleaved partial sums when width is a multiple of 128
/// (independent loads in flight), one otherwise; then xor-butterfly steps
/// of 16, 8, 4, 2, 1 lanes. Every lane ends with the same (bitwise) sum,
/// and Emulate gives exactly Gpu's result.
Value laneSum(OpBuilder &b, Location loc, LaneMode mode, int64_t width, const LaneTerm &term);

/// Combines two lanes' values (f32 on the GPU, vector<32xf32> emulated).
using Combine = std::function<Value(OpBuilder &, Location, Value, Value)>;

/// The xor butterfly over 16, 8, 4, 2, 1 lanes: `value` is this lane's f32
/// (Gpu) or all 32 lanes' as a vector<32xf32> (Emulate); returns the f32
/// every lane ends with (Emulate: lane 0's, the same bits).
Value warpCombine(OpBuilder &b, Location loc, LaneMode mode, Value value, const Combine &combine);

/// Emulation: a loop over the 32 lanes carrying `initial` (e.g. a vector
/// of per-lane values), each iteration's `body` returning the next value.
Value overLanes(OpBuilder &b, Location loc, Value initial,
                function_ref<Value(OpBuilder &, Location, Value lane, Value lanes)> body);

/// W[firstRow : firstRow + rows] @ x into `init` ([rows]), each row a
/// laneSum.
Value laneMatVecRows(OpBuilder &b, Location loc, LaneMode mode, Value weight, Value input,
                     OpFoldResult firstRow, OpFoldResult rows, Value init);

/// X[T, K] @ W[firstRow : firstRow + rows]^T into `init` ([T, rows]), each
/// element a laneSum; with `liveRows`, only token rows [0, liveRows).
Value laneMatMulRows(OpBuilder &b, Location loc, LaneMode mode, Value weight, Value input,
                     OpFoldResult firstRow, OpFoldResult rows, Value liveRows, Value init);

/// buildRmsScales with each row's sum of squares a laneSum.
Value laneRmsScales(OpBuilder &b, Location loc, LaneMode mode, Value input, float eps);

/// Units [first, last) of `partial` (kv head k, chunk c) into `init`
/// ([last - first, group * (head_dim + 2)]), a warp per unit: lane l scores
/// the chunk's positions l, l + 32, ...; max and sum of exp meet in
/// butterflies; each lane sums the values of dimensions l, l + 32, ... over
/// the chunk's positions in order, and the warp shares the row so that
/// every lane holds (and stores) all of it. Needs chunk % 32 == 0.
Value laneAttentionPartial(OpBuilder &b, Location loc, LaneMode mode, Operation *partial,
                           Value first, Value last, Value init);

/// Units [first, last) of (query row, kv head) of a prefill's attention
/// (`op`, a quill.attention over [T, width] queries, tile_rows) into `init`
/// ([last - first, width / kv heads]), a warp per unit, each of the kv
/// head's query heads in turn: lane l runs an online
/// softmax over positions l, l + 32, ... up to the row's own (causal),
/// keeping its maximum, sum and weighted values; the lanes' maxima meet in
/// a butterfly, and each lane's sum and values, rescaled to it, in
/// butterflies too.
Value laneAttentionRows(OpBuilder &b, Location loc, LaneMode mode, Operation *op, Value first,
                        Value last, Value init);

} // namespace mlir::quill
