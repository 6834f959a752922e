// Statistical tests of the sampler chain: for each pass and for
// combinations, 200,000 draws over fixed logits (fixed seed, so the test is
// deterministic) must pass a chi-square goodness-of-fit test at p = 0.001
// against the exact distribution, worked out independently here in double
// precision: processed logits, truncated, renormalized.
#include "runtime/sampling/Sampler.h"
#include "runtime/sampling/SamplingParams.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <string>
#include <vector>

using namespace quill;

namespace {

constexpr double kInfD = std::numeric_limits<double>::infinity();
constexpr int kDraws = 200000;
/// A cut this close to its threshold could fall either way between float
/// (the chain) and double (the reference): such a fixture is rejected.
constexpr double kMargin = 1e-4;

/// The fixed logits: twelve tokens, p from 0.27 down to 0.003.
const std::vector<float> &fixtureLogits() {
  static const std::vector<float> logits = {2.0f, 1.7f,  1.5f,  1.1f,  0.9f,  0.4f,
                                            0.0f, -0.3f, -0.8f, -1.2f, -2.0f, -2.5f};
  return logits;
}

/// The upper 0.001 quantile of chi-square with df degrees of freedom, by
/// the Wilson-Hilferty cube-root normal approximation.
double chiSquareCritical(int df) {
  const double z = 3.090232306167813; // the standard normal's 0.999 quantile
  const double a = 2.0 / (9.0 * df);
  return df * std::pow(1.0 - a + z * std::sqrt(a), 3.0);
}

/// The distribution a chain should draw from, built pass by pass from the
/// same float logits in double precision. Removed tokens have -inf.
class Reference {
public:
  Reference() {
    for (float logit : fixtureLogits())
      logits_.push_back(logit);
  }

  Reference &bias(const std::map<int, double> &biases) {
    for (auto [id, value] : biases)
      logits_[id] += value;
    return *this;
  }

  /// counts: token -> occurrences in the window.
  Reference &penalties(const std::map<int, int> &counts, double repeat, double frequency,
                       double presence) {
    for (auto [id, count] : counts) {
      double &l = logits_[id];
      l = l <= 0 ? l * repeat : l / repeat;
      l -= count * frequency + presence;
    }
    return *this;
  }

  Reference &temperature(double t) {
    for (double &l : logits_)
      l /= t;
    return *this;
  }

  Reference &topK(int k) {
    std::vector<int> order = ranked();
    for (size_t i = k; i < order.size(); ++i)
      logits_[order[i]] = -kInfD;
    return *this;
  }

  /// Keep the smallest best-first prefix whose mass exceeds p.
  Reference &topP(double p) {
    std::vector<double> probs = probabilities();
    std::vector<int> order = ranked();
    double cumulative = 0.0;
    size_t keep = order.size();
    for (size_t i = 0; i < order.size(); ++i) {
      cumulative += probs[order[i]];
      EXPECT_GT(std::abs(cumulative - p), kMargin) << "borderline top-p fixture";
      if (cumulative > p) {
        keep = i + 1;
        break;
      }
    }
    for (size_t i = keep; i < order.size(); ++i)
      logits_[order[i]] = -kInfD;
    return *this;
  }

  /// Keep p_i >= minP * p_max.
  Reference &minP(double minP) {
    std::vector<double> probs = probabilities();
    double best = *std::max_element(probs.begin(), probs.end());
    for (size_t i = 0; i < probs.size(); ++i) {
      if (probs[i] == 0.0)
        continue;
      EXPECT_GT(std::abs(probs[i] / best - minP), kMargin) << "borderline min-p fixture, id " << i;
      if (probs[i] < minP * best)
        logits_[i] = -kInfD;
    }
    return *this;
  }

  std::vector<double> probabilities() const {
    double best = *std::max_element(logits_.begin(), logits_.end());
    std::vector<double> probs;
    double sum = 0.0;
    for (double l : logits_) {
      probs.push_back(l == -kInfD ? 0.0 : std::exp(l - best));
      sum += probs.back();
    }
    for (double &p : probs)
      p /= sum;
    return probs;
  }

private:
  /// Live ids, best first, lowest id on ties.
  std::vector<int> ranked() const {
    std::vector<int> order;
    for (size_t i = 0; i < logits_.size(); ++i)
      if (logits_[i] != -kInfD)
        order.push_back(static_cast<int>(i));
    std::stable_sort(order.begin(), order.end(),
                     [&](int a, int b) { return logits_[a] > logits_[b]; });
    return order;
  }

  std::vector<double> logits_;
};

/// Token counts over kDraws samples of the fixture. A penalties window is
/// fed before the first draw and again after each (a window of exactly
/// window.size() tokens is then the same for every draw).
std::vector<long> drawCounts(SamplingParams params, const std::vector<int32_t> &window = {}) {
  if (!window.empty())
    params.repeatLastN = static_cast<int32_t>(window.size());
  SamplerChain chain = SamplerChain::fromParams(params, nullptr);
  const std::vector<float> &logits = fixtureLogits();
  const int32_t vocab = static_cast<int32_t>(logits.size());
  std::vector<long> counts(logits.size(), 0);
  for (int32_t token : window)
    chain.accept(token);
  for (int i = 0; i < kDraws; ++i) {
    int32_t token = chain.sample(logits.data(), vocab);
    EXPECT_GE(token, 0);
    if (token < 0)
      break;
    ++counts[token];
    for (int32_t t : window)
      chain.accept(t);
  }
  return counts;
}

/// Pearson's statistic over the possible tokens; a draw of an impossible
/// token fails outright.
struct Fit {
  double statistic = 0.0;
  int degreesOfFreedom = 0;
  bool impossibleDrawn = false;
};

Fit chiSquare(const std::vector<long> &counts, const std::vector<double> &expected) {
  Fit fit;
  long total = std::accumulate(counts.begin(), counts.end(), 0L);
  int categories = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    if (expected[i] == 0.0) {
      fit.impossibleDrawn |= counts[i] != 0;
      continue;
    }
    double e = expected[i] * total;
    fit.statistic += (counts[i] - e) * (counts[i] - e) / e;
    ++categories;
  }
  fit.degreesOfFreedom = categories - 1;
  return fit;
}

void expectFits(const SamplingParams &params, const Reference &reference,
                const std::vector<int32_t> &window = {}) {
  std::vector<double> expected = reference.probabilities();
  for (double p : expected) {
    if (p > 0.0) {
      ASSERT_GT(p * kDraws, 5.0) << "too rare for chi-square";
    }
  }
  std::vector<long> counts = drawCounts(params, window);
  Fit fit = chiSquare(counts, expected);
  SamplingParams described = params;
  std::string chain = SamplerChain::fromParams(described, nullptr).describe();
  EXPECT_FALSE(fit.impossibleDrawn) << chain << ": drew a truncated token";
  if (fit.degreesOfFreedom == 0) {
    // One possible token: every draw must be it (checked just above).
    return;
  }
  double critical = chiSquareCritical(fit.degreesOfFreedom);
  // In the XML report (--gtest_output=xml), for a look at the margins.
  ::testing::Test::RecordProperty("chi_square", std::to_string(fit.statistic));
  ::testing::Test::RecordProperty("critical_p001", std::to_string(critical));
  EXPECT_LT(fit.statistic, critical) << chain << ": chi-square " << fit.statistic << " with "
                                     << fit.degreesOfFreedom << " degrees of freedom";
}

SamplingParams withSeed(uint64_t seed) {
  SamplingParams params;
  params.seed = seed;
  return params;
}

} // namespace

TEST(ChiSquare, WilsonHilfertyMatchesTables) {
  // Upper 0.001 quantiles from standard tables. This far in the tail the
  // approximation runs about 1% high (a slightly more lenient test), 3% at
  // one degree of freedom.
  for (auto [df, table] : std::vector<std::pair<int, double>>{
           {1, 10.828}, {5, 20.515}, {10, 29.588}, {11, 31.264}, {30, 59.703}}) {
    EXPECT_GE(chiSquareCritical(df), table) << df;
    EXPECT_LT(chiSquareCritical(df), table * (df == 1 ? 1.04 : 1.015)) << df;
  }
}

TEST(ChiSquare, RejectsTheWrongDistribution) {
  // The test has teeth: draws at T = 1 do not fit T = 0.85.
  std::vector<long> counts = drawCounts(withSeed(1));
  Fit fit = chiSquare(counts, Reference().temperature(0.85).probabilities());
  EXPECT_GT(fit.statistic, chiSquareCritical(fit.degreesOfFreedom));
}

TEST(SamplerStatistics, Dist) { expectFits(withSeed(101), Reference()); }

TEST(SamplerStatistics, Temperature) {
  SamplingParams cold = withSeed(102);
  cold.temperature = 0.7f;
  expectFits(cold, Reference().temperature(0.7f));
  SamplingParams hot = withSeed(103);
  hot.temperature = 1.6f;
  expectFits(hot, Reference().temperature(1.6f));
}

TEST(SamplerStatistics, TopK) {
  SamplingParams params = withSeed(104);
  params.topK = 5;
  expectFits(params, Reference().topK(5));
}

TEST(SamplerStatistics, TopP) {
  SamplingParams params = withSeed(105);
  params.topP = 0.8f;
  expectFits(params, Reference().topP(0.8f));
}

TEST(SamplerStatistics, MinP) {
  SamplingParams params = withSeed(106);
  params.minP = 0.15f;
  expectFits(params, Reference().minP(0.15f));
}

TEST(SamplerStatistics, Penalties) {
  // Window 0, 0, 2, 5: token 0 twice, 2 and 5 once.
  SamplingParams params = withSeed(107);
  params.repeatPenalty = 1.3f;
  params.frequencyPenalty = 0.2f;
  params.presencePenalty = 0.4f;
  expectFits(params, Reference().penalties({{0, 2}, {2, 1}, {5, 1}}, 1.3f, 0.2f, 0.4f),
             {0, 0, 2, 5});
}

TEST(SamplerStatistics, LogitBias) {
  SamplingParams params = withSeed(108);
  params.logitBias = {{1, -std::numeric_limits<float>::infinity()}, {6, 2.0f}, {3, -0.5f}};
  expectFits(params, Reference().bias({{1, -kInfD}, {6, 2.0}, {3, -0.5}}));
}

TEST(SamplerStatistics, EverythingInTheDefaultOrder) {
  // bias -> penalties -> top-k -> top-p -> min-p -> temperature -> dist.
  SamplingParams params = withSeed(109);
  params.logitBias = {{4, 1.0f}, {9, -std::numeric_limits<float>::infinity()}};
  params.repeatPenalty = 1.2f;
  params.frequencyPenalty = 0.1f;
  params.presencePenalty = 0.3f;
  params.topK = 8;
  params.topP = 0.85f;
  params.minP = 0.12f;
  params.temperature = 0.8f;
  expectFits(params,
             Reference()
                 .bias({{4, 1.0}, {9, -kInfD}})
                 .penalties({{0, 1}, {1, 2}}, 1.2f, 0.1f, 0.3f)
                 .topK(8)
                 .topP(0.85f)
                 .minP(0.12f)
                 .temperature(0.8f),
             {0, 1, 1});
}

TEST(SamplerStatistics, TemperatureFirstThenTruncations) {
  // --samplers temperature,min-p,top-p,top-k: the truncations cut the
  // flattened distribution.
  SamplingParams params = withSeed(110);
  params.order = {ProcessorKind::Temperature, ProcessorKind::MinP, ProcessorKind::TopP,
                  ProcessorKind::TopK};
  params.temperature = 1.5f;
  params.minP = 0.2f;
  params.topP = 0.9f;
  params.topK = 7;
  expectFits(params, Reference().temperature(1.5f).minP(0.2f).topP(0.9f).topK(7));
}

TEST(SamplerStatistics, TopKThenTopPAfterPenalties) {
  // Penalties reorder the candidates (token 0 drops below 1 and 2), so the
  // truncations after them must see the penalized ranking.
  SamplingParams params = withSeed(111);
  params.repeatPenalty = 1.5f;
  params.topK = 4;
  params.topP = 0.75f;
  expectFits(params, Reference().penalties({{0, 1}}, 1.5f, 0.0, 0.0).topK(4).topP(0.75f), {0});
}
