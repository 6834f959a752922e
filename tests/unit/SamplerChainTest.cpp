// Unit tests for the composable sampler chain: the new passes (min-p,
// penalties, logit bias) on hand-worked inputs, the order --samplers sets,
// parsing and validation of the knobs, the edge cases every strategy must
// agree on, logprobs, and thread-count invariance of all of it.
#include "SamplerTestSupport.h"
#include "runtime/sampling/Logprobs.h"
#include "runtime/sampling/PenaltyPasses.h"
#include "runtime/sampling/Random.h"
#include "runtime/sampling/Sampler.h"
#include "runtime/sampling/SamplerPasses.h"
#include "runtime/sampling/SamplingParams.h"

#include <gtest/gtest.h>

#include <tbb/task_arena.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

using namespace quill;
using namespace quill::test;

namespace {

std::vector<float> randomLogits(int32_t n, uint64_t seed) {
  Random rng(seed);
  std::vector<float> logits(n);
  for (float &logit : logits)
    logit = std::floor((rng.nextFloat() * 16.0f - 8.0f) * 64.0f) / 64.0f;
  return logits;
}

/// Every knob on, for chains that must exercise all passes.
SamplingParams everything(uint64_t seed) {
  SamplingParams params{0.8f, 50, 0.95f, seed};
  params.minP = 0.02f;
  params.repeatPenalty = 1.3f;
  params.frequencyPenalty = 0.1f;
  params.presencePenalty = 0.2f;
  params.repeatLastN = 32;
  params.logitBias = {{3, 2.0f}, {11, -kInf}, {4000, -1.5f}};
  return params;
}

std::vector<int32_t> drawSequence(SamplerChain &chain,
                                  const std::vector<std::vector<float>> &steps) {
  std::vector<int32_t> out;
  for (const auto &logits : steps)
    out.push_back(chain.sample(logits.data(), static_cast<int32_t>(logits.size())));
  return out;
}

} // namespace

//===----------------------------------------------------------------------===//
// Parameters: validation and parsing.
//===----------------------------------------------------------------------===//

TEST(SamplingParamsChain, ValidatesTheNewKnobs) {
  auto messageFor = [](auto edit) {
    SamplingParams params;
    edit(params);
    return validate(params).message();
  };
  EXPECT_EQ(messageFor([](SamplingParams &p) { p.minP = 1.5f; }),
            "invalid --min-p 1.5: must be in [0, 1] (0 = off)");
  EXPECT_EQ(messageFor([](SamplingParams &p) { p.minP = -0.1f; }),
            "invalid --min-p -0.1: must be in [0, 1] (0 = off)");
  EXPECT_NE(messageFor([](SamplingParams &p) { p.minP = kNaN; }), "");
  EXPECT_EQ(messageFor([](SamplingParams &p) { p.repeatPenalty = kNaN; }),
            "invalid --repeat-penalty nan: must be a finite number > 0 (1 = off)");
  EXPECT_NE(messageFor([](SamplingParams &p) { p.repeatPenalty = 0.0f; }), "");
  EXPECT_EQ(messageFor([](SamplingParams &p) { p.repeatLastN = -1; }),
            "invalid --repeat-last-n -1: must be >= 0 (0 = penalties off)");
  EXPECT_EQ(messageFor([](SamplingParams &p) { p.frequencyPenalty = kNaN; }),
            "invalid --frequency-penalty nan: must be a finite number (0 = off)");
  EXPECT_EQ(messageFor([](SamplingParams &p) { p.presencePenalty = kInf; }),
            "invalid --presence-penalty inf: must be a finite number (0 = off)");
  EXPECT_EQ(messageFor([](SamplingParams &p) { p.logitBias = {{4, kNaN}}; }),
            "invalid --logit-bias 4=nan: the bias must be a finite number or -inf");
  EXPECT_NE(messageFor([](SamplingParams &p) { p.logitBias = {{4, kInf}}; }), "");
  EXPECT_NE(messageFor([](SamplingParams &p) { p.logitBias = {{-2, 1.0f}}; }), "");
  EXPECT_EQ(messageFor([](SamplingParams &p) {
              p.logprobs = true;
              p.topLogprobs = -1;
            }),
            "invalid --logprobs -1: must be >= 0 (the number of alternatives)");
  // Accepted: edges of every range, negative penalties (they reward
  // repetition), a ban.
  SamplingParams ok = everything(1);
  ok.minP = 1.0f;
  ok.frequencyPenalty = -0.5f;
  ok.repeatLastN = 0;
  ok.logprobs = true;
  EXPECT_TRUE(validate(ok).isOk()) << validate(ok).message();
}

TEST(SamplingParamsChain, LogitBiasIdsMustBeInTheVocabulary) {
  SamplingParams params;
  params.logitBias = {{0, 1.0f}, {511, -kInf}};
  EXPECT_TRUE(validateForVocabulary(params, 512).isOk());
  params.logitBias.push_back({512, 2.0f});
  EXPECT_EQ(validateForVocabulary(params, 512).message(),
            "invalid --logit-bias 512=2: token id 512 is outside the "
            "vocabulary [0, 512)");
}

TEST(SamplingParamsChain, ParsesProcessorOrders) {
  auto names = [](std::string_view list) {
    auto order = parseProcessorOrder(list);
    EXPECT_TRUE(order.isOk()) << order.message();
    std::string out;
    for (ProcessorKind kind : order.isOk() ? *order : std::vector<ProcessorKind>{})
      out += std::string(out.empty() ? "" : ",") + processorName(kind);
    return out;
  };
  EXPECT_EQ(names("penalties,top-k,top-p,min-p,temperature"),
            "penalties,top-k,top-p,min-p,temperature");
  EXPECT_EQ(names("temperature; min_p ;top_p"), "temperature,min-p,top-p");
  EXPECT_EQ(names("temp,top-k"), "temperature,top-k");
  EXPECT_EQ(names(""), "");
  EXPECT_EQ(names(",;"), "");
  EXPECT_EQ(parseProcessorOrder("top-k,bogus").message(),
            "invalid --samplers 'top-k,bogus': unknown sampler 'bogus' (known: "
            "penalties, top-k, top-p, min-p, temperature; the selector always "
            "runs last)");
  EXPECT_EQ(parseProcessorOrder("top-k;top_k").message(),
            "invalid --samplers 'top-k;top_k': 'top-k' is listed twice");
  EXPECT_FALSE(parseProcessorOrder("greedy").isOk());
  EXPECT_EQ(names("penalties,top-k,top-p,min-p,temperature"), [] {
    std::string out;
    for (ProcessorKind kind : defaultProcessorOrder())
      out += std::string(out.empty() ? "" : ",") + processorName(kind);
    return out;
  }());
}

TEST(SamplingParamsChain, ParsesLogitBiases) {
  auto parsed = [](std::string_view spec) {
    auto bias = parseLogitBias(spec);
    EXPECT_TRUE(bias.isOk()) << bias.message();
    return bias.isOk() ? *bias : LogitBias{-1, 0.0f};
  };
  EXPECT_EQ(parsed("13=-inf").id, 13);
  EXPECT_EQ(parsed("13=-inf").bias, -kInf);
  EXPECT_EQ(parsed("13=-INF").bias, -kInf);
  EXPECT_EQ(parsed("7=2.5").bias, 2.5f);
  EXPECT_EQ(parsed("7=+1").bias, 1.0f);
  EXPECT_EQ(parsed(" 7 = -3 ").bias, -3.0f);
  EXPECT_EQ(parsed("0=-1e99").bias, -kInf); // overflow toward a ban
  for (const char *bad : {"13", "=5", "13=", "x=1", "1.5=2", "13=abc", "13=2x", "13=nan", "13=inf",
                          "-1=2", "99999999999=1"})
    EXPECT_FALSE(parseLogitBias(bad).isOk()) << bad;
  EXPECT_EQ(parseLogitBias("13").message(),
            "invalid --logit-bias '13': expected ID=VALUE, e.g. 13=-inf or 13=2.5");
  EXPECT_EQ(parseLogitBias("13=inf").message(),
            "invalid --logit-bias '13=inf': the bias must be a finite number or -inf");
}

//===----------------------------------------------------------------------===//
// The new passes on hand-worked inputs.
//===----------------------------------------------------------------------===//

TEST(MinPPass, KeepsTokensWithinAFactorOfTheBest) {
  // p = 0.5, 0.3, 0.15, 0.05: min-p 0.2 cuts at 0.1, min-p 0.5 at 0.25.
  for (auto [minP, expected] : std::vector<std::pair<float, std::vector<int32_t>>>{
           {0.2f, {0, 1, 2}}, {0.5f, {0, 1}}, {0.05f, {0, 1, 2, 3}}, {1.0f, {0}}}) {
    CandidateSet set(logsOf({0.5, 0.3, 0.15, 0.05}));
    SamplerContext ctx;
    MinPPass(minP).apply(set.c, ctx);
    EXPECT_EQ(set.ids(), expected) << "min-p " << minP;
  }
}

TEST(MinPPass, KeepsTheOrderAndTiesAndWorksOnSortedInput) {
  // Unsorted input stays in id order; min-p 1 keeps the best and its ties.
  SamplerContext ctx;
  CandidateSet ties({1.0f, 3.0f, -2.0f, 3.0f, 2.9f});
  MinPPass(1.0f).apply(ties.c, ctx);
  EXPECT_EQ(ties.ids(), std::vector<int32_t>({1, 3}));
  EXPECT_FALSE(ties.c.byId);
  // exp(2.9 - 3) = 0.905 >= 0.9; exp(1 - 3) = 0.135 < 0.9.
  CandidateSet unsorted({1.0f, 3.0f, -2.0f, 3.0f, 2.9f});
  MinPPass(0.9f).apply(unsorted.c, ctx);
  EXPECT_EQ(unsorted.ids(), std::vector<int32_t>({1, 3, 4}));
  // The same cut after top-k has sorted the candidates.
  CandidateSet sorted({1.0f, 3.0f, -2.0f, 3.0f, 2.9f});
  TopKPass(4).apply(sorted.c, ctx);
  MinPPass(0.9f).apply(sorted.c, ctx);
  EXPECT_EQ(sorted.ids(), std::vector<int32_t>({1, 3, 4}));
  EXPECT_TRUE(sorted.c.sorted);
}

TEST(MinPPass, LeavesMaskedAndInfiniteSetsSane) {
  SamplerContext ctx;
  CandidateSet masked({-kInf, -kInf});
  MinPPass(0.5f).apply(masked.c, ctx);
  EXPECT_EQ(masked.c.size, 2); // nothing to scale by; the chain reports it
  CandidateSet infinite({0.0f, kInf, 5.0f, kInf});
  MinPPass(0.01f).apply(infinite.c, ctx);
  EXPECT_EQ(infinite.ids(), std::vector<int32_t>({1, 3}));
  CandidateSet off({0.0f, -30.0f});
  MinPPass(0.0f).apply(off.c, ctx);
  EXPECT_EQ(off.c.size, 2);
  EXPECT_TRUE(off.c.byId);
}

TEST(PenaltiesPass, AppliesRepeatFrequencyAndPresence) {
  // History 0, 1, 0: token 0 twice, token 1 once. Repeat 2, frequency 0.5,
  // presence 0.25:
  //   id 0:  2.0 / 2 = 1.0,   minus 2 * 0.5 + 0.25  ->  -0.25
  //   id 1: -1.0 * 2 = -2.0,  minus 1 * 0.5 + 0.25  ->  -2.75
  //   ids 2 and 3 are untouched.
  PenaltiesPass pass(64, 2.0f, 0.5f, 0.25f);
  for (int32_t token : {0, 1, 0})
    pass.accept(token);
  CandidateSet set({2.0f, -1.0f, 0.5f, 3.0f});
  set.c.sorted = true; // deliberately wrong; the pass must clear it
  set.c.probsValid = true;
  SamplerContext ctx;
  pass.apply(set.c, ctx);
  EXPECT_EQ(set.c.data[0].logit, -0.25f);
  EXPECT_EQ(set.c.data[1].logit, -2.75f);
  EXPECT_EQ(set.c.data[2].logit, 0.5f);
  EXPECT_EQ(set.c.data[3].logit, 3.0f);
  EXPECT_FALSE(set.c.sorted);
  EXPECT_FALSE(set.c.probsValid);
  EXPECT_TRUE(set.c.byId);
}

TEST(PenaltiesPass, OnlyTheLastNTokensCount) {
  // Window of 2 over 0, 1, 0, 2, 2: the window is {2, 2}.
  PenaltiesPass pass(2, 1.0f, 1.0f, 0.0f);
  for (int32_t token : {0, 1, 0, 2, 2})
    pass.accept(token);
  CandidateSet set({1.0f, 1.0f, 1.0f});
  SamplerContext ctx;
  pass.apply(set.c, ctx);
  EXPECT_EQ(set.c.data[0].logit, 1.0f);
  EXPECT_EQ(set.c.data[1].logit, 1.0f);
  EXPECT_EQ(set.c.data[2].logit, -1.0f); // 1 - 2 * 1
  // A window long enough for everything sees 0 twice, 1 once, 2 twice.
  PenaltiesPass wide(100, 1.0f, 1.0f, 0.0f);
  for (int32_t token : {0, 1, 0, 2, 2})
    wide.accept(token);
  CandidateSet all({1.0f, 1.0f, 1.0f});
  wide.apply(all.c, ctx);
  EXPECT_EQ(all.c.data[0].logit, -1.0f);
  EXPECT_EQ(all.c.data[1].logit, 0.0f);
  EXPECT_EQ(all.c.data[2].logit, -1.0f);
}

TEST(PenaltiesPass, FindsTokensAfterAReorderingPass) {
  // After top-k the candidates are no longer in id order: the pass must
  // still find its tokens, and ignore ids that were cut.
  PenaltiesPass pass(8, 2.0f, 0.0f, 0.0f);
  for (int32_t token : {4, 1, 0})
    pass.accept(token);
  CandidateSet set({1.0f, 4.0f, 3.0f, -5.0f, 2.0f});
  SamplerContext ctx;
  TopKPass(3).apply(set.c, ctx); // keeps 1, 2, 4
  EXPECT_FALSE(set.c.byId);
  pass.apply(set.c, ctx);
  EXPECT_EQ(set.ids(), std::vector<int32_t>({1, 2, 4}));
  EXPECT_EQ(set.logitOf(1), 2.0f);
  EXPECT_EQ(set.logitOf(2), 3.0f);
  EXPECT_EQ(set.logitOf(4), 1.0f);
}

TEST(PenaltiesPass, KeepsMaskedTokensMasked) {
  PenaltiesPass pass(4, 1.5f, 0.3f, -0.7f);
  for (int32_t token : {0, 1, 2, 9}) // 9 is outside this vocabulary
    pass.accept(token);
  CandidateSet set({-kInf, kInf, 0.0f});
  SamplerContext ctx;
  pass.apply(set.c, ctx);
  EXPECT_EQ(set.c.data[0].logit, -kInf);
  EXPECT_EQ(set.c.data[1].logit, kInf);
  EXPECT_EQ(set.c.data[2].logit, 0.0f * 1.5f - (0.3f - 0.7f));
}

TEST(LogitBiasPass, AddsBiasesAndBans) {
  // Repeated ids add up; out-of-range ids are ignored; a -inf ban beats a
  // +inf logit.
  LogitBiasPass pass({{0, 1.0f}, {2, -kInf}, {0, 0.5f}, {3, -kInf}, {99, 4.0f}});
  CandidateSet set({1.0f, 2.0f, 3.0f, kInf});
  SamplerContext ctx;
  pass.apply(set.c, ctx);
  EXPECT_EQ(set.c.data[0].logit, 2.5f);
  EXPECT_EQ(set.c.data[1].logit, 2.0f);
  EXPECT_EQ(set.c.data[2].logit, -kInf);
  EXPECT_EQ(set.c.data[3].logit, -kInf);
  EXPECT_EQ(pass.describe(), "logit-bias(0=1.5, 2=-inf, 3=-inf, 99=4)");
  // After a reordering pass the biases still reach their ids.
  CandidateSet reordered({1.0f, 2.0f, 3.0f, 0.0f});
  TopKPass(3).apply(reordered.c, ctx);
  pass.apply(reordered.c, ctx);
  EXPECT_EQ(reordered.logitOf(0), 2.5f);
  EXPECT_EQ(reordered.logitOf(2), -kInf);
}

//===----------------------------------------------------------------------===//
// Composition: the order, the selector, describe().
//===----------------------------------------------------------------------===//

TEST(SamplerChainOrder, DescribesEveryPassInOrder) {
  SamplingParams params = everything(42);
  EXPECT_EQ(SamplerChain::fromParams(params, nullptr).describe(),
            "logit-bias(3=2, 11=-inf, 4000=-1.5) -> penalties(last-n=32, "
            "repeat=1.3, frequency=0.1, presence=0.2) -> top-k(50) -> "
            "top-p(0.95) -> min-p(0.02) -> temperature(0.8) -> dist(seed=42)");
  params.order = {ProcessorKind::Temperature, ProcessorKind::MinP, ProcessorKind::TopK};
  EXPECT_EQ(SamplerChain::fromParams(params, nullptr).describe(),
            "logit-bias(3=2, 11=-inf, 4000=-1.5) -> temperature(0.8) -> "
            "min-p(0.02) -> top-k(50) -> dist(seed=42)");
  params.order = {};
  params.logitBias = {};
  EXPECT_EQ(SamplerChain::fromParams(params, nullptr).describe(), "dist(seed=42)");
  // Temperature 0: only what can move the argmax runs before greedy.
  params = everything(42);
  params.temperature = 0.0f;
  EXPECT_EQ(SamplerChain::fromParams(params, nullptr).describe(),
            "logit-bias(3=2, 11=-inf, 4000=-1.5) -> penalties(last-n=32, "
            "repeat=1.3, frequency=0.1, presence=0.2) -> greedy");
  // Penalties with no effect, or no window, are left out.
  params.repeatPenalty = 1.0f;
  params.frequencyPenalty = params.presencePenalty = 0.0f;
  params.logitBias = {};
  EXPECT_EQ(SamplerChain::fromParams(params, nullptr).describe(), "greedy");
  params = everything(42);
  params.repeatLastN = 0;
  params.temperature = 0.0f;
  params.logitBias = {};
  EXPECT_EQ(SamplerChain::fromParams(params, nullptr).describe(), "greedy");
}

TEST(SamplerChainOrder, TheOrderChangesTheResult) {
  // Min-p before the temperature cuts at T = 1, where p1/p0 = 0.6 and
  // p2/p0 = 0.4 fall below 0.7; after T = 4 the ratios are 0.6^(1/4) = 0.88
  // and 0.4^(1/4) = 0.80, and all three tokens survive.
  std::vector<float> logits = logsOf({0.5, 0.3, 0.2});
  SamplingParams params{4.0f, 0, 1.0f, 7};
  params.minP = 0.7f;
  SamplerChain minPFirst = SamplerChain::fromParams(params, nullptr);
  params.order = {ProcessorKind::Temperature, ProcessorKind::MinP};
  SamplerChain temperatureFirst = SamplerChain::fromParams(params, nullptr);
  int minPFirstOthers = 0, temperatureFirstOthers = 0;
  for (int i = 0; i < 2000; ++i) {
    minPFirstOthers += minPFirst.sample(logits.data(), 3) != 0;
    temperatureFirstOthers += temperatureFirst.sample(logits.data(), 3) != 0;
  }
  EXPECT_EQ(minPFirstOthers, 0);
  EXPECT_GT(temperatureFirstOthers, 500);
}

TEST(SamplerChainOrder, PenaltiesAndBiasSteerGreedy) {
  // Greedy repeats token 0 forever; a repetition penalty over the last 2
  // tokens alternates 0 and 1, and a ban removes 0 altogether.
  std::vector<float> logits = {2.0f, 1.5f, 0.0f};
  SamplingParams params{0.0f, 0, 1.0f, 0};
  params.repeatPenalty = 2.0f;
  params.repeatLastN = 1;
  SamplerChain chain = SamplerChain::fromParams(params, nullptr);
  std::vector<int32_t> tokens;
  for (int i = 0; i < 4; ++i)
    tokens.push_back(chain.sample(logits.data(), 3));
  EXPECT_EQ(tokens, std::vector<int32_t>({0, 1, 0, 1}));
  params = SamplingParams{0.0f, 0, 1.0f, 0};
  params.logitBias = {{0, -kInf}};
  EXPECT_EQ(SamplerChain::fromParams(params, nullptr).sample(logits.data(), 3), 1);
}

TEST(SamplerChainOrder, PromptTokensFeedThePenalties) {
  // accept() (the prompt) counts exactly like sampled tokens.
  std::vector<float> logits = {2.0f, 1.5f, 0.0f};
  SamplingParams params{0.0f, 0, 1.0f, 0};
  params.presencePenalty = 1.0f;
  SamplerChain chain = SamplerChain::fromParams(params, nullptr);
  chain.accept(0);
  EXPECT_EQ(chain.sample(logits.data(), 3), 1); // 2 - 1 < 1.5
}

//===----------------------------------------------------------------------===//
// Edge cases every configuration must agree on.
//===----------------------------------------------------------------------===//

TEST(SamplerEdgeCases, TopKOneIsGreedyForAnySeedAndOrder) {
  std::vector<std::vector<float>> steps;
  for (uint64_t s = 0; s < 30; ++s)
    steps.push_back(randomLogits(2000, 900 + s));
  SamplerChain greedy = SamplerChain::fromParams({0.0f, 0, 1.0f, 0}, nullptr);
  auto expected = drawSequence(greedy, steps);
  for (uint64_t seed : {1, 2, 3}) {
    SamplingParams params{1.7f, 1, 0.5f, seed};
    params.minP = 0.3f;
    SamplerChain topK1 = SamplerChain::fromParams(params, nullptr);
    EXPECT_EQ(drawSequence(topK1, steps), expected) << topK1.describe();
    params.order = {ProcessorKind::Temperature, ProcessorKind::TopP, ProcessorKind::TopK};
    SamplerChain reordered = SamplerChain::fromParams(params, nullptr);
    EXPECT_EQ(drawSequence(reordered, steps), expected) << reordered.describe();
  }
}

TEST(SamplerEdgeCases, TopPOneAndMinPZeroTruncateNothing) {
  std::vector<std::vector<float>> steps;
  for (uint64_t s = 0; s < 50; ++s)
    steps.push_back(randomLogits(700, 300 + s));
  SamplerChain plain = SamplerChain::fromParams({0.9f, 0, 1.0f, 5}, nullptr);
  // Built by hand, so the passes run even though fromParams would skip
  // them as no-ops.
  SamplerChain explicitPasses;
  explicitPasses.add(std::make_unique<TopPPass>(1.0f))
      .add(std::make_unique<MinPPass>(0.0f))
      .add(std::make_unique<TemperaturePass>(0.9f))
      .add(std::make_unique<DistPass>(5));
  EXPECT_EQ(drawSequence(explicitPasses, steps), drawSequence(plain, steps));
  CandidateSet set(randomLogits(700, 1));
  SamplerContext ctx;
  TopPPass(1.0f).apply(set.c, ctx);
  EXPECT_EQ(set.c.size, 700);
  EXPECT_TRUE(set.c.byId);
}

TEST(SamplerEdgeCases, TemperatureZeroIsGreedy) {
  SamplingParams params = everything(9);
  params.temperature = 0.0f;
  params.logitBias = {};
  params.repeatPenalty = 1.0f;
  params.frequencyPenalty = params.presencePenalty = 0.0f;
  SamplerChain chain = SamplerChain::fromParams(params, nullptr);
  for (uint64_t s = 0; s < 20; ++s) {
    std::vector<float> logits = randomLogits(5000, 40 + s);
    int32_t best = 0;
    for (int32_t i = 1; i < 5000; ++i)
      if (logits[i] > logits[best])
        best = i; // strict: the lowest id wins ties
    EXPECT_EQ(chain.sample(logits.data(), 5000), best);
  }
}

TEST(SamplerEdgeCases, TiesBreakToTheLowestId) {
  std::vector<float> logits = {0.0f, 7.0f, 7.0f, 7.0f, 1.0f};
  for (SamplingParams params : {SamplingParams{0.0f, 0, 1.0f, 0}, SamplingParams{1.0f, 1, 1.0f, 3},
                                SamplingParams{1.0f, 0, 1e-6f, 3}}) {
    SamplerChain chain = SamplerChain::fromParams(params, nullptr);
    EXPECT_EQ(chain.sample(logits.data(), 5), 1) << chain.describe();
  }
  // Top-k 2 keeps the two lowest ids of the three tied.
  CandidateSet set(logits);
  SamplerContext ctx;
  TopKPass(2).apply(set.c, ctx);
  EXPECT_EQ(set.ids(), std::vector<int32_t>({1, 2}));
}

TEST(SamplerEdgeCases, AVocabularyOfOne) {
  float one = -3.0f, masked = -kInf, nan = kNaN;
  for (SamplingParams params :
       {SamplingParams{0.0f, 0, 1.0f, 0}, SamplingParams{1.0f, 0, 1.0f, 1}, everything(2)}) {
    params.logitBias.clear(); // ids beyond a one-token vocabulary
    SamplerChain chain = SamplerChain::fromParams(params, nullptr);
    chain.enableLogprobs(3, LogprobsMode::Processed);
    for (int i = 0; i < 5; ++i) {
      EXPECT_EQ(chain.sample(&one, 1), 0) << chain.describe();
      ASSERT_NE(chain.lastLogprobs(), nullptr);
      EXPECT_EQ(chain.lastLogprobs()->logprob, 0.0f);
    }
    EXPECT_EQ(chain.sample(&masked, 1), -1) << chain.describe();
    EXPECT_EQ(chain.lastLogprobs(), nullptr);
    EXPECT_EQ(chain.sample(&nan, 1), -1) << chain.describe();
  }
}

TEST(SamplerEdgeCases, NothingLeftToPickIsMinusOne) {
  // All -inf after processing, whatever made them so: the model's logits,
  // NaNs, or a bias that bans every token.
  std::vector<float> finite = {1.0f, 2.0f, 3.0f};
  std::vector<float> nans(3, kNaN);
  for (bool greedy : {true, false}) {
    SamplingParams params = everything(3);
    params.temperature = greedy ? 0.0f : 0.7f;
    params.logitBias = {{0, -kInf}, {1, -kInf}, {2, -kInf}};
    SamplerChain banned = SamplerChain::fromParams(params, nullptr);
    EXPECT_EQ(banned.sample(finite.data(), 3), -1) << banned.describe();
    params.logitBias.clear();
    SamplerChain chain = SamplerChain::fromParams(params, nullptr);
    EXPECT_EQ(chain.sample(nans.data(), 3), -1) << chain.describe();
    EXPECT_EQ(chain.sample(finite.data(), 3) >= 0, true); // still usable
  }
}

//===----------------------------------------------------------------------===//
// Logprobs.
//===----------------------------------------------------------------------===//

TEST(Logprobs, RawAreTheModelsLogSoftmax) {
  std::vector<float> logits = logsOf({0.5, 0.3, 0.2});
  SamplingParams params{0.0f, 0, 1.0f, 0};
  params.logprobs = true;
  params.topLogprobs = 2;
  params.logitBias = {{0, -kInf}}; // raw: reported before the ban
  SamplerChain chain = SamplerChain::fromParams(params, nullptr);
  ASSERT_EQ(chain.sample(logits.data(), 3), 1);
  const StepLogprobs *record = chain.lastLogprobs();
  ASSERT_NE(record, nullptr);
  EXPECT_EQ(record->token, 1);
  EXPECT_NEAR(record->logprob, std::log(0.3), 1e-6);
  ASSERT_EQ(record->top.size(), 2u);
  EXPECT_EQ(record->top[0].token, 0);
  EXPECT_NEAR(record->top[0].logprob, std::log(0.5), 1e-6);
  EXPECT_EQ(record->top[1].token, 1);
  EXPECT_NEAR(record->top[1].logprob, std::log(0.3), 1e-6);
}

TEST(Logprobs, ProcessedAreTheSelectorsDistribution) {
  // Top-k 2 renormalizes 0.5 and 0.3 to 0.625 and 0.375, and T = 0.5
  // squares them: 0.25 / 0.34 and 0.09 / 0.34.
  std::vector<float> logits = logsOf({0.5, 0.3, 0.2});
  SamplingParams params{0.5f, 2, 1.0f, 11};
  params.logprobs = true;
  params.topLogprobs = 5;
  params.logprobsMode = LogprobsMode::Processed;
  SamplerChain chain = SamplerChain::fromParams(params, nullptr);
  bool sawEach[2] = {false, false};
  for (int i = 0; i < 50; ++i) {
    int32_t token = chain.sample(logits.data(), 3);
    ASSERT_TRUE(token == 0 || token == 1) << token;
    sawEach[token] = true;
    const StepLogprobs *record = chain.lastLogprobs();
    ASSERT_NE(record, nullptr);
    EXPECT_NEAR(record->logprob, std::log(token == 0 ? 0.25 / 0.34 : 0.09 / 0.34), 1e-6);
    ASSERT_EQ(record->top.size(), 2u); // token 2 was cut: never listed
    EXPECT_EQ(record->top[0].token, 0);
    EXPECT_EQ(record->top[1].token, 1);
  }
  EXPECT_TRUE(sawEach[0] && sawEach[1]);
}

TEST(Logprobs, ZeroAlternativesAndImpossibleTokens) {
  std::vector<float> logits = {0.0f, -kInf, 0.0f, kNaN};
  SamplerChain chain = SamplerChain::fromParams({0.0f, 0, 1.0f, 0}, nullptr);
  chain.enableLogprobs(0, LogprobsMode::Raw);
  ASSERT_EQ(chain.sample(logits.data(), 4), 0);
  EXPECT_TRUE(chain.lastLogprobs()->top.empty());
  EXPECT_NEAR(chain.lastLogprobs()->logprob, std::log(0.5), 1e-6);
  chain.enableLogprobs(10, LogprobsMode::Raw);
  ASSERT_EQ(chain.sample(logits.data(), 4), 0);
  ASSERT_EQ(chain.lastLogprobs()->top.size(), 2u); // -inf and NaN: p = 0
  EXPECT_EQ(chain.lastLogprobs()->top[1].token, 2);
  // Off: nothing recorded.
  SamplerChain off = SamplerChain::fromParams({0.0f, 0, 1.0f, 0}, nullptr);
  off.sample(logits.data(), 4);
  EXPECT_EQ(off.lastLogprobs(), nullptr);
}

TEST(Logprobs, TopKMatchesAFullSortAcrossChunks) {
  // 20000 ids span five 4096-id chunks: the merged best K must equal a
  // full sort's, and the logprobs must match a double-precision softmax.
  std::vector<float> logits = randomLogits(20000, 77);
  SamplerChain chain = SamplerChain::fromParams({0.0f, 0, 1.0f, 0}, nullptr);
  chain.enableLogprobs(40, LogprobsMode::Raw);
  int32_t token = chain.sample(logits.data(), 20000);
  std::vector<int32_t> order(20000);
  for (int32_t i = 0; i < 20000; ++i)
    order[i] = i;
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return logits[a] != logits[b] ? logits[a] > logits[b] : a < b;
  });
  double sum = 0.0;
  for (float logit : logits)
    sum += std::exp(static_cast<double>(logit) - logits[order[0]]);
  const StepLogprobs *record = chain.lastLogprobs();
  ASSERT_NE(record, nullptr);
  EXPECT_EQ(token, order[0]);
  ASSERT_EQ(record->top.size(), 40u);
  for (int k = 0; k < 40; ++k) {
    EXPECT_EQ(record->top[k].token, order[k]) << "rank " << k;
    EXPECT_NEAR(record->top[k].logprob, logits[order[k]] - logits[order[0]] - std::log(sum), 1e-5);
  }
}

//===----------------------------------------------------------------------===//
// Thread-count invariance of every pass, on Llama-sized vocabularies.
//===----------------------------------------------------------------------===//

TEST(SamplerChainDeterminism, EveryPassGivesTheSameTokensAndLogprobs) {
  tbb::task_arena one(1), two(2);
  for (int32_t vocab : {32000, 128000}) {
    std::vector<std::vector<float>> steps;
    for (uint64_t s = 0; s < 12; ++s) {
      steps.push_back(randomLogits(vocab, 7000 + s));
      for (float &logit : steps.back())
        logit *= 0.4f; // flat enough that the truncations keep thousands
    }
    SamplingParams defaultOrder = everything(8);
    defaultOrder.topK = 0;
    SamplingParams reordered = everything(8);
    reordered.order = {ProcessorKind::Temperature, ProcessorKind::MinP, ProcessorKind::Penalties,
                       ProcessorKind::TopP};
    SamplingParams greedy = everything(8);
    greedy.temperature = 0.0f;
    for (SamplingParams params : {defaultOrder, reordered, greedy}) {
      for (LogprobsMode mode : {LogprobsMode::Raw, LogprobsMode::Processed}) {
        params.logprobs = true;
        params.topLogprobs = 20;
        params.logprobsMode = mode;
        std::vector<int32_t> tokens[3];
        std::vector<StepLogprobs> records[3];
        tbb::task_arena *arenas[3] = {nullptr, &one, &two};
        for (int a = 0; a < 3; ++a) {
          SamplerChain chain = SamplerChain::fromParams(params, arenas[a]);
          for (const auto &logits : steps) {
            tokens[a].push_back(chain.sample(logits.data(), vocab));
            records[a].push_back(*chain.lastLogprobs());
          }
        }
        std::string what = SamplerChain::fromParams(params, nullptr).describe() + " vocab " +
                           std::to_string(vocab);
        for (int a = 1; a < 3; ++a) {
          EXPECT_EQ(tokens[a], tokens[0]) << what;
          for (size_t s = 0; s < steps.size(); ++s) {
            const StepLogprobs &x = records[a][s], &y = records[0][s];
            EXPECT_EQ(std::memcmp(&x.logprob, &y.logprob, sizeof(float)), 0);
            ASSERT_EQ(x.top.size(), y.top.size()) << what;
            EXPECT_EQ(std::memcmp(x.top.data(), y.top.data(), x.top.size() * sizeof(TokenLogprob)),
                      0)
                << what;
          }
        }
      }
    }
  }
}

//===----------------------------------------------------------------------===//
// The fast paths against the plain algorithms they replace.
//===----------------------------------------------------------------------===//

TEST(SortByRank, EqualsStdSortWithRanksAbove) {
  // Radix and comparison paths, ties, signed zeros, infinities, large ids.
  Random rng(5);
  std::vector<Candidate> scratch;
  for (int32_t n : {0, 1, 7, 1023, 1024, 5000, 40000}) {
    std::vector<Candidate> data;
    for (int32_t i = 0; i < n; ++i) {
      float logit = static_cast<float>(static_cast<int>(rng.nextU32() % 64) - 32) / 4.0f;
      uint32_t special = rng.nextU32() % 50;
      if (special == 0)
        logit = -kInf;
      else if (special == 1)
        logit = kInf;
      else if (special == 2)
        logit = -0.0f;
      int32_t id = i % 3 == 0 ? 2147483647 - i : i * 7 + 3; // unique
      data.push_back({id, logit, static_cast<float>(i)});
    }
    std::vector<Candidate> expected = data;
    std::sort(expected.begin(), expected.end(), ranksAbove);
    sortByRank(data.data(), n, scratch);
    for (int32_t i = 0; i < n; ++i) {
      ASSERT_EQ(data[i].id, expected[i].id) << "n " << n << " at " << i;
      ASSERT_EQ(data[i].p, expected[i].p) << "the payload moves with its id";
    }
  }
}

TEST(TopPPass, MatchesAFullSortAtLlamaScale) {
  // 128k normal logits, flat (sigma 0.5) and peaked (sigma 3), nuclei from
  // one token to nearly the whole vocabulary: the bucketed selection must
  // give exactly what a full sort and a cumulative walk give.
  const int32_t n = 128000;
  for (float sigma : {0.5f, 3.0f}) {
    Random rng(static_cast<uint64_t>(sigma * 10));
    std::vector<float> logits(n);
    for (float &logit : logits) {
      float u1 = (static_cast<float>(rng.nextU32() >> 8) + 1.0f) / 16777217.0f;
      logit = sigma * std::sqrt(-2.0f * std::log(u1)) * std::cos(6.2831853f * rng.nextFloat());
    }
    std::vector<Candidate> reference = rankedByProbability(logits);
    SamplerContext ctx;
    for (float p : {1e-6f, 0.1f, 0.5f, 0.9f, 0.99f, 0.999999f}) {
      size_t keep = nucleusSize(reference, p);
      CandidateSet set(logits);
      TopPPass pass(p);
      pass.apply(set.c, ctx);
      ASSERT_EQ(static_cast<size_t>(set.c.size), keep) << "sigma " << sigma << " p " << p;
      for (size_t i = 0; i < keep; ++i)
        ASSERT_EQ(set.c.data[i].id, reference[i].id)
            << "sigma " << sigma << " p " << p << " rank " << i;
      // The same pass again (its buffers reused) gives the same nucleus.
      CandidateSet again(logits);
      pass.apply(again.c, ctx);
      EXPECT_EQ(again.ids(), set.ids());
    }
  }
}
