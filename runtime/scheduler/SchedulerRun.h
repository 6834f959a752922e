// The state of one BatchScheduler::run(): the requests' queue, the sequences
// in flight and the kept prefixes, and the loop that admits, steps and
// retires them through the concerns of the files beside it. Private to
// runtime/scheduler.
#pragma once

#include "runtime/scheduler/PrefixRetention.h"
#include "runtime/scheduler/RowAssembly.h"
#include "runtime/scheduler/Sequence.h"

#include <deque>
#include <functional>
#include <optional>

namespace quill::scheduler {

/// One run of a BatchScheduler over its requests, or (online) the lifetime
/// of a ServingScheduler, whose requests come and go between rounds. Owns its
/// requests (each in a slot, reused once its result is taken), sequences and
/// kept prefixes, each holding a sequence of the cache.
class Run {
public:
  /// `online`: error messages do not name the request's slot.
  Run(Device &device, PagedKVCache &cache, const Tokenizer &tokenizer, const ModelConfig &config,
      const SamplerFactory &samplers, const BatchOptions &options, BatchStats &stats, bool online);
  ~Run();

  /// Runs `requests` to their end (the batch run, once); results in request
  /// order. A broken invariant (an internal error) ends the run: every
  /// request without a result yet gets that error.
  std::vector<ErrorOr<GenerationResult>> execute(const std::vector<GenerationRequest> &requests);

  /// Checks and tokenizes `request` and queues it, in a free slot (returned).
  /// A request that can never run has its error as its result at once.
  size_t add(GenerationRequest request);
  /// One round: admits what fits, then one batch step if anything is in
  /// flight. An internal error abandons every request (and is returned).
  Status round();
  /// Ends slot `slot`'s request now with `why` (unless it has a result): it
  /// leaves the queue, or its sequences are freed with their blocks.
  void cancel(size_t slot, const Status &why);
  /// Why `request`, whose prompt has `promptLength` tokens, could never
  /// run here, whatever else runs (see ServingScheduler::check); ok if it can.
  Status check(const GenerationRequest &request, int32_t promptLength) const;
  /// Whether anything waits or runs.
  bool busy() const { return !waiting_.empty() || !live_.empty(); }
  /// Calls `visit(sample, result so far)` for each sample of slot `slot`
  /// that is running or finished; nothing before its prompt's logits.
  void visitSamples(size_t slot,
                    const std::function<void(int32_t, const GenerationResult &)> &visit) const;
  /// Whether slot `slot` has its result.
  bool done(size_t slot) const { return results_[slot].has_value(); }
  /// The result of a done slot, which becomes free.
  ErrorOr<GenerationResult> take(size_t slot);
  int32_t sequencesInFlight() const { return static_cast<int32_t>(live_.size()); }
  int32_t requestsWaiting() const { return static_cast<int32_t>(waiting_.size()); }

private:
  /// Checks and tokenizes request `index`; queues it if it can run.
  void queueRequest(size_t index);
  /// Admits requests from the head of the queue while they fit.
  void admit();
  /// Records (with --trace) that request `index` waits, and why.
  void traceWait(size_t index, const char *reason);
  /// The cache sequence a new prompt starts in: a fork of `donor` cut to
  /// the positions they share, or an empty one.
  PagedKVCache::SequenceId startingSequence(const PrefixRetention::Donor &donor);
  /// With a sliding window: frees each live sequence's blocks that no later
  /// position attends to.
  void dropOutsideWindow();
  /// An admitted candidate's group gets its search or its result slots, and
  /// the candidate its sampler and output.
  void startGroup(Sequence &q, const GenerationRequest &request);
  /// One batch step: rows, the device, then the logits' consumers.
  Status step();
  /// Runs the device over the assembled rows; counts the step.
  void runBatchStep(const AssembledRows &rows);
  /// Every logit row sampled (a group's prompt forked first) or handed to
  /// its beam search; then the ended sequences retire.
  Status consumeLogits(const std::vector<Sequence *> &logitOwners);
  /// Removes ended sequences from live_, recording finished samples and
  /// keeping prefixes that waiting prompts share.
  void retire(const std::vector<Sequence *> &ended);
  /// The group's request is done: its result, from its sequences.
  void completeGroup(Group &group);
  /// Gives request `index` `error`, unless it already has a result.
  void fail(size_t index, const Status &error);
  /// Ends the run after an internal error: every request without a result
  /// gets it; every sequence and kept prefix is freed.
  void abandon(const Status &error);
  WaitingPrompts waiting() const { return {prompts_, waiting_}; }

  Device &device_;
  PagedKVCache &cache_;
  const Tokenizer &tokenizer_;
  const ModelConfig &config_;
  const BatchOptions &options_;
  std::deque<GenerationRequest> requests_; ///< By slot.
  std::vector<size_t> freeSlots_;
  BatchStats &stats_;
  bool online_;
  const BatchLayout &layout_;
  int32_t maxSequences_;
  SequenceFactory sequences_;
  std::vector<std::optional<ErrorOr<GenerationResult>>> results_;
  std::vector<std::vector<int32_t>> prompts_;
  std::deque<size_t> waiting_;
  SequenceList live_;
  PrefixRetention prefixes_;
};

} // namespace quill::scheduler
