// The engine loop and the exchanges it feeds.
#include "Engine.h"

#include "runtime/support/SplitMix64.h"

#include <algorithm>

namespace quill::serve {

// ---- Exchange -------------------------------------------------------------

void Exchange::waitUntil(Clock::time_point until) {
  std::unique_lock<std::mutex> lock(mutex_);
  cv_.wait_until(lock, until, [&] { return finished_ || !deltas_.empty(); });
}

std::vector<ChoiceDelta> Exchange::drain() {
  std::lock_guard<std::mutex> lock(mutex_);
  return std::exchange(deltas_, {});
}

bool Exchange::finished() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return finished_;
}

std::optional<ApiError> Exchange::error() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return error_;
}

Usage Exchange::usage() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return usage_;
}

void Exchange::post(ChoiceDelta delta) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    deltas_.push_back(std::move(delta));
  }
  cv_.notify_all();
}

void Exchange::finish(Usage usage, std::optional<ApiError> error) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    finished_ = true;
    usage_ = usage;
    error_ = std::move(error);
  }
  cv_.notify_all();
}

// ---- Engine ---------------------------------------------------------------

namespace {

const char *finishReason(StopReason stop) {
  return stop == StopReason::Eos || stop == StopReason::StopString ? "stop" : "length";
}

} // namespace

Engine::Engine(Device &device, PagedKVCache &cache, const Tokenizer &tokenizer,
               const ModelConfig &config, BatchOptions options, Metrics &metrics, int32_t maxQueue,
               double timeoutSeconds)
    : scheduler_(
          device, cache, tokenizer, config,
          // Sample s draws from its own stream, as quill-run's samples
          // do: sample 0 from the seed itself.
          [this, arena = options.arena](size_t ticket, int32_t sample) {
            SamplingParams p = sampling_.at(ticket);
            if (sample > 0)
              p.seed = splitMix64At(p.seed, uint64_t(sample));
            return SamplerChain::fromParams(p, arena);
          },
          options),
      config_(config), metrics_(metrics), maxQueue_(maxQueue), timeoutSeconds_(timeoutSeconds) {}

GenerationRequest Engine::requestFor(const CompletionSpec &spec,
                                     const std::vector<int32_t> &prompt) const {
  GenerationRequest r;
  r.promptTokens = prompt;
  int32_t room = std::max<int32_t>(0, config_.seqLen - int32_t(prompt.size()));
  r.maxNewTokens = spec.maxTokens ? std::min(*spec.maxTokens, room) : room;
  r.stopStrings = spec.stop;
  r.samples = spec.n;
  r.ignoreEos = spec.ignoreEos;
  return r;
}

std::optional<ApiError> Engine::check(const CompletionSpec &spec) const {
  for (const auto &prompt : spec.prompts)
    if (Status s = scheduler_.check(requestFor(spec, prompt), int32_t(prompt.size())); !s)
      return badRequest(s.message());
  return std::nullopt;
}

std::variant<std::shared_ptr<Exchange>, ApiError> Engine::start(CompletionSpec spec) {
  auto job = std::make_unique<Job>();
  job->exchange = std::make_shared<Exchange>();
  job->arrived = Clock::now();
  job->deadline = timeoutSeconds_ > 0
                      ? job->arrived + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(timeoutSeconds_))
                      : Clock::time_point::max();
  job->choices.resize(spec.prompts.size() * size_t(spec.n));
  job->spec = std::move(spec);
  std::shared_ptr<Exchange> exchange = job->exchange;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_)
      return ApiError{503, "the server is shutting down", "server_error", "", "shutting_down"};
    if (int32_t(inbox_.size()) + waiting_.load() >= maxQueue_)
      return ApiError{429,
                      "the queue is full (" + std::to_string(maxQueue_) +
                          " requests waiting): retry later",
                      "rate_limit_error", "", "queue_full"};
    inbox_.push_back(std::move(job));
  }
  cv_.notify_all();
  return exchange;
}

void Engine::wake() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    wake_ = true;
  }
  cv_.notify_all();
}

void Engine::stop(double graceSeconds) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    stopDeadline_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                       std::chrono::duration<double>(graceSeconds));
  }
  cv_.notify_all();
}

void Engine::submit(Job &job) {
  for (const auto &prompt : job.spec.prompts) {
    ServingScheduler::Ticket ticket = scheduler_.submit(requestFor(job.spec, prompt));
    sampling_[ticket] = job.spec.sampling;
    job.tickets.push_back(ticket);
  }
}

void Engine::postNew(Job &job, int32_t choice, const GenerationResult &result,
                     Clock::time_point now) {
  ChoiceState &state = job.choices[size_t(choice)];
  ChoiceDelta delta;
  delta.choice = choice;
  if (result.text.size() > state.textSent)
    delta.text = result.text.substr(state.textSent);
  size_t tokens = result.tokens.size();
  if (tokens > state.tokensSent) {
    delta.tokens.assign(result.tokens.begin() + long(state.tokensSent), result.tokens.end());
    if (result.logprobs.size() == tokens)
      delta.logprobs.assign(result.logprobs.begin() + long(state.tokensSent),
                            result.logprobs.end());
    delta.previousToken = state.tokensSent > 0
                              ? result.tokens[state.tokensSent - 1]
                              : (result.promptTokens.empty() ? -1 : result.promptTokens.back());
  }
  if (delta.text.empty() && delta.tokens.empty())
    return;
  if (!delta.tokens.empty()) {
    if (!job.anyToken)
      metrics_.observeTimeToFirstToken(std::chrono::duration<double>(now - job.arrived).count());
    job.anyToken = true;
    if (state.lastToken) {
      double gap = std::chrono::duration<double>(now - *state.lastToken).count();
      for (size_t i = 0; i < delta.tokens.size(); ++i)
        metrics_.observeInterTokenLatency(gap / double(delta.tokens.size()));
    }
    state.lastToken = now;
  }
  state.textSent = result.text.size();
  state.tokensSent = tokens;
  job.exchange->post(std::move(delta));
}

Usage Engine::usageOf(const Job &job) const {
  Usage usage;
  for (const auto &prompt : job.spec.prompts)
    usage.promptTokens += int64_t(prompt.size());
  for (const ChoiceState &c : job.choices)
    usage.completionTokens += int64_t(c.tokensSent);
  return usage;
}

void Engine::finishJob(Job &job, const char *forcedFinish, std::optional<ApiError> error) {
  const int32_t n = job.spec.n;
  auto now = Clock::now();
  std::vector<std::string> reasons(job.choices.size(), forcedFinish ? forcedFinish : "length");
  for (size_t p = 0; p < job.tickets.size(); ++p) {
    ServingScheduler::Ticket ticket = job.tickets[p];
    if (forcedFinish) {
      scheduler_.cancel(ticket, Status::error("cancelled"));
    } else {
      scheduler_.visitSamples(ticket, [&](int32_t sample, const GenerationResult &r) {
        postNew(job, int32_t(p) * n + sample, r, now);
      });
    }
    ErrorOr<GenerationResult> result = scheduler_.take(ticket);
    sampling_.erase(ticket);
    if (forcedFinish)
      continue;
    if (!result) {
      if (!error)
        error = ApiError{500, result.message(), "server_error", "", ""};
      continue;
    }
    if (result->sequences.empty())
      reasons[p * size_t(n)] = finishReason(result->stop);
    for (size_t s = 0; s < result->sequences.size(); ++s)
      reasons[p * size_t(n) + s] = finishReason(result->sequences[s].stop);
  }
  job.tickets.clear();
  for (size_t c = 0; c < job.choices.size(); ++c) {
    ChoiceDelta last;
    last.choice = int32_t(c);
    last.finishReason = reasons[c];
    job.exchange->post(std::move(last));
  }
  Usage usage = usageOf(job);
  metrics_.countTokens(usage.promptTokens, usage.completionTokens);
  job.exchange->finish(usage, std::move(error));
}

void Engine::sweep(Clock::time_point now) {
  bool stopping;
  Clock::time_point stopDeadline;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping = stopping_;
    stopDeadline = stopDeadline_;
  }
  auto ends = [&](Job &job) {
    if (job.exchange->cancelRequested()) {
      finishJob(job, "length", ApiError{499, "the client closed the connection", "", "", ""});
      return true;
    }
    if (now >= job.deadline || (stopping && now >= stopDeadline)) {
      // Out of time: what it has so far, ending with "length"; nothing yet
      // (still queued) is a 503.
      std::optional<ApiError> error;
      if (!job.anyToken)
        error = ApiError{503,
                         stopping ? "the server is shutting down"
                                  : "the request timed out before its first token",
                         "server_error", "", "timeout"};
      finishJob(job, "length", error);
      return true;
    }
    return false;
  };
  jobs_.erase(std::remove_if(jobs_.begin(), jobs_.end(),
                             [&](const std::unique_ptr<Job> &job) { return ends(*job); }),
              jobs_.end());
}

void Engine::publish(Clock::time_point now) {
  auto done = [&](Job &job) {
    const int32_t n = job.spec.n;
    bool all = true;
    for (size_t p = 0; p < job.tickets.size(); ++p) {
      ServingScheduler::Ticket ticket = job.tickets[p];
      if (scheduler_.done(ticket))
        continue;
      all = false;
      scheduler_.visitSamples(ticket, [&](int32_t sample, const GenerationResult &r) {
        postNew(job, int32_t(p) * n + sample, r, now);
      });
    }
    if (all)
      finishJob(job, nullptr, std::nullopt);
    return all;
  };
  jobs_.erase(std::remove_if(jobs_.begin(), jobs_.end(),
                             [&](const std::unique_ptr<Job> &job) { return done(*job); }),
              jobs_.end());
}

void Engine::run() {
  for (;;) {
    std::deque<std::unique_ptr<Job>> incoming;
    bool stopping;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      if (!scheduler_.busy())
        cv_.wait_for(lock, std::chrono::milliseconds(100),
                     [&] { return !inbox_.empty() || wake_ || stopping_; });
      incoming.swap(inbox_);
      wake_ = false;
      stopping = stopping_;
    }
    for (auto &job : incoming) {
      submit(*job);
      jobs_.push_back(std::move(job));
    }
    sweep(Clock::now());
    if (scheduler_.busy())
      (void)scheduler_.round(); // An internal error fails every request: publish tells.
    publish(Clock::now());
    const PagedKVCache &cache = scheduler_.cache();
    waiting_ = scheduler_.requestsWaiting();
    metrics_.setGauges(scheduler_.sequencesInFlight(), scheduler_.requestsWaiting(),
                       cache.usedBlocks(), cache.freeBlocks());
    if (stopping && jobs_.empty()) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (inbox_.empty())
        return;
    }
  }
}

} // namespace quill::serve
