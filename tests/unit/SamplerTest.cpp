// Unit tests for sampling: parameter validation, the PRNG, each pass on
// hand-worked distributions, the chain's statistics, and determinism across
// thread counts.
#include "runtime/sampling/Sampler.h"
#include "SamplerTestSupport.h"
#include "runtime/sampling/Random.h"
#include "runtime/sampling/SamplerPasses.h"
#include "runtime/sampling/SamplingParams.h"

#include <gtest/gtest.h>

#include <tbb/task_arena.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <vector>

// Counts global allocations so a test can prove sample() allocates nothing
// once warmed up. noinline keeps GCC from pairing an inlined free() with
// operator new and warning (-Wmismatched-new-delete). ThreadSanitizer links
// its own operator new, which cannot be replaced.
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define QUILL_UNDER_TSAN 1
#endif
#endif
static std::atomic<long> gAllocations{0};
#ifndef QUILL_UNDER_TSAN
__attribute__((noinline)) void *operator new(std::size_t size) {
  gAllocations.fetch_add(1, std::memory_order_relaxed);
  if (void *p = std::malloc(size ? size : 1))
    return p;
  throw std::bad_alloc();
}
__attribute__((noinline)) void operator delete(void *p) noexcept { std::free(p); }
__attribute__((noinline)) void operator delete(void *p, std::size_t) noexcept { std::free(p); }
// The nothrow forms (std::stable_sort's temporary buffer uses them) must come
// from the same allocator as the plain ones they are freed with.
__attribute__((noinline)) void *operator new(std::size_t size, const std::nothrow_t &) noexcept {
  gAllocations.fetch_add(1, std::memory_order_relaxed);
  return std::malloc(size ? size : 1);
}
__attribute__((noinline)) void operator delete(void *p, const std::nothrow_t &) noexcept {
  std::free(p);
}
#endif

using namespace quill;
using namespace quill::test;

namespace {

/// Frequencies of each id over n draws from one chain.
std::vector<double> frequencies(SamplingParams params, const std::vector<float> &logits, int n) {
  SamplerChain chain = SamplerChain::fromParams(params, nullptr);
  std::vector<double> counts(logits.size(), 0.0);
  for (int i = 0; i < n; ++i) {
    int32_t id = chain.sample(logits.data(), static_cast<int32_t>(logits.size()));
    EXPECT_GE(id, 0);
    counts[id] += 1.0;
  }
  for (double &count : counts)
    count /= n;
  return counts;
}

/// Draws n tokens of a fresh chain over the same logits.
std::vector<int32_t> drawSequence(const SamplingParams &params, tbb::task_arena *arena,
                                  const std::vector<std::vector<float>> &steps) {
  SamplerChain chain = SamplerChain::fromParams(params, arena);
  std::vector<int32_t> out;
  for (const auto &logits : steps)
    out.push_back(chain.sample(logits.data(), static_cast<int32_t>(logits.size())));
  return out;
}

/// Pseudo-random logits in [-8, 8), with some exact ties, from our own PRNG
/// so the test data is the same everywhere.
std::vector<float> randomLogits(int32_t n, uint64_t seed) {
  Random rng(seed);
  std::vector<float> logits(n);
  for (float &logit : logits)
    logit = std::floor((rng.nextFloat() * 16.0f - 8.0f) * 64.0f) / 64.0f;
  return logits;
}

// Draw counts are binomial: with 100000 draws one standard deviation is at
// most 0.0016, so 0.01 is over 6 sigma.
constexpr int kDraws = 100000;
constexpr double kTolerance = 0.01;

void expectNear(const std::vector<double> &actual, const std::vector<double> &expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i)
    EXPECT_NEAR(actual[i], expected[i], kTolerance) << "id " << i;
}

} // namespace

//===----------------------------------------------------------------------===//
// SamplingParams validation.
//===----------------------------------------------------------------------===//

TEST(SamplingParams, DefaultsAndEdgesAreValid) {
  EXPECT_TRUE(validate(SamplingParams{}).isOk());
  EXPECT_TRUE(validate({0.0f, 0, 1.0f, 0}).isOk());   // greedy
  EXPECT_TRUE(validate({2.0f, 40, 1e-6f, 7}).isOk()); // tiny nucleus
}

TEST(SamplingParams, RejectsOutOfRange) {
  EXPECT_EQ(validate({1.0f, 0, 1.5f, 0}).message(), "invalid --top-p 1.5: must be in (0, 1]");
  EXPECT_EQ(validate({1.0f, 0, 0.0f, 0}).message(), "invalid --top-p 0: must be in (0, 1]");
  EXPECT_EQ(validate({-1.0f, 0, 1.0f, 0}).message(),
            "invalid --temp -1: must be a finite number >= 0 (0 = greedy)");
  EXPECT_EQ(validate({1.0f, -3, 1.0f, 0}).message(), "invalid --top-k -3: must be >= 0 (0 = off)");
  Status nanTopP = validate({1.0f, 0, kNaN, 0});
  EXPECT_FALSE(nanTopP.isOk());
  EXPECT_EQ(nanTopP.message().rfind("invalid --top-p nan", 0), 0u) << nanTopP.message();
  EXPECT_FALSE(validate({kNaN, 0, 1.0f, 0}).isOk());
  EXPECT_FALSE(validate({kInf, 0, 1.0f, 0}).isOk());
}

//===----------------------------------------------------------------------===//
// Random.
//===----------------------------------------------------------------------===//

TEST(Random, MatchesXorshift64Star) {
  // Computed independently (Python) from the xorshift64* recurrence.
  Random rng(42);
  EXPECT_EQ(rng.nextU32(), 1456360119u);
  EXPECT_EQ(rng.nextU32(), 3359763283u);
  EXPECT_EQ(rng.nextU32(), 3393612768u);
  Random floats(42);
  EXPECT_EQ(floats.nextFloat(), 1456360119u / 256 / 16777216.0f);
}

TEST(Random, SeedZeroIsNotStuck) {
  Random rng(0);
  EXPECT_EQ(rng.nextU32(), 226735074u);
  EXPECT_EQ(rng.nextU32(), 1422150777u);
}

TEST(Random, FloatsAreInUnitInterval) {
  Random rng(7);
  double sum = 0.0;
  for (int i = 0; i < kDraws; ++i) {
    float x = rng.nextFloat();
    ASSERT_GE(x, 0.0f);
    ASSERT_LT(x, 1.0f);
    sum += x;
  }
  EXPECT_NEAR(sum / kDraws, 0.5, 0.005);
}

//===----------------------------------------------------------------------===//
// Single passes on hand-worked inputs.
//===----------------------------------------------------------------------===//

TEST(SamplerPasses, SoftmaxRecoversProbabilities) {
  CandidateSet set(logsOf({0.5, 0.3, 0.2}));
  SamplerContext ctx;
  computeProbabilities(set.c, ctx);
  EXPECT_TRUE(set.c.probsValid);
  EXPECT_NEAR(set.c.data[0].p, 0.5f, 1e-6);
  EXPECT_NEAR(set.c.data[1].p, 0.3f, 1e-6);
  EXPECT_NEAR(set.c.data[2].p, 0.2f, 1e-6);
}

TEST(SamplerPasses, SoftmaxDegenerateLogits) {
  SamplerContext ctx;
  CandidateSet masked({-kInf, -kInf, -kInf});
  computeProbabilities(masked.c, ctx);
  EXPECT_EQ(masked.c.data[0].p, 1.0f); // lowest id of the tied best
  EXPECT_EQ(masked.c.data[1].p, 0.0f);
  CandidateSet infinite({0.0f, kInf, -kInf, kInf});
  computeProbabilities(infinite.c, ctx);
  EXPECT_EQ(infinite.c.data[0].p, 0.0f);
  EXPECT_EQ(infinite.c.data[1].p, 0.5f);
  EXPECT_EQ(infinite.c.data[3].p, 0.5f);
}

TEST(SamplerPasses, TopPKeepsTheSmallestNucleusAboveP) {
  // Cumulative mass 0.5, 0.8, 1.0: P = 0.6 needs two tokens, 0.4 one, and
  // 0.9 all three.
  for (auto [p, expected] : std::vector<std::pair<float, std::vector<int32_t>>>{
           {0.6f, {0, 1}}, {0.4f, {0}}, {0.9f, {0, 1, 2}}}) {
    CandidateSet set(logsOf({0.5, 0.3, 0.2}));
    SamplerContext ctx;
    TopPPass(p).apply(set.c, ctx);
    EXPECT_EQ(set.ids(), expected) << "top-p " << p;
    EXPECT_TRUE(set.c.sorted);
  }
}

TEST(SamplerPasses, TopPDropsTheTailBeforeSorting) {
  // 1000 ids: id 7 has 0.6, id 3 has 0.3, the other 998 share 0.1. Sorted,
  // 0.6 + 0.3 > 0.85, so the nucleus is {7, 3}, in that order.
  std::vector<double> probs(1000, 0.1 / 998);
  probs[7] = 0.6;
  probs[3] = 0.3;
  CandidateSet set(logsOf(probs));
  SamplerContext ctx;
  TopPPass(0.85f).apply(set.c, ctx);
  EXPECT_EQ(set.ids(), std::vector<int32_t>({7, 3}));
  EXPECT_FALSE(set.c.probsValid); // must be renormalized over the two
}

TEST(SamplerPasses, TopPMatchesAFullSort) {
  // Nuclei of hundreds to thousands of ids cross several of top-p's
  // incremental sort blocks; the result must equal a plain full sort.
  for (float p : {0.3f, 0.9f, 0.99f, 0.9999f}) {
    for (uint64_t seed : {1, 2, 3}) {
      std::vector<float> logits = randomLogits(5000, seed);
      for (float &logit : logits)
        logit *= 0.5f; // flatter, so nuclei are large
      std::vector<Candidate> reference = rankedByProbability(logits);
      SamplerContext ctx;
      std::vector<int32_t> expected;
      for (size_t i = 0; i < nucleusSize(reference, p); ++i)
        expected.push_back(reference[i].id);

      CandidateSet set(logits);
      TopPPass(p).apply(set.c, ctx);
      EXPECT_EQ(set.ids(), expected) << "top-p " << p << " seed " << seed;
    }
  }
}

TEST(SamplerPasses, TopPSmallerThanOneTokenKeepsTheBest) {
  // Uniform over 1000: every p = 0.001 is below the (1 - P) / 999 bound, so
  // the bound drops nothing and the best-ranked id (the lowest) is kept.
  CandidateSet set(std::vector<float>(1000, 0.0f));
  SamplerContext ctx;
  TopPPass(1e-6f).apply(set.c, ctx);
  EXPECT_EQ(set.ids(), std::vector<int32_t>({0}));
}

TEST(SamplerPasses, TopKKeepsTheBestRankedSorted) {
  SamplerContext ctx;
  CandidateSet two({1.0f, 5.0f, 3.0f, 5.0f, 2.0f});
  TopKPass(2).apply(two.c, ctx);
  EXPECT_EQ(two.ids(), std::vector<int32_t>({1, 3})); // tie: lower id first
  EXPECT_TRUE(two.c.sorted);
  CandidateSet three({1.0f, 5.0f, 3.0f, 5.0f, 2.0f});
  TopKPass(3).apply(three.c, ctx);
  EXPECT_EQ(three.ids(), std::vector<int32_t>({1, 3, 2}));
  CandidateSet all({1.0f, 5.0f});
  TopKPass(10).apply(all.c, ctx);
  EXPECT_EQ(all.ids(), std::vector<int32_t>({0, 1}));
}

TEST(SamplerPasses, TemperatureDividesLogits) {
  CandidateSet set({2.0f, -4.0f, -kInf});
  SamplerContext ctx;
  set.c.probsValid = true;
  TemperaturePass(2.0f).apply(set.c, ctx);
  EXPECT_EQ(set.c.data[0].logit, 1.0f);
  EXPECT_EQ(set.c.data[1].logit, -2.0f);
  EXPECT_EQ(set.c.data[2].logit, -kInf);
  EXPECT_FALSE(set.c.probsValid);
}

TEST(SamplerPasses, GreedyTakesTheLowestIdOnTies) {
  SamplerContext ctx;
  CandidateSet set({1.0f, 3.0f, 3.0f, 2.0f});
  GreedyPass().apply(set.c, ctx);
  EXPECT_EQ(set.c.selected, 1);
}

//===----------------------------------------------------------------------===//
// The chain.
//===----------------------------------------------------------------------===//

TEST(SamplerChain, Describe) {
  EXPECT_EQ(SamplerChain::fromParams({0.0f, 40, 0.9f, 1}, nullptr).describe(), "greedy");
  EXPECT_EQ(SamplerChain::fromParams({}, nullptr).describe(), "dist(seed=0)");
  // The default order: truncations first, the temperature last.
  EXPECT_EQ(SamplerChain::fromParams({0.8f, 40, 0.9f, 42}, nullptr).describe(),
            "top-k(40) -> top-p(0.9) -> temperature(0.8) -> dist(seed=42)");
  EXPECT_EQ(SamplerChain().describe(), "(empty)");
}

TEST(SamplerChain, TemperatureZeroIsArgmaxLowestIdOnTies) {
  SamplerChain chain = SamplerChain::fromParams({0.0f, 0, 1.0f, 0}, nullptr);
  std::vector<float> logits = {1.0f, 3.0f, kNaN, 3.0f, 2.0f};
  for (int i = 0; i < 5; ++i)
    EXPECT_EQ(chain.sample(logits.data(), 5), 1);
  // Nothing is possible: no token rather than an arbitrary one.
  std::vector<float> masked = {-kInf, -kInf};
  EXPECT_EQ(chain.sample(masked.data(), 2), -1);
}

TEST(SamplerChain, TopKOneIsArgmax) {
  SamplerChain chain = SamplerChain::fromParams({1.0f, 1, 1.0f, 5}, nullptr);
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    std::vector<float> logits = randomLogits(3000, seed);
    int32_t best = 0;
    for (int32_t i = 1; i < 3000; ++i)
      if (logits[i] > logits[best])
        best = i;
    EXPECT_EQ(chain.sample(logits.data(), 3000), best);
  }
}

TEST(SamplerChain, PlainDrawsFollowTheDistribution) {
  expectNear(frequencies({1.0f, 0, 1.0f, 1234}, logsOf({0.5, 0.3, 0.2}), kDraws), {0.5, 0.3, 0.2});
}

TEST(SamplerChain, TopPRenormalizesTheNucleus) {
  // top-p 0.6 keeps {0.5, 0.3}: renormalized 0.625 and 0.375.
  expectNear(frequencies({1.0f, 0, 0.6f, 99}, logsOf({0.5, 0.3, 0.2}), kDraws),
             {0.625, 0.375, 0.0});
}

TEST(SamplerChain, TopKRenormalizesTheKept) {
  expectNear(frequencies({1.0f, 2, 1.0f, 3}, logsOf({0.5, 0.3, 0.2}), kDraws), {0.625, 0.375, 0.0});
}

TEST(SamplerChain, TemperatureReshapes) {
  // T = 0.5 squares the probabilities: 0.25, 0.09, 0.04 over 0.38.
  expectNear(frequencies({0.5f, 0, 1.0f, 11}, logsOf({0.5, 0.3, 0.2}), kDraws),
             {0.25 / 0.38, 0.09 / 0.38, 0.04 / 0.38});
  // T = 2 takes square roots: 0.7071, 0.5477, 0.4472 over 1.7020.
  double a = std::sqrt(0.5), b = std::sqrt(0.3), c = std::sqrt(0.2);
  expectNear(frequencies({2.0f, 0, 1.0f, 12}, logsOf({0.5, 0.3, 0.2}), kDraws),
             {a / (a + b + c), b / (a + b + c), c / (a + b + c)});
}

TEST(SamplerChain, TopPCutsBeforeTheTemperatureByDefault) {
  // The nucleus is cut at T = 1 (0.5 + 0.3 > 0.6 keeps two tokens), then
  // T = 0.5 squares what is left: 0.25 and 0.09 over 0.34.
  expectNear(frequencies({0.5f, 0, 0.6f, 13}, logsOf({0.5, 0.3, 0.2}), kDraws),
             {0.25 / 0.34, 0.09 / 0.34, 0.0});
  // Temperature first (--samplers temperature,top-p): at T = 0.5 the best
  // token already holds 0.658 > 0.6, so the nucleus is that one token.
  SamplingParams params{0.5f, 0, 0.6f, 13};
  params.order = {ProcessorKind::Temperature, ProcessorKind::TopP};
  expectNear(frequencies(params, logsOf({0.5, 0.3, 0.2}), 1000), {1.0, 0.0, 0.0});
}

TEST(SamplerChain, OneFloatPerSampledToken) {
  // Four equal logits: p = 0.25 exactly and the CDF is 0.25, 0.5, 0.75, 1,
  // so each token must be floor(coin * 4) for the next coin of the stream.
  SamplerChain chain = SamplerChain::fromParams({1.0f, 0, 1.0f, 77}, nullptr);
  Random coins(77);
  std::vector<float> logits(4, 0.5f);
  for (int i = 0; i < 1000; ++i)
    ASSERT_EQ(chain.sample(logits.data(), 4), static_cast<int32_t>(coins.nextFloat() * 4.0f))
        << "draw " << i;
}

TEST(SamplerChain, SameSeedSameSequence) {
  std::vector<std::vector<float>> steps;
  for (uint64_t s = 0; s < 50; ++s)
    steps.push_back(randomLogits(512, s + 100));
  SamplingParams params{0.9f, 0, 0.95f, 31337};
  auto first = drawSequence(params, nullptr, steps);
  EXPECT_EQ(drawSequence(params, nullptr, steps), first);
  params.seed = 31338;
  EXPECT_NE(drawSequence(params, nullptr, steps), first);
}

TEST(SamplerChain, NaNAndInfiniteLogits) {
  SamplerChain chain = SamplerChain::fromParams({1.0f, 0, 0.9f, 5}, nullptr);
  std::vector<float> nanLogits = {kNaN, 0.0f, kNaN};
  std::vector<float> infLogits = {0.0f, kInf, 0.0f, kInf};
  std::vector<float> masked = {-kInf, -kInf, -kInf};
  int ones = 0;
  for (int i = 0; i < 200; ++i) {
    EXPECT_EQ(chain.sample(nanLogits.data(), 3), 1);
    int32_t id = chain.sample(infLogits.data(), 4);
    EXPECT_TRUE(id == 1 || id == 3) << id;
    ones += id == 1;
    EXPECT_EQ(chain.sample(masked.data(), 3), -1);
  }
  EXPECT_GT(ones, 50);
  EXPECT_LT(ones, 150);
  EXPECT_EQ(chain.sample(nullptr, 3), -1);
  EXPECT_EQ(chain.sample(nanLogits.data(), 0), -1);
}

TEST(SamplerChain, VocabularyMayChangeBetweenCalls) {
  SamplerChain chain = SamplerChain::fromParams({1.0f, 0, 0.9f, 5}, nullptr);
  for (int32_t vocab : {3, 32000, 5, 20000}) {
    std::vector<float> logits = randomLogits(vocab, static_cast<uint64_t>(vocab));
    int32_t id = chain.sample(logits.data(), vocab);
    EXPECT_GE(id, 0);
    EXPECT_LT(id, vocab);
  }
}

TEST(SamplerChain, SteadyStateDoesNotAllocate) {
#ifdef QUILL_UNDER_TSAN
  GTEST_SKIP() << "ThreadSanitizer's operator new cannot be replaced to count allocations";
#endif
  const int32_t vocab = 32000;
  std::vector<float> logits = randomLogits(vocab, 9);
  // Every pass, penalties (whose window fills as tokens are accepted) and
  // logprobs included.
  SamplingParams everything{0.8f, 40, 0.9f, 1};
  everything.minP = 0.05f;
  everything.repeatPenalty = 1.1f;
  everything.frequencyPenalty = 0.2f;
  everything.presencePenalty = 0.1f;
  everything.logitBias = {{5, 1.0f}, {17, -kInf}};
  everything.logprobs = true;
  everything.topLogprobs = 5;
  SamplingParams processed = everything;
  processed.logprobsMode = LogprobsMode::Processed;
  processed.topK = 0;
  SamplingParams greedyPenalized = everything;
  greedyPenalized.temperature = 0.0f;
  for (const SamplingParams &params :
       {SamplingParams{0.0f, 0, 1.0f, 1}, SamplingParams{1.0f, 0, 1.0f, 1},
        SamplingParams{0.8f, 40, 0.9f, 1}, SamplingParams{0.8f, 0, 0.9f, 1}, everything, processed,
        greedyPenalized}) {
    SamplerChain chain = SamplerChain::fromParams(params, nullptr);
    chain.sample(logits.data(), vocab); // first use sizes the buffers
    long before = gAllocations.load();
    for (int i = 0; i < 20; ++i)
      chain.sample(logits.data(), vocab);
    EXPECT_EQ(gAllocations.load(), before) << chain.describe();
  }
}

//===----------------------------------------------------------------------===//
// Determinism across thread counts, on a Llama-sized vocabulary.
//===----------------------------------------------------------------------===//

TEST(SamplerDeterminism, ProbabilitiesAreBitwiseIdentical) {
  const int32_t vocab = 32000;
  std::vector<float> logits = randomLogits(vocab, 2024);
  tbb::task_arena one(1), two(2);
  std::vector<Candidate> reference;
  for (tbb::task_arena *arena : {static_cast<tbb::task_arena *>(nullptr), &one, &two}) {
    CandidateSet set(logits);
    SamplerContext ctx(arena);
    computeProbabilities(set.c, ctx);
    if (reference.empty()) {
      reference = set.storage;
      continue;
    }
    EXPECT_EQ(std::memcmp(reference.data(), set.storage.data(), sizeof(Candidate) * vocab), 0);
  }
}

TEST(SamplerDeterminism, TokensIdenticalForOneAndTwoThreads) {
  const int32_t vocab = 32000;
  std::vector<std::vector<float>> steps;
  for (uint64_t s = 0; s < 40; ++s)
    steps.push_back(randomLogits(vocab, 500 + s));
  tbb::task_arena one(1), two(2);
  for (SamplingParams params :
       {SamplingParams{0.0f, 0, 1.0f, 0}, SamplingParams{1.0f, 0, 1.0f, 8},
        SamplingParams{0.7f, 0, 0.9f, 8}, SamplingParams{1.3f, 40, 0.95f, 8},
        SamplingParams{5.0f, 0, 0.999f, 8}}) {
    auto serial = drawSequence(params, nullptr, steps);
    EXPECT_EQ(drawSequence(params, &one, steps), serial)
        << SamplerChain::fromParams(params, nullptr).describe();
    EXPECT_EQ(drawSequence(params, &two, steps), serial)
        << SamplerChain::fromParams(params, nullptr).describe();
  }
}
