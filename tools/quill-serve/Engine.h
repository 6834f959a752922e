// The engine thread: the one thread that drives the ServingScheduler. HTTP
// handler threads hand it requests and read their progress through an
// Exchange each; between batch steps it takes new requests in, cancels
// those whose client left or whose time ran out, runs one round and posts
// every choice's new text and tokens.
#pragma once

#include "ApiError.h"
#include "ChoiceDelta.h"
#include "CompletionRequest.h"
#include "Metrics.h"

#include "runtime/scheduler/ServingScheduler.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <variant>

namespace quill::serve {

using Clock = std::chrono::steady_clock;

/// One request's channel between its handler thread and the engine.
class Exchange {
public:
  // The handler's side.
  /// Waits until news (a delta or the end) or `until`.
  void waitUntil(Clock::time_point until);
  /// The deltas posted since the last call.
  std::vector<ChoiceDelta> drain();
  bool finished() const;
  /// Set when finished: why the request failed (before or after its first
  /// token), if it did.
  std::optional<ApiError> error() const;
  Usage usage() const;
  /// The client left: the engine cancels the request at its next round.
  void requestCancel() { cancel_ = true; }

  // The engine's side.
  bool cancelRequested() const { return cancel_; }
  void post(ChoiceDelta delta);
  void finish(Usage usage, std::optional<ApiError> error);

private:
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<ChoiceDelta> deltas_;
  bool finished_ = false;
  std::optional<ApiError> error_;
  Usage usage_;
  std::atomic<bool> cancel_{false};
};

class Engine {
public:
  Engine(Device &device, PagedKVCache &cache, const Tokenizer &tokenizer, const ModelConfig &config,
         BatchOptions options, Metrics &metrics, int32_t maxQueue, double timeoutSeconds);

  /// Why `spec` could never run here (a 400), from the scheduler's fixed
  /// limits; safe from any thread.
  std::optional<ApiError> check(const CompletionSpec &spec) const;
  /// Queues `spec`: its exchange, or 429 (the queue is full) or 503 (the
  /// server is stopping).
  std::variant<std::shared_ptr<Exchange>, ApiError> start(CompletionSpec spec);
  /// Wakes the engine for a cancel (Exchange::requestCancel).
  void wake();
  /// The engine thread's body: returns once stop() was called and every
  /// request has ended.
  void run();
  /// Takes no more requests; those in flight get `graceSeconds` to finish,
  /// then end as if timed out.
  void stop(double graceSeconds);

private:
  struct ChoiceState {
    size_t textSent = 0, tokensSent = 0;
    std::optional<Clock::time_point> lastToken;
  };
  struct Job {
    std::shared_ptr<Exchange> exchange;
    CompletionSpec spec;
    std::vector<ServingScheduler::Ticket> tickets; ///< One per prompt.
    std::vector<ChoiceState> choices;
    Clock::time_point arrived, deadline;
    bool anyToken = false;
  };

  GenerationRequest requestFor(const CompletionSpec &spec,
                               const std::vector<int32_t> &prompt) const;
  void submit(Job &job);
  /// Posts `result`'s text and tokens beyond what choice `choice` sent.
  void postNew(Job &job, int32_t choice, const GenerationResult &result, Clock::time_point now);
  /// Ends `job`: its tickets cancelled or taken, final deltas posted (with
  /// `forcedFinish` as every choice's reason when set), its exchange finished.
  void finishJob(Job &job, const char *forcedFinish, std::optional<ApiError> error);
  /// Cancellations, timeouts, the stop's deadline: which jobs end now.
  void sweep(Clock::time_point now);
  void publish(Clock::time_point now);
  Usage usageOf(const Job &job) const;

  ServingScheduler scheduler_;
  const ModelConfig &config_;
  Metrics &metrics_;
  const int32_t maxQueue_;
  const double timeoutSeconds_;
  /// Every request's sampling parameters, by ticket, for the sampler factory.
  std::unordered_map<ServingScheduler::Ticket, SamplingParams> sampling_;
  std::vector<std::unique_ptr<Job>> jobs_; ///< Engine thread only.

  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::unique_ptr<Job>> inbox_;
  bool wake_ = false;
  bool stopping_ = false;
  Clock::time_point stopDeadline_;
  std::atomic<int32_t> waiting_{0}; ///< Requests the scheduler has waiting.
};

} // namespace quill::serve
