// The state of one BatchScheduler::run(): the sequences in flight, their
// groups (n samples, beams) and the admission and step logic. Private to
// runtime/scheduler.
#pragma once

#include "runtime/decode/BeamSearch.h"
#include "runtime/scheduler/BatchScheduler.h"

#include <chrono>
#include <deque>
#include <memory>
#include <optional>

namespace quill {

using Clock = std::chrono::steady_clock;

inline double secondsBetween(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

/// Length of the common prefix of a and b[0, bLength).
inline int32_t commonPrefix(const std::vector<int32_t> &a, const std::vector<int32_t> &b,
                            int32_t bLength) {
  int32_t n = std::min<int32_t>(static_cast<int32_t>(a.size()), bLength);
  int32_t i = 0;
  while (i < n && a[i] == b[i])
    ++i;
  return i;
}

inline int32_t ceilDiv(int64_t a, int64_t b) { return static_cast<int32_t>((a + b - 1) / b); }

/// The sequences of one request: one, n samples, or the beams of a search.
struct BatchScheduler::Group {
  size_t index = 0;  ///< Into the requests.
  int32_t width = 1; ///< Sequences it runs at once (samples or beams).
  int32_t live = 0;  ///< Its sequences in flight.
  bool forked = false; ///< The prompt's sequence has been forked into `width`.
  std::optional<BeamSearch> beams;
  /// Finished samples by index (n samples), or the prompt's result (beams).
  std::vector<GenerationResult> results;
  std::vector<bool> done;
};

/// One sequence in flight.
struct BatchScheduler::Sequence {
  std::shared_ptr<Group> group;
  int32_t member = 0;               ///< Sample index, or beam slot.
  std::vector<int32_t> tokens;      ///< The prompt, BOS included.
  int32_t promptLength = 0;
  int32_t maxPositions = 0;         ///< The most positions it may write.
  PagedKVCache::SequenceId kv = -1;
  int32_t pending = -1;             ///< Sampled, to be fed next step; -1 in prefill.
  GenerationResult result;
  std::optional<SamplerChain> sampler;
  std::optional<SequenceOutput> output;
  Clock::time_point admitted, firstToken;
  std::string failure; ///< Why sampling failed (set by sample(), reported after).
};

/// Blocks kept for prompts still waiting that start like a finished one.
struct BatchScheduler::PrefixHolder {
  PagedKVCache::SequenceId kv;
  std::vector<int32_t> tokens; ///< Exactly the positions held.
};

/// The state of one run().
class BatchScheduler::Run {
public:
  Run(BatchScheduler &s, const std::vector<GenerationRequest> &requests, BatchStats &stats)
      : s_(s), requests_(requests), stats_(stats), results_(requests.size()),
        layout_(*s.device_.batchLayout()) {
    maxSequences_ = s.options_.maxSequences > 0 ? std::min(s.options_.maxSequences, layout_.rows)
                                                : layout_.rows;
  }

  std::vector<ErrorOr<GenerationResult>> execute();

private:
  /// Blocks a sequence may still take: new blocks up to its last position,
  /// plus a copy of its last block when that is shared and still filling;
  /// for a prompt not yet forked into its group, that many for every
  /// sequence of the group.
  int32_t futureBlocks(const Sequence &q) const;
  /// Whether the cache can take `q` on top of everything in flight.
  bool fits(const Sequence &q) const;
  /// Sequences the groups in flight may have at once (at most maxSequences_,
  /// so every decoding sequence gets a row each step).
  int32_t slotsInUse() const;
  void admit();
  /// Frees holders no waiting prompt can use (all of them with `all`).
  void releaseHolders(bool all);
  void step();
  /// Samples the next token of `q` from `logits`; returns whether it goes
  /// on. Touches only `q` (steps sample in parallel): a failure is left in
  /// q.failure.
  bool sample(Sequence &q, const float *logits);
  /// The prompt of a group of n samples has its logits: n - 1 forks, each
  /// sampling from them. New sequences go to `born`.
  void forkSamples(Sequence &root, const float *logits,
                   std::vector<std::unique_ptr<Sequence>> &born);
  /// One step of a beam search: its beams' logits rows, by beam.
  void stepBeams(Group &group, const std::vector<std::pair<Sequence *, const float *>> &rows,
                 std::vector<std::unique_ptr<Sequence>> &born, std::vector<Sequence *> &ended);
  /// A new sequence of `q`'s group sharing `q`'s KV cache (forked).
  std::unique_ptr<Sequence> forkOf(const Sequence &q, int32_t member);
  /// The group's request is done: its result, from its sequences.
  void completeGroup(Group &group);
  /// Removes ended sequences from live_, recording finished samples and
  /// keeping prefixes that waiting prompts share.
  void retire(const std::vector<Sequence *> &ended);
  void fail(size_t index, const std::string &message) {
    if (!results_[index])
      results_[index] = Status::error(message);
  }

  BatchScheduler &s_;
  const std::vector<GenerationRequest> &requests_;
  BatchStats &stats_;
  std::vector<std::optional<ErrorOr<GenerationResult>>> results_;
  const BatchLayout &layout_;
  int32_t maxSequences_;
  std::vector<std::vector<int32_t>> prompts_;
  std::deque<size_t> waiting_;
  std::vector<std::unique_ptr<Sequence>> live_;
  std::vector<PrefixHolder> holders_;
};

} // namespace quill
