// Prefix sharing and retention: a new prompt starts from the KV blocks of the
// longest prefix it shares with a sequence in flight or a kept prefix, and a
// retiring sequence's whole prompt blocks are kept while a waiting prompt
// starts like them. Private to runtime/scheduler.
#pragma once

#include "runtime/scheduler/Sequence.h"

#include <deque>
#include <optional>

namespace quill::scheduler {

/// Prompts still waiting for admission: `order` indexes `prompts`.
struct WaitingPrompts {
  const std::vector<std::vector<int32_t>> &prompts;
  const std::deque<size_t> &order;
};

/// Owns the kept prefixes of one run: each a cache sequence (a fork of a
/// retired one, truncated to whole blocks) that keeps its blocks alive.
/// Sharing is copy-on-write: a prompt forks its donor and truncates the fork
/// to the positions they share.
class PrefixRetention {
public:
  /// A prefix kept for the prompts still waiting.
  struct Held {
    PagedKVCache::SequenceId kv;
    std::vector<int32_t> tokens; ///< Exactly the positions held.
  };
  /// The sequence a new prompt forks, and how many positions it shares.
  struct Donor {
    PagedKVCache::SequenceId kv = -1; ///< -1: none, the prompt starts empty.
    int32_t shared = 0;
  };

  /// Nothing is shared or kept unless `enabled` (BatchOptions::sharePrefixes).
  PrefixRetention(PagedKVCache &cache, bool enabled) : cache_(cache), enabled_(enabled) {}
  PrefixRetention(const PrefixRetention &) = delete;
  PrefixRetention &operator=(const PrefixRetention &) = delete;

  /// The donor of `prompt`: of the sequences in `live` (their positions
  /// computed so far) and the kept prefixes, the one sharing the most
  /// positions with it, at most all but its last token (whose row must run
  /// to yield the first logits). Nullopt when a sequence still in prefill
  /// will compute a whole block more of it: the prompt should wait rather
  /// than compute that block twice.
  std::optional<Donor> findDonor(const std::vector<int32_t> &prompt,
                                 const SequenceList &live) const;
  /// Before `q` is freed: keeps the whole blocks of its computed prompt that
  /// the most similar waiting prompt shares, unless a kept prefix already
  /// covers them (a held partial block would make its other owners copy it).
  void keep(const Sequence &q, WaitingPrompts waiting);
  /// Frees the kept prefixes no waiting prompt shares a whole block with;
  /// every one of them with `all`.
  void release(WaitingPrompts waiting, bool all);

  bool empty() const { return held_.empty(); }
  const std::vector<Held> &held() const { return held_; }

private:
  PagedKVCache &cache_;
  bool enabled_;
  std::vector<Held> held_;
};

} // namespace quill::scheduler
