// Continuous batching for a server: requests arrive and leave between batch
// steps, instead of BatchScheduler::run's fixed list. The caller drives it
// one round (admission and one batch step) at a time from one thread, and
// reads each request's samples as they grow, to stream them.
#pragma once

#include "runtime/scheduler/BatchScheduler.h"

#include <functional>
#include <memory>

namespace quill {

namespace scheduler {
class Run;
}

/// Not thread-safe: one thread submits, cancels, runs rounds and reads.
/// The same rules as BatchScheduler: admission against the KV budget,
/// prefix sharing with the sequences in flight, and tokens that do not
/// depend on the other requests in the batch.
class ServingScheduler {
public:
  /// A request's handle, valid from submit() until take().
  using Ticket = size_t;

  /// `samplers` is called with a request's ticket when its sequences start.
  ServingScheduler(Device &device, PagedKVCache &cache, const Tokenizer &tokenizer,
                   const ModelConfig &config, SamplerFactory samplers, BatchOptions options = {});
  ~ServingScheduler();
  ServingScheduler(const ServingScheduler &) = delete;
  ServingScheduler &operator=(const ServingScheduler &) = delete;

  /// Queues `request`. One that can never run (a prompt longer than the
  /// context, a bad count) is done at once, with its error.
  Ticket submit(GenerationRequest request);
  /// Why `request` (its prompt `promptLength` tokens, BOS included) could
  /// never run, whatever else runs: a bad count, a prompt longer than the
  /// context, more samples than run at once, more KV blocks than the whole
  /// budget. Ok when it can; submit() would fail it with the same error.
  Status check(const GenerationRequest &request, int32_t promptLength) const;
  /// Ends the request now with `why` as its error: it leaves the queue, or
  /// its sequences and their KV blocks are freed. No-op once it is done.
  void cancel(Ticket ticket, const Status &why);
  /// Admits what fits, then runs one batch step if anything is in flight.
  /// An internal error ends every request with it and is returned.
  Status round();
  /// Whether a request waits or runs (else round() has nothing to do).
  bool busy() const;
  /// Each sample of the request so far: visit(sample index, its result
  /// with the tokens, text and logprobs it has). The text only grows
  /// (stop strings are held back until they cannot match).
  void visitSamples(Ticket ticket,
                    const std::function<void(int32_t, const GenerationResult &)> &visit) const;
  bool done(Ticket ticket) const;
  /// The result of a done request; the ticket is invalid afterwards.
  ErrorOr<GenerationResult> take(Ticket ticket);

  int32_t sequencesInFlight() const;
  int32_t requestsWaiting() const;
  const PagedKVCache &cache() const { return cache_; }
  /// Counters since construction (seconds and the decode-only figures are
  /// not kept).
  const BatchStats &stats() const { return stats_; }

private:
  PagedKVCache &cache_;
  SamplerFactory samplers_;
  BatchOptions options_;
  BatchStats stats_;
  std::unique_ptr<scheduler::Run> run_;
};

} // namespace quill
