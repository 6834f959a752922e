// The quill dialect's markers on functions and ops (declared as the
// dialect's discardable attributes in QuillBase.td), read and written
// through these helpers so that passes never spell attribute names.
#pragma once

#include "mlir/IR/Operation.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>

namespace mlir::quill {

/// `quill.kernel`: a kernel function made by quill-outline-kernels.
bool isKernel(Operation *function);
void setKernel(Operation *function);
void clearKernel(Operation *function);

/// `quill.warp_lanes`: the kernel's unit of work is run by a warp of this
/// many lanes.
std::optional<int64_t> warpLanes(Operation *function);
void setWarpLanes(Operation *function, int64_t lanes);
void clearWarpLanes(Operation *function);
/// Marks the kernel function around `op` as run by a warp of `lanes` per unit.
void markEnclosingWarpKernel(Operation *op, int64_t lanes);

/// `quill.units`: how a target splits an op's work into units instead of
/// the default.
enum class UnitSplit {
  Default,   ///< The op's own tiling (quill-outline-kernels).
  Rows,      ///< One unit per leading row (or element) of the result.
  QueryRows, ///< Attention over T query rows: (query row, kv head) pairs.
};
UnitSplit unitSplit(Operation *op);
void setUnitSplit(Operation *op, UnitSplit split);

} // namespace mlir::quill
