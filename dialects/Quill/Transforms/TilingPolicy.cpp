// quill-outline-kernels' tiling policy: how each op's work splits into
// units that threads (or GPU threads) take.
#include "dialects/Quill/IR/QuillMarkers.h"
#include "dialects/Quill/Transforms/OutlineKernels.h"

#include <algorithm>

namespace mlir::quill {

namespace {

/// Whether `op` runs on a batch step's live token rows only (its `rows`).
bool hasLiveRows(Operation *op) {
  if (auto rope = dyn_cast<RoPEOp>(op))
    return bool(rope.getRows());
  if (auto norm = dyn_cast<RMSNormOp>(op))
    return bool(norm.getRows());
  return false;
}

/// How many units a row of quill.paged_attention splits into: slices of
/// its kv heads, at most 4, dividing them.
int64_t pagedAttentionSlices(int64_t kvHeads) {
  constexpr int64_t kMostSlices = 4;
  int64_t slices = std::min(kMostSlices, kvHeads);
  while (kvHeads % slices)
    --slices;
  return slices;
}

} // namespace

Tiling tilingOf(Operation *op, int64_t matvecGrain) {
  Tiling tiling;
  // A target's split (quill.units): a unit per leading row or element of
  // what would otherwise run whole (a prefill's token rows for rope, cache
  // writes and embeddings; the elements of merged attention, of a vector's
  // RMSNorm and of the decode embedding).
  if (unitSplit(op) == UnitSplit::Rows) {
    Value rows = isa<KVWriteOp>(op) ? Value(cast<KVWriteOp>(op).getRow()) : op->getResult(0);
    tiling.work = cast<RankedTensorType>(rows.getType()).getDimSize(0);
    tiling.rowsPerUnit = 1;
    tiling.leading = true;
    return tiling;
  }
  if (isa<LinearOp, LogitsOp, ProjectQKVOp>(op)) {
    auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
    int64_t rows = resultType.getDimSize(resultType.getRank() - 1);
    // A QKV projection rotates pairs of rows (and quantizes blocks of a
    // Q8_0 cache): its unit is a pair (or block), so no split of the work
    // (threads, GPU threads) can separate one. A weight stored in row
    // groups is read a whole group at a time: a unit holds whole groups.
    int64_t perUnit = 1;
    if (auto project = dyn_cast<ProjectQKVOp>(op))
      perUnit = project.getRowsPerUnit();
    else if (auto linear = dyn_cast<LinearOp>(op))
      perUnit = linear.getOutputsPerUnit();
    else
      perUnit = cast<LogitsOp>(op).getOutputsPerUnit();
    tiling.work = rows / perUnit;
    tiling.grain = std::max<int64_t>(1, std::min(matvecGrain, rows) / perUnit);
    tiling.rowsPerUnit = perUnit;
  } else if (auto partial = dyn_cast<AttentionPartialOp>(op)) {
    // One unit per kv head and chunk of positions: a row of the result.
    tiling.work = partial.getNumKvHeads() * partial.getChunks();
    tiling.rowsPerUnit = 1;
    tiling.leading = true;
  } else if (auto paged = dyn_cast<PagedAttentionOp>(op)) {
    // A few units per token row, each a slice of its kv heads, so that a
    // step of fewer live rows than threads (one sequence) still splits.
    // More slices cost more than they balance: on 110m (12 kv heads, 2
    // threads) one sequence's attention took 85 us whole, 54 in 2 slices,
    // 46 in 4 and 56 in 12, and 16 sequences' took the same in 1, 2 or 4.
    const int64_t slices = pagedAttentionSlices(paged.getNumKvHeads());
    tiling.work = paged.getQuery().getType().getDimSize(0) * slices;
    tiling.rowsPerUnit = 1;
    tiling.leading = true;
    tiling.liveRows = true;
    tiling.splitRows = slices;
  } else if (hasLiveRows(op)) {
    // A batch step's norm or rope: its rows split between threads, the
    // live ones only.
    tiling.work = cast<RankedTensorType>(op->getResult(0).getType()).getDimSize(0);
    tiling.rowsPerUnit = 1;
    tiling.leading = true;
    tiling.liveRows = true;
  } else if (auto attention = dyn_cast<AttentionOp>(op);
             attention && unitSplit(op) == UnitSplit::QueryRows &&
             attention.getQuery().getType().getRank() == 2) {
    // One unit per (query row, kv head) (tile_rows): row u / kv heads, the
    // query heads of kv head u mod kv heads.
    tiling.work = attention.getQuery().getType().getDimSize(0) * attention.getNumKvHeads();
    tiling.rowsPerUnit = 1;
    tiling.leading = true;
    tiling.splitRows = attention.getNumKvHeads();
  } else if (auto attention = dyn_cast<AttentionOp>(op)) {
    int64_t group = attention.getNumHeads() / attention.getNumKvHeads();
    tiling.work = attention.getNumKvHeads();
    tiling.rowsPerUnit = group * attention.getHeadDim();
  }
  return tiling;
}

} // namespace mlir::quill
