// The server's counters, gauges and latency histograms, and their
// Prometheus text exposition (GET /metrics). Thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace quill::serve {

/// A Prometheus histogram with fixed upper bounds (seconds).
class Histogram {
public:
  static constexpr std::array<double, 14> kBounds = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                                     0.25,  0.5,    1,     2.5,  5,     10,   30};
  void observe(double seconds);
  /// NAME_bucket{le=...}, NAME_sum, NAME_count lines, with HELP and TYPE.
  std::string text(const std::string &name, const std::string &help) const;

private:
  std::array<int64_t, kBounds.size()> counts_{}; ///< Not cumulative.
  int64_t count_ = 0;
  double sum_ = 0;
};

class Metrics {
public:
  void countRequest(int status);
  void countTokens(int64_t prompt, int64_t generated);
  void observeTimeToFirstToken(double seconds);
  void observeInterTokenLatency(double seconds);
  /// What the engine sees after each round.
  void setGauges(int32_t running, int32_t waiting, int32_t blocksUsed, int32_t blocksFree);
  int32_t blocksUsed() const;
  std::string text() const;

private:
  mutable std::mutex mutex_;
  std::map<int, int64_t> requests_; ///< By HTTP status.
  int64_t promptTokens_ = 0, generatedTokens_ = 0;
  Histogram timeToFirstToken_, interTokenLatency_;
  int32_t running_ = 0, waiting_ = 0, blocksUsed_ = 0, blocksFree_ = 0;
};

} // namespace quill::serve
