// The sampler interface: a chain of small passes that narrows a step's
// logits down to one token, plus the deterministic vocabulary-wide loops the
// passes share.
//
// Threads: a SamplerChain belongs to one sequence and is not thread-safe; its
// vocabulary-wide loops may fan out onto the task_arena it was given.
// Determinism: loops split the vocabulary into fixed chunks and merge partial
// results in chunk order, so a seed gives bitwise the same tokens whether the
// arena has 1 thread, 2, or there is no arena at all.
// Memory: buffers grow to the largest vocabulary seen and are reused, so a
// steady-state sample() does not allocate (logprobs included).
#pragma once

#include "runtime/sampling/SamplingParams.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace quill {

class LogprobsRecorder;
struct StepLogprobs;

/// One token still in the running.
struct Candidate {
  int32_t id;
  float logit; ///< As transformed by the passes so far; never NaN.
  float p;     ///< Probability, meaningful only while Candidates::probsValid.
};

/// The working set a chain narrows down. Passes may reorder it and shrink
/// `size` (never grow it), and must keep the flags truthful.
struct Candidates {
  Candidate *data = nullptr;
  int32_t size = 0;
  /// data[0..size) has non-increasing logits.
  bool sorted = false;
  /// p holds softmax(logit) over exactly data[0..size). A pass that changes
  /// logits or drops candidates clears it.
  bool probsValid = false;
  /// Index into data of the chosen token, set by the selecting (last) pass.
  int32_t selected = -1;
  /// data[i].id == i for every i < size: the vocabulary in id order, so a
  /// pass can reach a token by its id. A pass that reorders or drops
  /// candidates clears it.
  bool byId = false;
};

/// The ranking every pass uses: higher logit first, then lower id. It is a
/// strict total order (ids are unique, NaN never occurs), so sorts and
/// argmax are deterministic.
inline bool ranksAbove(const Candidate &a, const Candidate &b) {
  if (a.logit != b.logit)
    return a.logit > b.logit;
  return a.id < b.id;
}

/// What the passes of one chain share: where vocabulary-wide loops run and
/// the scratch that makes their reductions deterministic.
class SamplerContext {
public:
  /// Ids per chunk. Fixed, so partial results do not depend on threads.
  static constexpr int32_t kChunkSize = 4096;
  /// Below this many candidates loops stay on the calling thread: the fan-out
  /// would cost more than it saves.
  static constexpr int32_t kMinParallelSize = 16384;

  /// arena may be null: loops then run on the calling thread.
  explicit SamplerContext(tbb::task_arena *arena = nullptr) : arena_(arena) {}

  tbb::task_arena *arena() const { return arena_; }

  static int32_t numChunks(int32_t n) {
    return static_cast<int32_t>((static_cast<int64_t>(n) + kChunkSize - 1) / kChunkSize);
  }

  /// Grows the per-chunk scratch to cover n candidates (allocates only when
  /// n exceeds every earlier n).
  void reserve(int32_t n);

  /// Calls fn(chunk, begin, end) for each fixed chunk of [0, n), in parallel
  /// when there is an arena and n is large. fn must only write state owned
  /// by its chunk (e.g. partialValues()[chunk]).
  template <typename Fn> void forEachChunk(int32_t n, const Fn &fn) const {
    const int32_t chunks = numChunks(n);
    auto runChunk = [&](int32_t chunk) {
      int64_t begin = static_cast<int64_t>(chunk) * kChunkSize;
      int64_t end = std::min<int64_t>(n, begin + kChunkSize);
      fn(chunk, static_cast<int32_t>(begin), static_cast<int32_t>(end));
    };
    if (!arena_ || n < kMinParallelSize) {
      for (int32_t chunk = 0; chunk < chunks; ++chunk)
        runChunk(chunk);
      return;
    }
    arena_->execute([&] {
      // Grain 1 with simple_partitioner: every chunk is its own task, so the
      // chunk boundaries never depend on the number of threads.
      tbb::parallel_for(
          tbb::blocked_range<int32_t>(0, chunks, 1),
          [&](const tbb::blocked_range<int32_t> &range) {
            for (int32_t chunk = range.begin(); chunk != range.end(); ++chunk)
              runChunk(chunk);
          },
          tbb::simple_partitioner());
    });
  }

  /// One slot per chunk, for sums and maxima; valid after reserve().
  double *partialValues() { return partialValues_.data(); }
  /// One slot per chunk, for argmax positions; valid after reserve().
  int32_t *partialIndices() { return partialIndices_.data(); }

private:
  tbb::task_arena *arena_;
  std::vector<double> partialValues_;
  std::vector<int32_t> partialIndices_;
};

/// Sets p = softmax(logit) over c and c.probsValid. Deterministic for any
/// thread count. Degenerate inputs stay well defined: +inf logits share all
/// the mass; if every logit is -inf, the best-ranked candidate gets it.
void computeProbabilities(Candidates &c, SamplerContext &ctx);

/// The position of the best-ranked candidate (highest logit, lowest id on
/// ties), or -1 when c is empty.
int32_t findBest(const Candidates &c, SamplerContext &ctx);

/// Sorts data[0..n) into ranksAbove order (best first), exactly as std::sort
/// with ranksAbove would, but by a stable radix sort on a 64-bit rank key
/// when n is large: a few thousand candidates sort several times faster
/// than through a two-branch comparison. scratch grows to n and is reused.
void sortByRank(Candidate *data, int32_t n, std::vector<Candidate> &scratch);

/// One step of turning logits into a token: a logit processor transforms the
/// candidate set; the last pass in a chain selects (sets c.selected).
class SamplerPass {
public:
  virtual ~SamplerPass();
  /// A short stable name, e.g. "top-p".
  virtual const char *name() const = 0;
  /// The name with its parameters, e.g. "top-p(0.9)".
  virtual std::string describe() const { return name(); }
  virtual void apply(Candidates &c, SamplerContext &ctx) = 0;
  /// True for a selector (sets c.selected); false for a logit processor.
  virtual bool selects() const { return false; }
  /// Observes a token of the sequence: each one the chain samples, and any
  /// the caller feeds (the prompt). Stateful passes (penalties) update here.
  virtual void accept(int32_t token) { (void)token; }
};

/// An ordered list of passes run over each step's logits. One chain per
/// sequence; not thread-safe.
class SamplerChain {
public:
  /// An empty chain; add() passes, the last of them selecting.
  explicit SamplerChain(tbb::task_arena *arena = nullptr);
  SamplerChain(SamplerChain &&);
  SamplerChain &operator=(SamplerChain &&);
  ~SamplerChain();

  /// The standard chain for params, which must pass validate():
  ///   [logit-bias] -> the processors of params.order whose knobs are on ->
  ///   greedy (temperature 0) or dist.
  /// The default order is penalties -> top-k -> top-p -> min-p ->
  /// temperature: the truncations cut the model's own distribution and the
  /// temperature reshapes what survives. Logit bias always runs first: it
  /// is the user's edit of the model's output (a ban must hold whatever
  /// follows). At temperature 0 only the processors that can move the
  /// argmax run (bias, penalties); truncations keep the best token anyway.
  /// Out-of-range values that slip past validate() degrade to "off" or
  /// greedy rather than misbehave. params.logprobs enables logprobs.
  static SamplerChain fromParams(const SamplingParams &params, tbb::task_arena *arena);

  /// Appends pass; returns *this for chaining.
  SamplerChain &add(std::unique_ptr<SamplerPass> pass);

  /// Pre-sizes the buffers for vocabSize so that even the first sample()
  /// does not allocate.
  void reserve(int32_t vocabSize);

  /// Runs the passes over logits[0..vocabSize) and returns the chosen id,
  /// which is then accept()ed. NaN logits count as -inf. If no pass selects,
  /// the best-ranked remaining candidate is returned. Returns -1 (and
  /// accepts nothing) for vocabSize <= 0, null logits, or when every
  /// candidate left after the processors is -inf: there is nothing to pick,
  /// and picking anyway would print garbage.
  int32_t sample(const float *logits, int32_t vocabSize);

  /// Runs the logit processors only (no selector, nothing accepted) and
  /// writes the processed logit of every id into out[0..vocabSize); ids a
  /// processor dropped get -inf. For searches that rank tokens themselves
  /// (beam search).
  void process(const float *logits, int32_t vocabSize, float *out);

  /// Makes every later sample() record the chosen token's log-probability
  /// and the topK best alternatives, from the raw logits or from the
  /// distribution the selector sees (after every processor). Without this
  /// call none of it is computed.
  void enableLogprobs(int32_t topK, LogprobsMode mode);

  /// The record of the last successful sample(), or null when logprobs are
  /// off or the last sample() returned -1. Valid until the next sample().
  const StepLogprobs *lastLogprobs() const;

  /// Feeds a token the chain did not sample (e.g. the prompt) to its passes.
  void accept(int32_t token);

  /// The passes in order, e.g. "top-k(40) -> temperature(0.8) -> dist(seed=1)".
  std::string describe() const;

  size_t numPasses() const { return passes_.size(); }
  const SamplerPass &pass(size_t i) const { return *passes_[i]; }

private:
  std::vector<std::unique_ptr<SamplerPass>> passes_;
  std::vector<Candidate> candidates_;
  SamplerContext ctx_;
  /// Null unless enableLogprobs() was called.
  std::unique_ptr<LogprobsRecorder> logprobs_;
  bool logprobsValid_ = false;
};

} // namespace quill
