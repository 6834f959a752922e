// Unit tests for the quality figures: the sliding windows and the positions
// they score, and perplexity, its standard error, KL and top-1 agreement on
// hand-made logits, each checked against its formula computed here.
#include "runtime/decode/Perplexity.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <vector>

using namespace quill;

namespace {

/// Logits from a function of (window position, last token); records what
/// each window fed, to check that every window starts from an empty cache.
class FakeLogits : public LogitsSource {
public:
  using Fn = std::function<std::vector<float>(int32_t pos, int32_t token)>;
  FakeLogits(int32_t vocab, Fn fn) : vocab_(vocab), fn_(std::move(fn)) {}
  int32_t vocabSize() const override { return vocab_; }
  Status begin(const int32_t *tokens, int32_t count) override {
    fed.emplace_back(tokens, tokens + count);
    return Status::ok();
  }
  ErrorOr<const float *> next(int32_t token) override {
    fed.back().push_back(token);
    logits_ = fn_(static_cast<int32_t>(fed.back().size()) - 1, token);
    return static_cast<const float *>(logits_.data());
  }
  std::vector<std::vector<int32_t>> fed; ///< Each window's tokens.

private:
  int32_t vocab_;
  Fn fn_;
  std::vector<float> logits_;
};

std::vector<int32_t> scoredPositions(int32_t n, int32_t window, int32_t stride) {
  auto windows = evalWindows(n, window, stride);
  EXPECT_TRUE(windows) << windows.message();
  std::vector<int32_t> scored;
  for (const EvalWindow &w : *windows)
    for (int32_t p = w.firstScored; p < w.end; ++p)
      scored.push_back(p);
  return scored;
}

std::vector<int32_t> iota(int32_t from, int32_t to) {
  std::vector<int32_t> v(to - from);
  std::iota(v.begin(), v.end(), from);
  return v;
}

} // namespace

TEST(Perplexity, WindowsScoreWhatThePreviousWindowDidNot) {
  EXPECT_EQ(scoredPositions(10, 4, 2), iota(1, 10));
  // Non-overlapping windows: each window's first token has no context.
  EXPECT_EQ(scoredPositions(10, 4, 4), (std::vector<int32_t>{1, 2, 3, 5, 6, 7, 9}));
  EXPECT_EQ(scoredPositions(5, 3, 1), iota(1, 5));
  EXPECT_EQ(scoredPositions(2, 2, 1), iota(1, 2));
  EXPECT_EQ(scoredPositions(7, 16, 8), iota(1, 7));
  auto windows = evalWindows(10, 4, 2);
  ASSERT_TRUE(windows);
  ASSERT_EQ(windows->size(), 4u);
  EXPECT_EQ((*windows)[1].start, 2);
  EXPECT_EQ((*windows)[1].firstScored, 4);
  EXPECT_EQ((*windows)[3].end, 10);
}

TEST(Perplexity, BadWindowsAreErrors) {
  EXPECT_FALSE(evalWindows(1, 4, 2));
  EXPECT_FALSE(evalWindows(10, 1, 1));
  EXPECT_FALSE(evalWindows(10, 4, 0));
  EXPECT_FALSE(evalWindows(10, 4, 5));
}

TEST(Perplexity, UniformLogitsGivePerplexityV) {
  const int32_t vocab = 37;
  FakeLogits model(vocab, [&](int32_t, int32_t) { return std::vector<float>(vocab, 3.5f); });
  FakeLogits base(vocab, [&](int32_t, int32_t) { return std::vector<float>(vocab, -1.0f); });
  std::vector<int32_t> tokens = {1, 5, 9, 2, 7, 7, 3, 0, 36, 4};
  auto windows = evalWindows(10, 4, 2);
  auto report = evaluateQuality(tokens, *windows, model, &base);
  ASSERT_TRUE(report) << report.message();
  EXPECT_NEAR(report->perplexity.value, vocab, 1e-9 * vocab);
  EXPECT_NEAR(report->perplexity.standardError, 0, 1e-9);
  EXPECT_NEAR(report->basePerplexity.value, vocab, 1e-9 * vocab);
  EXPECT_NEAR(report->klMean, 0, 1e-12);
  EXPECT_NEAR(report->klP99, 0, 1e-12);
  EXPECT_EQ(report->top1Agreement, 1.0);
  EXPECT_EQ(report->scored, iota(1, 10));
  // Each window from an empty cache: its context, then the scored tokens' predecessors.
  ASSERT_EQ(model.fed.size(), 4u);
  EXPECT_EQ(model.fed[0], (std::vector<int32_t>{1, 5, 9}));
  EXPECT_EQ(model.fed[1], (std::vector<int32_t>{9, 2, 7}));
  EXPECT_EQ(model.fed[3], (std::vector<int32_t>{3, 0, 36}));
}

TEST(Perplexity, KnownDistributionsMatchTheFormulas) {
  // Two tokens; the model says p(1) = 0.75 everywhere, the base p(1) = 0.5
  // at even positions of the window and 0.9 at odd ones.
  const float l75 = std::log(3.0f), l90 = std::log(9.0f);
  FakeLogits model(2, [&](int32_t, int32_t) { return std::vector<float>{0.0f, l75}; });
  FakeLogits base(2, [&](int32_t pos, int32_t) {
    return pos % 2 ? std::vector<float>{0.0f, l90} : std::vector<float>{0.0f, 0.0f};
  });
  std::vector<int32_t> tokens = {0, 1, 1, 0, 1, 0};
  auto windows = evalWindows(6, 6, 3);
  auto report = evaluateQuality(tokens, *windows, model, &base);
  ASSERT_TRUE(report) << report.message();
  ASSERT_EQ(report->scored, iota(1, 6));

  auto kl = [](double p, double q) {
    return p * std::log(p / q) + (1 - p) * std::log((1 - p) / (1 - q));
  };
  std::vector<double> nll, baseNll, kls;
  int agree = 0;
  for (int32_t pos = 1; pos < 6; ++pos) {
    double q = 0.75, p = (pos - 1) % 2 ? 0.9 : 0.5; // Logits after window position pos - 1.
    nll.push_back(-std::log(tokens[pos] ? q : 1 - q));
    baseNll.push_back(-std::log(tokens[pos] ? p : 1 - p));
    kls.push_back(kl(p, q));
    agree += p > 0.5; // Both say token 1; at p = 0.5 the base's argmax is token 0.
  }
  auto ppl = [](const std::vector<double> &x) {
    double n = double(x.size()), mean = 0, sq = 0;
    for (double v : x)
      mean += v / n, sq += v * v / n;
    double value = std::exp(mean);
    return std::pair{value, std::sqrt((sq - mean * mean) / (n - 1)) * value};
  };
  EXPECT_NEAR(report->perplexity.value, ppl(nll).first, 1e-6);
  EXPECT_NEAR(report->perplexity.standardError, ppl(nll).second, 1e-6);
  EXPECT_NEAR(report->basePerplexity.value, ppl(baseNll).first, 1e-6);
  double klMean = 0;
  for (double v : kls)
    klMean += v / kls.size();
  EXPECT_NEAR(report->klMean, klMean, 1e-7);
  // Five values: the 99th percentile lies 0.96 of the way from the 4th to the 5th.
  std::vector<double> sorted = kls;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_NEAR(report->klP99, sorted[3] + 0.96 * (sorted[4] - sorted[3]), 1e-7);
  EXPECT_DOUBLE_EQ(report->top1Agreement, agree / 5.0);
}

TEST(Perplexity, LogSoftmaxIsStableForHugeLogits) {
  std::vector<float> logits = {1e30f, 1e30f, -1e30f};
  std::vector<double> out;
  logSoftmax(logits.data(), 3, out);
  EXPECT_NEAR(out[0], -std::log(2.0), 1e-12);
  EXPECT_NEAR(out[1], -std::log(2.0), 1e-12);
  EXPECT_DOUBLE_EQ(out[2], (double(logits[2]) - double(logits[0])) - std::log(2.0));
  EXPECT_EQ(klDivergence(out, out), 0.0);
}

TEST(Perplexity, VocabularyMismatchIsAnError) {
  FakeLogits model(4, [](int32_t, int32_t) { return std::vector<float>(4, 0.0f); });
  FakeLogits base(5, [](int32_t, int32_t) { return std::vector<float>(5, 0.0f); });
  std::vector<int32_t> tokens = {0, 1, 2};
  auto report = evaluateQuality(tokens, *evalWindows(3, 3, 1), model, &base);
  ASSERT_FALSE(report);
  EXPECT_NE(report.message().find("vocabulary"), std::string::npos);
}
