// Row assembly for the batch step: which sequences get rows this step
// (decode rows first, then prompt chunks, chunked so that a long prompt never
// stalls the others), claiming their positions in the cache, and the token,
// position and block-table rows the device reads (rows needing logits first).
// Private to runtime/scheduler.
#pragma once

#include "runtime/scheduler/Sequence.h"

namespace quill::scheduler {

/// The rows of one sequence in a step: positions [first, first + count),
/// the last of them needing logits or not.
struct RowPlan {
  size_t live = 0;   ///< Into the SequenceList.
  int32_t first = 0; ///< Set by claimPositions().
  int32_t count = 0;
  bool logits = false;
};

/// Plans at most `rows` rows: one per decoding sequence (none while a prompt
/// is in prefill if `prefillFirst`), then the rest of each prompt in prefill
/// in order, as much as fits. A prompt's chunk needs logits when it ends the
/// prompt; a decode row always does.
std::vector<RowPlan> planRows(const PagedKVCache &cache, const SequenceList &live, int32_t rows,
                              bool prefillFirst);

/// Claims each plan's positions in the cache and sets its `first`. Admission
/// reserved every block they take, so running out here is an internal
/// error: it names the sequence and the cache's message.
Status claimPositions(PagedKVCache &cache, const SequenceList &live, std::vector<RowPlan> &plans);

/// Where the rows go: the device's batch input buffers.
struct RowBuffers {
  int32_t *tokens = nullptr;
  int32_t *positions = nullptr;
  int32_t *tables = nullptr; ///< tableWidth entries per row.
  int32_t tableWidth = 0;
};

/// The rows written for one step.
struct AssembledRows {
  int32_t rows = 0;                    ///< Rows written.
  int32_t logitRows = 0;               ///< The first rows, which get logits.
  std::vector<Sequence *> logitOwners; ///< The sequence of each logit row.
  int64_t prefilledTokens = 0;         ///< Prompt positions computed.
  /// Every row is a decode row (one per sequence, all with logits).
  bool decodeOnly = false;
};

/// Writes the claimed plans' rows: first the last row of every plan needing
/// logits (in plan order), then the other rows of each plan in position
/// order. A row's block table is its sequence's, padded with the reserved
/// block. Fails when a table is wider than `buffers.tableWidth` (an
/// internal error: no sequence holds more positions than the context).
ErrorOr<AssembledRows> writeRows(const PagedKVCache &cache, const SequenceList &live,
                                 const std::vector<RowPlan> &plans, const RowBuffers &buffers);

} // namespace quill::scheduler
