// The state of one BatchScheduler::run(): the requests' queue, the sequences
// in flight and the kept prefixes, and the loop that admits, steps and
// retires them through the concerns of the files beside it. Private to
// runtime/scheduler.
#pragma once

#include "runtime/scheduler/PrefixRetention.h"
#include "runtime/scheduler/RowAssembly.h"
#include "runtime/scheduler/Sequence.h"

#include <deque>
#include <optional>

namespace quill::scheduler {

/// One run of a BatchScheduler over `requests`. Owns its sequences and kept
/// prefixes, each holding a sequence of the cache, all freed by the end of
/// execute(), which runs once.
class Run {
public:
  Run(Device &device, PagedKVCache &cache, const Tokenizer &tokenizer, const ModelConfig &config,
      const SamplerFactory &samplers, const BatchOptions &options,
      const std::vector<GenerationRequest> &requests, BatchStats &stats);

  /// Runs every request to its end; results in request order. A broken
  /// invariant (an internal error) ends the run: every request without a
  /// result yet gets that error.
  std::vector<ErrorOr<GenerationResult>> execute();

private:
  /// Checks and tokenizes every request; queues those that can run.
  void queueRequests();
  /// Admits requests from the head of the queue while they fit.
  void admit();
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
  const std::vector<GenerationRequest> &requests_;
  BatchStats &stats_;
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
