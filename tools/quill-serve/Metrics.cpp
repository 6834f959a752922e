// Prometheus text format 0.0.4: HELP, TYPE, then the samples.
#include "Metrics.h"

#include <cstdio>

namespace quill::serve {

namespace {

std::string number(double x) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.17g", x);
  return buffer;
}

std::string series(const std::string &name, const std::string &type, const std::string &help,
                   const std::string &samples) {
  return "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n" + samples;
}

} // namespace

void Histogram::observe(double seconds) {
  size_t i = 0;
  while (i < kBounds.size() && seconds > kBounds[i])
    ++i;
  if (i < kBounds.size())
    ++counts_[i];
  ++count_;
  sum_ += seconds;
}

std::string Histogram::text(const std::string &name, const std::string &help) const {
  std::string samples;
  int64_t cumulative = 0;
  for (size_t i = 0; i < kBounds.size(); ++i) {
    cumulative += counts_[i];
    samples +=
        name + "_bucket{le=\"" + number(kBounds[i]) + "\"} " + std::to_string(cumulative) + "\n";
  }
  samples += name + "_bucket{le=\"+Inf\"} " + std::to_string(count_) + "\n";
  samples += name + "_sum " + number(sum_) + "\n";
  samples += name + "_count " + std::to_string(count_) + "\n";
  return series(name, "histogram", help, samples);
}

void Metrics::countRequest(int status) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++requests_[status];
}

void Metrics::countTokens(int64_t prompt, int64_t generated) {
  std::lock_guard<std::mutex> lock(mutex_);
  promptTokens_ += prompt;
  generatedTokens_ += generated;
}

void Metrics::observeTimeToFirstToken(double seconds) {
  std::lock_guard<std::mutex> lock(mutex_);
  timeToFirstToken_.observe(seconds);
}

void Metrics::observeInterTokenLatency(double seconds) {
  std::lock_guard<std::mutex> lock(mutex_);
  interTokenLatency_.observe(seconds);
}

void Metrics::setGauges(int32_t running, int32_t waiting, int32_t blocksUsed, int32_t blocksFree) {
  std::lock_guard<std::mutex> lock(mutex_);
  running_ = running;
  waiting_ = waiting;
  blocksUsed_ = blocksUsed;
  blocksFree_ = blocksFree;
}

int32_t Metrics::blocksUsed() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return blocksUsed_;
}

std::string Metrics::text() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::string requests;
  for (const auto &[status, count] : requests_)
    requests += "quill_requests_total{status=\"" + std::to_string(status) + "\"} " +
                std::to_string(count) + "\n";
  auto gauge = [](const char *name, const char *help, int64_t value) {
    return series(name, "gauge", help, std::string(name) + " " + std::to_string(value) + "\n");
  };
  auto counter = [](const char *name, const char *help, int64_t value) {
    return series(name, "counter", help, std::string(name) + " " + std::to_string(value) + "\n");
  };
  return series("quill_requests_total", "counter", "HTTP requests answered, by status.", requests) +
         counter("quill_prompt_tokens_total", "Prompt tokens of completed requests.",
                 promptTokens_) +
         counter("quill_generation_tokens_total", "Tokens generated.", generatedTokens_) +
         gauge("quill_sequences_running", "Sequences in the running batch.", running_) +
         gauge("quill_requests_waiting", "Requests waiting for admission.", waiting_) +
         gauge("quill_kv_blocks_used", "KV-cache blocks in use.", blocksUsed_) +
         gauge("quill_kv_blocks_free", "KV-cache blocks free.", blocksFree_) +
         timeToFirstToken_.text("quill_time_to_first_token_seconds",
                                "From a request's arrival to its first token.") +
         interTokenLatency_.text("quill_inter_token_latency_seconds",
                                 "Between a sequence's successive tokens.");
}

} // namespace quill::serve
