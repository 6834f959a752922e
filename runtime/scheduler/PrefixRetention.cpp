// Prefix sharing and retention: donors for new prompts, prefixes kept for
// waiting ones, and their release.
#include "runtime/scheduler/PrefixRetention.h"

#include <algorithm>

namespace quill::scheduler {

std::optional<PrefixRetention::Donor> PrefixRetention::findDonor(const std::vector<int32_t> &prompt,
                                                                 const SequenceList &live) const {
  Donor donor;
  if (!enabled_)
    return donor;
  const int32_t blockSize = cache_.layout().blockSize;
  // The last prompt token always runs: its row yields the first logits.
  const int32_t shareable = static_cast<int32_t>(prompt.size()) - 1;
  for (const auto &q : live) {
    int32_t common = std::min(commonPrefix(prompt, q->tokens, q->promptLength), shareable);
    int32_t computed = cache_.length(q->kv);
    if (q->pending < 0 && common >= computed + blockSize)
      return std::nullopt;
    common = std::min(common, computed);
    if (common > donor.shared)
      donor = {q->kv, common};
  }
  for (const Held &h : held_) {
    int32_t common =
        std::min(commonPrefix(prompt, h.tokens, static_cast<int32_t>(h.tokens.size())), shareable);
    if (common > donor.shared)
      donor = {h.kv, common};
  }
  return donor;
}

void PrefixRetention::keep(const Sequence &q, WaitingPrompts waiting) {
  if (!enabled_)
    return;
  const int32_t blockSize = cache_.layout().blockSize;
  int32_t length = std::min(cache_.length(q.kv), q.promptLength), best = 0;
  for (size_t index : waiting.order) {
    const std::vector<int32_t> &prompt = waiting.prompts[index];
    best = std::max(best, std::min(commonPrefix(prompt, q.tokens, length),
                                   static_cast<int32_t>(prompt.size()) - 1));
  }
  best = best / blockSize * blockSize;
  bool covered = std::any_of(held_.begin(), held_.end(), [&](const Held &h) {
    return int32_t(h.tokens.size()) >= best && commonPrefix(h.tokens, q.tokens, best) == best;
  });
  if (best < blockSize || covered)
    return;
  PagedKVCache::SequenceId kv = cache_.fork(q.kv);
  cache_.truncate(kv, best);
  held_.push_back({kv, std::vector<int32_t>(q.tokens.begin(), q.tokens.begin() + best)});
}

void PrefixRetention::release(WaitingPrompts waiting, bool all) {
  const int32_t blockSize = cache_.layout().blockSize;
  for (size_t i = 0; i < held_.size();) {
    const std::vector<int32_t> &tokens = held_[i].tokens;
    bool useful = std::any_of(waiting.order.begin(), waiting.order.end(), [&](size_t index) {
      return commonPrefix(waiting.prompts[index], tokens, int32_t(tokens.size())) >= blockSize;
    });
    if (all || !useful) {
      cache_.free(held_[i].kv);
      held_.erase(held_.begin() + i);
    } else {
      ++i;
    }
  }
}

} // namespace quill::scheduler
