// The sequences a batch run keeps in flight, the groups they belong to (one
// request each: one sequence, n samples or the beams of a search), and how a
// sequence is made: from a prompt, or forked from another of its group.
// Private to runtime/scheduler.
#pragma once

#include "runtime/decode/BeamSearch.h"
#include "runtime/scheduler/BatchScheduler.h"

#include <atomic>
#include <chrono>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace quill::scheduler {

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
/// Shared by its sequences; the last of them to end completes it.
struct Group {
  size_t index = 0;    ///< Into the requests.
  int32_t width = 1;   ///< Sequences it runs at once (samples or beams).
  int32_t live = 0;    ///< Its sequences in flight.
  bool forked = false; ///< The prompt's sequence has been forked into `width`.
  /// The request's interrupt flag (GenerationRequest::interrupt), or null.
  const std::atomic<bool> *interrupt = nullptr;
  bool interrupted() const { return interrupt && interrupt->load(std::memory_order_relaxed); }
  std::optional<BeamSearch> beams;
  /// Finished samples by index (n samples), or the prompt's timings (beams).
  std::vector<GenerationResult> results;
};

/// One sequence in flight. Owned by the run (through a SequenceList); its
/// KV cache sequence `kv` is freed when it retires.
struct Sequence {
  std::shared_ptr<Group> group;
  int32_t member = 0;          ///< Sample index, or beam slot.
  std::vector<int32_t> tokens; ///< The prompt, BOS included.
  int32_t promptLength = 0;
  int32_t maxPositions = 0; ///< The most positions it may write.
  PagedKVCache::SequenceId kv = -1;
  int32_t pending = -1; ///< Sampled, to be fed next step; -1 in prefill.
  GenerationResult result;
  std::optional<SamplerChain> sampler;
  std::optional<SequenceOutput> output; ///< Writes into `result`.
  Clock::time_point admitted, firstToken;
  std::string failure; ///< Why sampling failed (set by sampleNext(), reported after).
};

/// The sequences in flight, in admission order (forks after their parents).
using SequenceList = std::vector<std::unique_ptr<Sequence>>;

/// A sequence with logits this step, and its row of them.
using LogitRow = std::pair<Sequence *, const float *>;

/// Member `member` of `q`'s group with `q`'s tokens and limits, in a fork
/// of its KV cache sequence (blocks shared); no sampler or output yet.
std::unique_ptr<Sequence> forkState(PagedKVCache &cache, const Sequence &q, int32_t member);

/// Makes the sequences of one run, each with its own sampler chain (from the
/// factory, fed the prompt) and output rules (from its request).
class SequenceFactory {
public:
  SequenceFactory(const Tokenizer &tokenizer, const ModelConfig &config,
                  const SamplerFactory &samplers, const std::deque<GenerationRequest> &requests)
      : tokenizer_(tokenizer), config_(config), samplers_(samplers), requests_(requests) {}

  /// A candidate for admission: the first sequence of request `index`'s new
  /// group of `width`, holding `prompt` in `kv` (its shared prefix, if any).
  /// Not started: no sampler or output until admission takes it.
  static std::unique_ptr<Sequence> candidate(size_t index, int32_t width,
                                             const std::vector<int32_t> &prompt,
                                             int32_t maxPositions, PagedKVCache::SequenceId kv);
  /// Starts an admitted candidate: the first of its group to run, with
  /// sampler 0 of its request, fed the prompt.
  void start(Sequence &q) const;
  /// Member `member` of `q`'s group, forking `q`'s KV cache (sharing every
  /// block) and starting from its prompt with the member's own sampler.
  std::unique_ptr<Sequence> fork(PagedKVCache &cache, const Sequence &q, int32_t member) const;

  const ModelConfig &config() const { return config_; }
  const Tokenizer &tokenizer() const { return tokenizer_; }

private:
  const Tokenizer &tokenizer_;
  const ModelConfig &config_;
  const SamplerFactory &samplers_;
  const std::deque<GenerationRequest> &requests_;
};

} // namespace quill::scheduler
