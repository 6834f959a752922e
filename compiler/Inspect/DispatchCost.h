// What one dispatch of a step computes and moves, read from its kernel at
// the "kernels" stage (the outlined quill ops): for the dispatch graph, the
// HTML report's kernel table and rooflines.
#pragma once

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Operation.h"

#include <cstdint>
#include <string>

namespace quill {

/// One dispatch's work. Attention's grows with the cached positions it
/// reads, so it is given per position as well.
struct DispatchCost {
  std::string op;                ///< The kernel's quill ops, e.g. "linear+rmsnorm+swiglu".
  std::string weightType;        ///< The weight's encoding ("q4_k", "f32"), or empty.
  double flops = 0;              ///< Products as 2 per multiply-add; a few per element elsewhere.
  double flopsPerPosition = 0;   ///< More per cached position (attention).
  uint64_t weightBytes = 0;      ///< Weight bytes read (an embedding: its rows only).
  uint64_t activationBytes = 0;  ///< Scratch and input bytes read or written.
  double kvBytesPerPosition = 0; ///< KV cache bytes read per cached position.
  uint64_t kvBytesWritten = 0;   ///< KV cache bytes written (this step's rows).

  /// FLOPs and bytes at `positions` cached positions (per row of a batch).
  double flopsAt(double positions) const { return flops + flopsPerPosition * positions; }
  double bytesAt(double positions) const {
    return double(weightBytes + activationBytes + kvBytesWritten) + kvBytesPerPosition * positions;
  }
};

/// The cost of `dispatch` (a quill.dispatch) launching `kernel`.
DispatchCost dispatchCost(mlir::Operation *dispatch, mlir::func::FuncOp kernel);

/// "1.5 MB", "768 B", "12.3 GFLOP": a figure with an SI prefix and `unit`.
std::string humanFigure(double value, const std::string &unit);

} // namespace quill
