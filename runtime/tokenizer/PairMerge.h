// The BPE merge loop both tokenizer kinds share: repeatedly merge the best
// adjacent pair, the leftmost on ties, until no pair merges.
#pragma once

#include <cstdint>
#include <optional>
#include <queue>
#include <vector>

namespace quill {

/// What merging one adjacent pair gives: its priority and the merged token.
template <typename Priority> struct PairMerge {
  Priority priority;
  int32_t result;
};

/// Merges adjacent pairs of `tokens` in place. At each step the pair whose
/// priority comes first by `mergesBefore(a, b)` (a strict weak order) merges,
/// the leftmost of equal ones; the merged token may then merge with its new
/// neighbours. `findMerge(leftToken, rightToken)` returns the pair's
/// PairMerge<Priority>, or nullopt when the pair does not merge.
///
/// The choice at every step is that of rescanning all pairs (quadratic), made
/// in O(n log n): a heap of candidate pairs over a doubly linked list of
/// positions. A merge keeps the left position and unlinks the right one;
/// version[] marks heap entries whose tokens changed since they were pushed.
/// Positions never reorder, so the original index orders pairs like a
/// left-to-right scan does.
template <typename Priority, typename FindMerge, typename MergesBefore>
void mergeAdjacentPairs(std::vector<int32_t> &tokens, FindMerge findMerge,
                        MergesBefore mergesBefore) {
  const int32_t n = static_cast<int32_t>(tokens.size());
  if (n < 2)
    return;

  std::vector<int32_t> prev(n), next(n);
  std::vector<uint32_t> version(n, 0);
  for (int32_t i = 0; i < n; ++i) {
    prev[i] = i - 1;
    next[i] = i + 1 < n ? i + 1 : -1;
  }

  struct Pair {
    Priority priority;
    int32_t left, right;
    int32_t result;
    uint32_t leftVersion, rightVersion;
  };
  auto lowerPriority = [&mergesBefore](const Pair &a, const Pair &b) {
    if (mergesBefore(b.priority, a.priority))
      return true;
    if (mergesBefore(a.priority, b.priority))
      return false;
    return a.left > b.left;
  };
  std::priority_queue<Pair, std::vector<Pair>, decltype(lowerPriority)> queue(lowerPriority);

  auto consider = [&](int32_t left, int32_t right) {
    std::optional<PairMerge<Priority>> merge = findMerge(tokens[left], tokens[right]);
    if (merge)
      queue.push({merge->priority, left, right, merge->result, version[left], version[right]});
  };

  for (int32_t i = 0; i + 1 < n; ++i)
    consider(i, i + 1);

  while (!queue.empty()) {
    Pair pair = queue.top();
    queue.pop();
    if (version[pair.left] != pair.leftVersion || version[pair.right] != pair.rightVersion ||
        next[pair.left] != pair.right)
      continue; // Stale: one side was merged since this pair was pushed.

    tokens[pair.left] = pair.result;
    ++version[pair.left];
    ++version[pair.right]; // The right position is gone for good.
    int32_t after = next[pair.right];
    next[pair.left] = after;
    if (after >= 0)
      prev[after] = pair.left;

    if (prev[pair.left] >= 0)
      consider(prev[pair.left], pair.left);
    if (after >= 0)
      consider(pair.left, after);
  }

  // Position 0 is never a right side, so the list always starts there.
  int32_t out = 0;
  for (int32_t i = 0; i >= 0; i = next[i])
    tokens[out++] = tokens[i];
  tokens.resize(out);
}

} // namespace quill
