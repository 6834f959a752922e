// Sliding-window perplexity and KL divergence over the logits of a source.
#include "runtime/decode/Perplexity.h"

#include "runtime/device/FeedTokens.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace quill {

ErrorOr<std::vector<EvalWindow>> evalWindows(int32_t tokens, int32_t window, int32_t stride) {
  if (tokens < 2)
    return Status::error("the text has " + std::to_string(tokens) +
                         " tokens: at least 2 are needed to score one");
  if (window < 2)
    return Status::error("a window of " + std::to_string(window) +
                         " tokens scores nothing: it must hold at least 2");
  if (stride < 1 || stride > window)
    return Status::error("the stride " + std::to_string(stride) + " must be in [1, " +
                         std::to_string(window) + "] (the window)");
  std::vector<EvalWindow> windows;
  int32_t scoredEnd = 0; // Tokens before this one are scored (or skipped).
  for (int64_t start = 0; scoredEnd < tokens; start += stride) {
    EvalWindow w;
    w.start = static_cast<int32_t>(start);
    w.end = static_cast<int32_t>(std::min<int64_t>(start + window, tokens));
    w.firstScored = std::max(scoredEnd, w.start + 1);
    scoredEnd = w.end;
    if (w.firstScored < w.end)
      windows.push_back(w);
  }
  return windows;
}

void logSoftmax(const float *logits, int32_t vocab, std::vector<double> &out) {
  out.resize(vocab);
  double max = -INFINITY;
  for (int32_t i = 0; i < vocab; ++i)
    max = std::max(max, double(logits[i]));
  double sum = 0;
  for (int32_t i = 0; i < vocab; ++i)
    sum += std::exp(double(logits[i]) - max);
  // (x - max) - log(sum), not x - (max + log(sum)): the latter loses the
  // log when max is large.
  const double logSum = std::log(sum);
  for (int32_t i = 0; i < vocab; ++i)
    out[i] = (double(logits[i]) - max) - logSum;
}

double klDivergence(const std::vector<double> &logP, const std::vector<double> &logQ) {
  double kl = 0;
  for (size_t i = 0; i < logP.size(); ++i)
    if (logP[i] > -INFINITY) // 0 * log 0 = 0.
      kl += std::exp(logP[i]) * (logP[i] - logQ[i]);
  return kl;
}

int32_t argmax(const float *logits, int32_t vocab) {
  return static_cast<int32_t>(std::max_element(logits, logits + vocab) - logits);
}

Perplexity perplexityOf(const std::vector<double> &nll) {
  Perplexity p;
  if (nll.empty())
    return p;
  const double n = double(nll.size());
  double sum = 0, sumSquares = 0;
  for (double x : nll)
    sum += x, sumSquares += x * x;
  const double mean = sum / n;
  const double variance = sumSquares / n - mean * mean;
  p.value = std::exp(mean);
  if (nll.size() > 1 && variance > 0)
    p.standardError = std::sqrt(variance / (n - 1)) * p.value;
  return p;
}

double percentile(std::vector<double> values, double fraction) {
  if (values.empty())
    return 0;
  std::sort(values.begin(), values.end());
  if (fraction <= 0)
    return values.front();
  if (fraction >= 1)
    return values.back();
  double p = fraction * double(values.size() - 1);
  size_t low = size_t(p);
  p -= double(low);
  return (1 - p) * values[low] + p * values[std::min(low + 1, values.size() - 1)];
}

Status DeviceLogits::begin(const int32_t *tokens, int32_t count) {
  device_.kvCache().clear();
  return feedTokens(device_, tokens, count);
}

ErrorOr<const float *> DeviceLogits::next(int32_t token) {
  if (Status s = feedTokens(device_, &token, 1); !s)
    return s;
  return device_.logits();
}

ErrorOr<QualityReport> evaluateQuality(const std::vector<int32_t> &tokens,
                                       const std::vector<EvalWindow> &windows, LogitsSource &model,
                                       LogitsSource *base) {
  const int32_t vocab = model.vocabSize();
  if (base && base->vocabSize() != vocab)
    return Status::error("the base model's vocabulary has " + std::to_string(base->vocabSize()) +
                         " tokens, this one's " + std::to_string(vocab) +
                         ": KL divergence needs the same tokenizer");
  QualityReport report;
  report.hasBase = base != nullptr;
  std::vector<double> nll, baseNll, kl, logP, baseLogP;
  int64_t agree = 0;
  for (const EvalWindow &w : windows) {
    // The context before the first scored token's predecessor needs no logits.
    const int32_t *context = tokens.data() + w.start;
    const int32_t contextLength = w.firstScored - 1 - w.start;
    if (Status s = model.begin(context, contextLength); !s)
      return s;
    if (base)
      if (Status s = base->begin(context, contextLength); !s)
        return s;
    for (int32_t pos = w.firstScored; pos < w.end; ++pos) {
      auto logits = model.next(tokens[pos - 1]);
      if (!logits)
        return logits.status();
      logSoftmax(*logits, vocab, logP);
      nll.push_back(-logP[tokens[pos]]);
      report.scored.push_back(pos);
      if (!base)
        continue;
      const int32_t top = argmax(*logits, vocab);
      auto baseLogits = base->next(tokens[pos - 1]);
      if (!baseLogits)
        return baseLogits.status();
      logSoftmax(*baseLogits, vocab, baseLogP);
      baseNll.push_back(-baseLogP[tokens[pos]]);
      kl.push_back(klDivergence(baseLogP, logP));
      agree += argmax(*baseLogits, vocab) == top;
    }
  }
  report.perplexity = perplexityOf(nll);
  if (base) {
    report.basePerplexity = perplexityOf(baseNll);
    double sum = 0;
    for (double x : kl)
      sum += x;
    report.klMean = kl.empty() ? 0 : sum / double(kl.size());
    report.klP99 = percentile(kl, 0.99);
    report.top1Agreement = kl.empty() ? 0 : double(agree) / double(kl.size());
  }
  return report;
}

} // namespace quill
