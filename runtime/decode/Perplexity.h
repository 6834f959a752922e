// Quality figures over a text, as llama.cpp's llama-perplexity reports them:
// perplexity in sliding windows, and the KL divergence from a base model.
// Evaluation only: it reads logits, never touches the model's math.
#pragma once

#include "runtime/device/Device.h"
#include "runtime/support/Error.h"

#include <cstdint>
#include <vector>

namespace quill {

/// One window of the sliding evaluation: tokens [start, end) run from an
/// empty cache; the tokens [firstScored, end) are scored, each from the
/// logits after the token before it.
struct EvalWindow {
  int32_t start = 0, firstScored = 1, end = 0;
};

/// The windows over `tokens` tokens: window k starts at k * stride and holds
/// up to `window` tokens; it scores the tokens the previous window did not
/// (the first window all but its first token; a window's own first token is
/// never scored, having no context in it). Errors: fewer than 2 tokens, a
/// window < 2, a stride outside [1, window].
ErrorOr<std::vector<EvalWindow>> evalWindows(int32_t tokens, int32_t window, int32_t stride);

/// log softmax(logits)[i] for every i, in double, with the maximum
/// subtracted first so no exponential overflows.
void logSoftmax(const float *logits, int32_t vocab, std::vector<double> &out);
/// KL(p || q) = sum_i p_i (log p_i - log q_i) over log-probabilities.
double klDivergence(const std::vector<double> &logP, const std::vector<double> &logQ);
/// The first index of the largest logit.
int32_t argmax(const float *logits, int32_t vocab);

/// exp(mean NLL) and its standard error by the delta method, as
/// llama-perplexity computes it: sqrt(var(NLL) / (n - 1)) * perplexity.
struct Perplexity {
  double value = 0, standardError = 0;
};
Perplexity perplexityOf(const std::vector<double> &nll);
/// The `fraction` quantile of `values`, linearly interpolated between the
/// sorted neighbours (llama-perplexity's percentile); 0 when empty.
double percentile(std::vector<double> values, double fraction);

/// Where the logits come from: a device, or a fake in the tests.
class LogitsSource {
public:
  virtual ~LogitsSource() = default;
  virtual int32_t vocabSize() const = 0;
  /// Starts a new sequence (an empty KV cache) with `count` tokens whose
  /// logits are not needed.
  virtual Status begin(const int32_t *tokens, int32_t count) = 0;
  /// Feeds one more token; the logits after it (valid until the next call).
  virtual ErrorOr<const float *> next(int32_t token) = 0;
};

/// A LogitsSource over a device: prefill chunks for the context, then steps.
class DeviceLogits : public LogitsSource {
public:
  explicit DeviceLogits(Device &device, int32_t vocab) : device_(device), vocab_(vocab) {}
  int32_t vocabSize() const override { return vocab_; }
  Status begin(const int32_t *tokens, int32_t count) override;
  ErrorOr<const float *> next(int32_t token) override;

private:
  Device &device_;
  int32_t vocab_;
};

struct QualityReport {
  std::vector<int32_t> scored; ///< The positions scored, in order.
  Perplexity perplexity;
  bool hasBase = false; ///< The figures below were measured.
  Perplexity basePerplexity;
  double klMean = 0, klP99 = 0; ///< KL(base || this) per scored position.
  double top1Agreement = 0;     ///< Fraction of positions whose argmaxes agree.
};

/// Runs `windows` over `tokens` through `model` (and `base` when not null,
/// whose vocabulary must be the same size) and measures the report.
ErrorOr<QualityReport> evaluateQuality(const std::vector<int32_t> &tokens,
                                       const std::vector<EvalWindow> &windows, LogitsSource &model,
                                       LogitsSource *base);

} // namespace quill
