// Row assembly for the batch step: plans, position claims and row writing.
#include "runtime/scheduler/RowAssembly.h"

#include <algorithm>

namespace quill::scheduler {

std::vector<RowPlan> planRows(const PagedKVCache &cache, const SequenceList &live, int32_t rows,
                              bool prefillFirst) {
  std::vector<RowPlan> plans;
  int32_t used = 0;
  bool prefilling =
      std::any_of(live.begin(), live.end(), [](const auto &q) { return q->pending < 0; });
  bool decodeNow = !(prefillFirst && prefilling);
  for (size_t i = 0; i < live.size() && used < rows && decodeNow; ++i)
    if (live[i]->pending >= 0) {
      plans.push_back({i, 0, 1, true});
      ++used;
    }
  for (size_t i = 0; i < live.size() && used < rows; ++i) {
    const Sequence &q = *live[i];
    if (q.pending >= 0)
      continue;
    int32_t computed = cache.length(q.kv);
    int32_t count = std::min(q.promptLength - computed, rows - used);
    plans.push_back({i, 0, count, computed + count == q.promptLength});
    used += count;
  }
  return plans;
}

Status claimPositions(PagedKVCache &cache, const SequenceList &live, std::vector<RowPlan> &plans) {
  for (RowPlan &plan : plans) {
    const Sequence &q = *live[plan.live];
    auto first = cache.append(q.kv, plan.count);
    if (!first)
      return Status::error(
          "internal error: request " + std::to_string(q.group->index) +
          " ran out of the KV blocks admission reserved for it: " + first.message());
    plan.first = *first;
  }
  return Status::ok();
}

ErrorOr<AssembledRows> writeRows(const PagedKVCache &cache, const SequenceList &live,
                                 const std::vector<RowPlan> &plans, const RowBuffers &buffers) {
  const int32_t width = buffers.tableWidth;
  for (const RowPlan &plan : plans) {
    const Sequence &q = *live[plan.live];
    size_t entries = cache.blockTable(q.kv).size();
    if (entries > size_t(width))
      return Status::error("internal error: request " + std::to_string(q.group->index) + " holds " +
                           std::to_string(entries) + " KV blocks but a row's table has " +
                           std::to_string(width));
  }
  AssembledRows out;
  int32_t &row = out.rows;
  auto writeRow = [&](const Sequence &q, int32_t pos) {
    buffers.tokens[row] = pos < q.promptLength ? q.tokens[pos] : q.pending;
    buffers.positions[row] = pos;
    const std::vector<int32_t> &table = cache.blockTable(q.kv);
    int32_t *entries = buffers.tables + int64_t(row) * width;
    std::copy(table.begin(), table.end(), entries);
    std::fill(entries + table.size(), entries + width, PagedKVCache::kTrashBlock);
    ++row;
  };
  for (const RowPlan &plan : plans)
    if (plan.logits) {
      writeRow(*live[plan.live], plan.first + plan.count - 1);
      out.logitOwners.push_back(live[plan.live].get());
    }
  out.logitRows = row;
  for (const RowPlan &plan : plans) {
    const Sequence &q = *live[plan.live];
    int32_t last = plan.first + plan.count - (plan.logits ? 1 : 0);
    for (int32_t pos = plan.first; pos < last; ++pos)
      writeRow(q, pos);
    if (q.pending < 0)
      out.prefilledTokens += plan.count;
  }
  out.decodeOnly = out.logitRows == row && row == int32_t(plans.size()) &&
                   std::all_of(plans.begin(), plans.end(),
                               [&](const RowPlan &p) { return live[p.live]->pending >= 0; });
  return out;
}

} // namespace quill::scheduler
