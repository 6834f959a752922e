// Beam search's selection rule on made-up models: exhaustive search equality
// when the beams cover every prefix, greedy equality for one beam, the length
// penalty and early stopping on hand-worked cases.
#include "runtime/decode/BeamSearch.h"
#include "runtime/support/SplitMix64.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <vector>

namespace quill {
namespace {

/// A deterministic "model": logits of the next token after `prefix`.
using Model = std::function<std::vector<float>(const std::vector<int32_t> &prefix)>;

Model hashedModel(int32_t vocab, uint64_t seed) {
  return [=](const std::vector<int32_t> &prefix) {
    uint64_t h = seed;
    for (int32_t t : prefix)
      h = (h ^ uint64_t(t + 1)) * 0x100000001b3ull;
    std::vector<float> logits(vocab);
    for (int32_t i = 0; i < vocab; ++i) {
      // splitmix64's counter and the first multiply of its mix: enough
      // spread for made-up logits.
      uint64_t x = (h + uint64_t(i) * kSplitMix64Gamma) * 0xbf58476d1ce4e5b9ull;
      logits[i] = float((x >> 40) % 1000) / 250.0f; // 0 .. 4
    }
    return logits;
  };
}

/// Runs the search to the end with at most `maxTokens` tokens.
std::vector<BeamHypothesis> search(const Model &model, int32_t vocab, BeamSearchOptions options,
                                   int32_t maxTokens, std::vector<int32_t> ends) {
  BeamSearch beams(options, ends);
  std::vector<std::vector<double>> logprobs;
  while (!beams.done()) {
    if (beams.length() >= maxTokens) {
      beams.finish();
      break;
    }
    logprobs.assign(beams.liveBeams(), std::vector<double>(vocab));
    std::vector<const double *> rows;
    for (int32_t b = 0; b < beams.liveBeams(); ++b) {
      std::vector<float> logits = model(beams.tokens(b));
      logSoftmax(logits.data(), vocab, logprobs[b].data());
      rows.push_back(logprobs[b].data());
    }
    beams.step(rows, vocab);
  }
  return beams.results();
}

struct Scored {
  std::vector<int32_t> tokens;
  double logprob;
  bool ended;
};

/// Every sequence: ended by the end token after 0..maxTokens-1 tokens, or
/// running for maxTokens tokens.
void enumerate(const Model &model, int32_t vocab, int32_t end, int32_t maxTokens,
               std::vector<int32_t> &prefix, double logprob, std::vector<Scored> &out) {
  if (int32_t(prefix.size()) == maxTokens) {
    out.push_back({prefix, logprob, false});
    return;
  }
  std::vector<float> logits = model(prefix);
  std::vector<double> lp(vocab);
  logSoftmax(logits.data(), vocab, lp.data());
  out.push_back({prefix, logprob + lp[end], true});
  for (int32_t t = 0; t < vocab; ++t) {
    if (t == end)
      continue;
    prefix.push_back(t);
    enumerate(model, vocab, end, maxTokens, prefix, logprob + lp[t], out);
    prefix.pop_back();
  }
}

TEST(BeamSearch, EnoughBeamsEqualExhaustiveSearch) {
  // Vocabulary 3 (token 2 ends), 4 tokens deep: 15 ended and 16 full
  // sequences; 32 beams keep every prefix, and with no length penalty a
  // longer sequence never scores higher, so nothing stops the search early.
  for (uint64_t seed : {1u, 2u, 3u, 4u, 5u}) {
    Model model = hashedModel(3, seed);
    std::vector<Scored> all;
    std::vector<int32_t> prefix;
    enumerate(model, 3, 2, 4, prefix, 0.0, all);
    ASSERT_EQ(all.size(), 31u);
    std::stable_sort(all.begin(), all.end(),
                     [](const Scored &a, const Scored &b) { return a.logprob > b.logprob; });
    BeamSearchOptions options;
    options.beams = 32;
    options.lengthPenalty = 0;
    options.numReturn = 10;
    auto found = search(model, 3, options, 4, {2});
    ASSERT_EQ(found.size(), 10u);
    for (size_t i = 0; i < found.size(); ++i) {
      EXPECT_EQ(found[i].tokens, all[i].tokens) << "seed " << seed << " rank " << i;
      EXPECT_NEAR(found[i].logprob, all[i].logprob, 1e-12);
      EXPECT_EQ(found[i].ended, all[i].ended);
    }
  }
}

TEST(BeamSearch, OneBeamIsGreedySearch) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    const int32_t vocab = 7, end = 3;
    Model model = hashedModel(vocab, seed);
    std::vector<int32_t> greedy;
    for (int step = 0; step < 12; ++step) {
      std::vector<float> logits = model(greedy);
      int32_t best = int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
      if (best == end)
        break;
      greedy.push_back(best);
    }
    BeamSearchOptions options; // One beam, length penalty 1.
    auto found = search(model, vocab, options, 12, {end});
    ASSERT_EQ(found.size(), 1u);
    EXPECT_EQ(found[0].tokens, greedy) << "seed " << seed;
    EXPECT_EQ(found[0].ended, greedy.size() < 12u);
  }
}

/// A model given as a table: logits after each prefix.
Model tableModel(std::map<std::vector<int32_t>, std::vector<float>> table, int32_t vocab) {
  return [=](const std::vector<int32_t> &prefix) {
    auto it = table.find(prefix);
    return it != table.end() ? it->second : std::vector<float>(vocab, 0.0f);
  };
}

TEST(BeamSearch, LengthPenaltyTradesProbabilityForLength) {
  // Vocabulary {0, 1, end=2}. After [], token 0 is likely; after [0] the end
  // is nearly certain: [0]+end has log-probability about -0.3. Token 1 then
  // two more tokens, each nearly certain, gives a longer hypothesis of about
  // -1.3 - small. With penalty 0 the short one wins; with penalty 2 the long
  // one does (its logprob is divided by 9, the short one's by 1).
  const float big = 20;
  std::map<std::vector<int32_t>, std::vector<float>> table = {
      {{}, {1.0f, 0.0f, -big}},    {{0}, {-big, -big, big}},       {{1}, {big, -big, -big}},
      {{1, 0}, {big, -big, -big}}, {{1, 0, 0}, {-big, -big, big}},
  };
  Model model = tableModel(table, 3);
  BeamSearchOptions options;
  options.beams = 2;
  options.lengthPenalty = 0;
  auto shortFirst = search(model, 3, options, 5, {2});
  ASSERT_FALSE(shortFirst.empty());
  EXPECT_EQ(shortFirst[0].tokens, (std::vector<int32_t>{0}));
  options.lengthPenalty = 2;
  auto longFirst = search(model, 3, options, 5, {2});
  ASSERT_FALSE(longFirst.empty());
  EXPECT_EQ(longFirst[0].tokens, (std::vector<int32_t>{1, 0, 0}));
  EXPECT_NEAR(longFirst[0].score, longFirst[0].logprob / 9.0, 1e-12);
}

TEST(BeamSearch, EarlyStoppingEndsOnceEveryBeamHasAHypothesis) {
  // Two beams; after the first step both ended hypotheses exist when the end
  // token ranks first and second... here: [0]+end and [1]+end end at step 2.
  const float big = 20;
  std::map<std::vector<int32_t>, std::vector<float>> table = {
      {{}, {2.0f, 1.0f, -big}},    {{0}, {-big, 0.0f, big}},    {{1}, {-big, 0.0f, big}},
      {{0, 1}, {-big, -big, big}}, {{1, 1}, {-big, -big, big}},
  };
  Model model = tableModel(table, 3);
  BeamSearchOptions options;
  options.beams = 2;
  options.earlyStopping = true;
  options.numReturn = 2;
  BeamSearch beams(options, {2});
  std::vector<double> a(3), b(3);
  auto logits = model({});
  logSoftmax(logits.data(), 3, a.data());
  auto next = beams.step({a.data()}, 3);
  ASSERT_EQ(next.size(), 2u);
  EXPECT_EQ(next[0].token, 0);
  EXPECT_EQ(next[1].token, 1);
  auto l0 = model({0}), l1 = model({1});
  logSoftmax(l0.data(), 3, a.data());
  logSoftmax(l1.data(), 3, b.data());
  beams.step({a.data(), b.data()}, 3);
  EXPECT_TRUE(beams.done()) << "two hypotheses ended: early stopping stops";
  auto found = beams.results();
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0].tokens, (std::vector<int32_t>{0}));
  EXPECT_EQ(found[1].tokens, (std::vector<int32_t>{1}));
  EXPECT_TRUE(found[0].ended && found[1].ended);
}

TEST(BeamSearch, LogSoftmaxKeepsDistinctLogitsDistinctAndMapsNanToMinusInfinity) {
  std::vector<float> logits = {1000.0f, std::nextafter(1000.0f, 0.0f), NAN, -INFINITY};
  std::vector<double> out(4);
  logSoftmax(logits.data(), 4, out.data());
  EXPECT_GT(out[0], out[1]);
  EXPECT_EQ(out[2], -INFINITY);
  EXPECT_EQ(out[3], -INFINITY);
  EXPECT_NEAR(std::exp(out[0]) + std::exp(out[1]), 1.0, 1e-12);
}

} // namespace
} // namespace quill
