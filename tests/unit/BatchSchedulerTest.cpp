// The batch scheduler end to end over a fake device (SchedulerTestSupport.h):
// tokens equal to the model's whatever the batch, prefixes computed once,
// kept prefixes, admission under a small budget, n samples, beams, and a
// broken invariant ending the run with errors rather than an abort.
#include "runtime/scheduler/BatchScheduler.h"

#include "tests/unit/SchedulerTestSupport.h"

#include <gtest/gtest.h>

#include <cmath>

namespace quill {
namespace {

using test::letters;
using test::referenceGreedy;

constexpr uint64_t kBlockBytes = 2 * 4 * 8 * sizeof(float); // Sections x positions x kvDim.

/// A fake device of `rows` rows and a paged cache of `blocks` blocks (the
/// reserved one included; 0: enough for 8 sequences).
struct Harness {
  ModelConfig config = test::tinyConfig();
  Tokenizer tokenizer = test::tinyTokenizer();
  test::FakeBatchDevice device;
  std::unique_ptr<PagedKVCache> cache;

  explicit Harness(int32_t rows, int32_t blocks = 0) : device(config, rows) {
    auto made = createPagedCache(device, config, uint64_t(blocks) * kBlockBytes, 8);
    EXPECT_TRUE(made.isOk()) << made.message();
    cache = made.take();
  }
  std::vector<ErrorOr<GenerationResult>> run(const std::vector<GenerationRequest> &requests,
                                             SamplerFactory samplers, BatchOptions options = {},
                                             BatchStats *stats = nullptr) {
    BatchScheduler scheduler(device, *cache, tokenizer, config, std::move(samplers), options);
    auto results = scheduler.run(requests, stats);
    EXPECT_EQ(cache->liveSequences(), 0) << "the run left sequences behind";
    return results;
  }
};

GenerationRequest request(std::vector<int32_t> prompt, int32_t maxNewTokens,
                          bool ignoreEos = false) {
  GenerationRequest r;
  r.promptTokens = std::move(prompt);
  r.maxNewTokens = maxNewTokens;
  r.ignoreEos = ignoreEos;
  return r;
}

/// Sample s of request i draws from seed seeds[i] * 100 + s.
SamplerFactory seeded(std::vector<uint64_t> seeds) {
  return [seeds](size_t index, int32_t sample) {
    SamplingParams p;
    p.temperature = 1.0f;
    p.seed = seeds[index] * 100 + uint64_t(sample);
    return SamplerChain::fromParams(p, nullptr);
  };
}

TEST(BatchSchedulerRun, GreedyTokensAreTheModelsWhateverTheBatch) {
  // 4 rows, 3 sequences at once: prompts longer than a step are chunked,
  // prompts wait for slots, and some share prefixes (copied on write).
  Harness h(4);
  std::vector<GenerationRequest> requests = {
      request(letters("abcdefghijkl"), 10), request(letters("abcdefghxyz"), 10),
      request(letters("q"), 10), request(letters("abcdefghijklmn"), 10),
      request(letters("mnop"), 10)};
  BatchOptions options;
  options.maxSequences = 3;
  BatchStats stats;
  auto results = h.run(requests, test::greedySamplers(), options, &stats);
  int64_t generated = 0;
  for (size_t i = 0; i < requests.size(); ++i) {
    ASSERT_TRUE(results[i].isOk()) << results[i].message();
    EXPECT_EQ(results[i]->tokens, referenceGreedy(requests[i].promptTokens, 10, h.config))
        << "request " << i;
    generated += int64_t(results[i]->tokens.size());
  }
  EXPECT_EQ(stats.generatedTokens, generated);
  EXPECT_EQ(stats.promptTokens, 13 + 12 + 2 + 15 + 5);
  EXPECT_LE(stats.peakSequences, 3);
}

TEST(BatchSchedulerRun, APrefixInFlightIsComputedOnce) {
  Harness h(16);
  // 13 tokens each, BOS + "abcdefgh" (9) in common.
  std::vector<GenerationRequest> requests = {request(letters("abcdefghijkl"), 4, true),
                                             request(letters("abcdefghmnop"), 4, true)};
  BatchStats stats;
  auto results = h.run(requests, test::greedySamplers(), {}, &stats);
  for (size_t i = 0; i < 2; ++i) {
    ASSERT_TRUE(results[i].isOk()) << results[i].message();
    EXPECT_EQ(results[i]->tokens, referenceGreedy(requests[i].promptTokens, 4, h.config, true));
  }
  // The second waits while the first's prompt is in prefill (a whole block
  // more of it to come), then forks the 9 positions they share and
  // computes its other 4.
  EXPECT_EQ(stats.prefixTokensReused, 9);
  EXPECT_EQ(stats.prefilledTokens, 13 + 4);
}

TEST(BatchSchedulerRun, AFinishedPromptsWholeBlocksAreKeptForAWaitingOne) {
  std::vector<GenerationRequest> requests = {request(letters("abcdefghijkl"), 3, true),
                                             request(letters("abcdefghmnop"), 3, true)};
  BatchOptions one;
  one.maxSequences = 1; // The second waits for the first to finish.
  {
    Harness h(16);
    BatchStats stats;
    auto results = h.run(requests, test::greedySamplers(), one, &stats);
    for (size_t i = 0; i < 2; ++i) {
      ASSERT_TRUE(results[i].isOk());
      EXPECT_EQ(results[i]->tokens, referenceGreedy(requests[i].promptTokens, 3, h.config, true));
    }
    // 9 in common, kept as 2 whole blocks: 8 reused, 13 + 5 computed.
    EXPECT_EQ(stats.prefixTokensReused, 8);
    EXPECT_EQ(stats.prefilledTokens, 13 + 5);
  }
  {
    Harness h(16);
    one.sharePrefixes = false;
    BatchStats stats;
    auto results = h.run(requests, test::greedySamplers(), one, &stats);
    EXPECT_EQ(stats.prefixTokensReused, 0);
    EXPECT_EQ(stats.prefilledTokens, 26);
  }
}

TEST(BatchSchedulerRun, ARequestLargerThanTheBudgetFailsAlone) {
  Harness h(16, /*blocks=*/7); // 6 usable.
  ASSERT_EQ(h.cache->totalBlocks(), 6);
  // 13 + 19 positions: 8 blocks. 5 + 3: 2 blocks.
  std::vector<GenerationRequest> requests = {request(letters("abcdefghijkl"), 20),
                                             request(letters("abcd"), 4)};
  auto results = h.run(requests, test::greedySamplers());
  ASSERT_FALSE(results[0].isOk());
  EXPECT_NE(results[0].message().find("request 0 needs 8 KV blocks (32 positions"),
            std::string::npos)
      << results[0].message();
  EXPECT_NE(results[0].message().find("the KV budget holds 6"), std::string::npos);
  ASSERT_TRUE(results[1].isOk()) << results[1].message();
  EXPECT_EQ(results[1]->tokens, referenceGreedy(requests[1].promptTokens, 4, h.config));
}

TEST(BatchSchedulerRun, ASmallBudgetMakesRequestsWaitAndEveryOneFinishes) {
  Harness h(16, /*blocks=*/7); // 6 usable.
  // Each: 5 + 7 = 12 positions, 3 blocks: two at once.
  std::vector<GenerationRequest> requests = {request(letters("abcd"), 8, true),
                                             request(letters("efgh"), 8, true),
                                             request(letters("ijkl"), 8, true)};
  BatchStats stats;
  auto results = h.run(requests, test::greedySamplers(), {}, &stats);
  for (size_t i = 0; i < 3; ++i) {
    ASSERT_TRUE(results[i].isOk()) << results[i].message();
    EXPECT_EQ(results[i]->tokens, referenceGreedy(requests[i].promptTokens, 8, h.config, true));
  }
  // Two run 8 steps together, the third 8 more alone.
  EXPECT_EQ(stats.peakSequences, 2);
  EXPECT_EQ(stats.steps, 16);
  EXPECT_EQ(stats.generatedTokens, 24);
  EXPECT_EQ(stats.prefilledTokens, 15);
  EXPECT_EQ(stats.peakKVBytes, 6 * kBlockBytes);
}

TEST(BatchSchedulerRun, SampledTokensDoNotDependOnTheNeighbours) {
  std::vector<GenerationRequest> requests = {
      request(letters("abc"), 12), request(letters("abcdefg"), 12), request(letters("xy"), 12)};
  std::vector<uint64_t> seeds = {11, 22, 33};
  Harness together(4);
  BatchOptions options;
  tbb::task_arena arena(2);
  options.arena = &arena;
  auto batch = together.run(requests, seeded(seeds), options);
  for (size_t i = 0; i < requests.size(); ++i) {
    Harness alone(4);
    auto solo = alone.run({requests[i]}, seeded({seeds[i]}));
    ASSERT_TRUE(batch[i].isOk() && solo[0].isOk());
    EXPECT_EQ(batch[i]->tokens, solo[0]->tokens) << "request " << i;
    EXPECT_EQ(batch[i]->text, solo[0]->text);
  }
}

TEST(BatchSchedulerRun, EachOfNSamplesIsTheRunOfItsOwnStream) {
  GenerationRequest three = request(letters("abcdef"), 10);
  three.samples = 3;
  Harness h(8);
  BatchStats stats;
  auto results = h.run({three}, seeded({5}), {}, &stats);
  ASSERT_TRUE(results[0].isOk()) << results[0].message();
  ASSERT_EQ(results[0]->sequences.size(), 3u);
  EXPECT_EQ(results[0]->tokens, results[0]->sequences[0].tokens);
  // The prompt ran once for all three.
  EXPECT_EQ(stats.prefilledTokens, 7);
  for (int32_t s = 0; s < 3; ++s) {
    // Alone, sample 0 drawing from sample s's seed.
    Harness alone(8);
    SamplerFactory stream = [s](size_t, int32_t) {
      SamplingParams p;
      p.temperature = 1.0f;
      p.seed = 5 * 100 + uint64_t(s);
      return SamplerChain::fromParams(p, nullptr);
    };
    auto solo = alone.run({request(letters("abcdef"), 10)}, stream);
    ASSERT_TRUE(solo[0].isOk());
    EXPECT_EQ(results[0]->sequences[s].tokens, solo[0]->tokens) << "sample " << s;
  }
}

/// log p(token | context) under the fake model, in double.
double modelLogprob(const std::vector<int32_t> &context, int32_t token, int32_t vocab) {
  std::vector<float> logits(vocab);
  test::fakeLogits(context, vocab, logits.data());
  double max = logits[0];
  for (float l : logits)
    max = std::max(max, double(l));
  double sum = 0;
  for (float l : logits)
    sum += std::exp(double(l) - max);
  return double(logits[token]) - max - std::log(sum);
}

TEST(BatchSchedulerRun, OneBeamIsGreedyAndBeamsAreBatchInvariant) {
  GenerationRequest beam = request(letters("abcde"), 6, /*ignoreEos=*/true);
  beam.beamSearch = BeamSearchOptions{};
  beam.beamSearch->beams = 1;
  {
    Harness h(8);
    auto results = h.run({beam}, test::greedySamplers());
    ASSERT_TRUE(results[0].isOk()) << results[0].message();
    EXPECT_EQ(results[0]->tokens, referenceGreedy(beam.promptTokens, 6, h.config, true));
  }
  beam.beamSearch->beams = 3;
  beam.beamSearch->numReturn = 3;
  Harness alone(8);
  auto solo = alone.run({beam}, test::greedySamplers());
  ASSERT_TRUE(solo[0].isOk()) << solo[0].message();
  const std::vector<GenerationResult> &hypotheses = solo[0]->sequences;
  ASSERT_EQ(hypotheses.size(), 3u);
  for (size_t i = 0; i < hypotheses.size(); ++i) {
    // No end tokens: every hypothesis runs to the budget.
    EXPECT_EQ(hypotheses[i].tokens.size(), 6u);
    EXPECT_EQ(hypotheses[i].stop, StopReason::Length);
    if (i > 0) {
      EXPECT_GE(hypotheses[i - 1].score, hypotheses[i].score);
    }
    // Its log-probability is the model's, summed over its tokens.
    std::vector<int32_t> context = beam.promptTokens;
    double logprob = 0;
    for (int32_t token : hypotheses[i].tokens) {
      logprob += modelLogprob(context, token, alone.config.vocabSize);
      context.push_back(token);
    }
    EXPECT_NEAR(hypotheses[i].logprob, logprob, 1e-9);
  }
  // In a batch beside other requests (4 rows: chunked prompts, beams
  // waiting for slots) the search finds the same hypotheses.
  Harness together(4);
  std::vector<GenerationRequest> requests = {request(letters("abcdefgh"), 5), beam,
                                             request(letters("abcdx"), 7)};
  auto batch = together.run(requests, test::greedySamplers());
  ASSERT_TRUE(batch[1].isOk()) << batch[1].message();
  ASSERT_EQ(batch[1]->sequences.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(batch[1]->sequences[i].tokens, hypotheses[i].tokens);
    EXPECT_EQ(batch[1]->sequences[i].logprob, hypotheses[i].logprob);
  }
}

TEST(BatchSchedulerRun, LostBlocksEndTheRunWithErrorsNotAnAbort) {
  Harness h(8, /*blocks=*/33);
  std::vector<PagedKVCache::SequenceId> thieves;
  // After the first step something else takes every free block: the
  // blocks admission reserved are gone.
  h.device.afterStep = [&] {
    if (!thieves.empty())
      return;
    while (h.cache->freeBlocks() > 0) {
      thieves.push_back(h.cache->createSequence());
      int32_t take = std::min(h.cache->freeBlocks() * 4, h.config.seqLen);
      ASSERT_TRUE(h.cache->append(thieves.back(), take).isOk());
    }
  };
  // 3 prompt positions each: their first block fills at position 3, the
  // third step needs a new one.
  std::vector<GenerationRequest> requests = {request(letters("ab"), 20, true),
                                             request(letters("cd"), 20, true)};
  BatchScheduler scheduler(h.device, *h.cache, h.tokenizer, h.config, test::greedySamplers());
  auto results = scheduler.run(requests);
  ASSERT_EQ(results.size(), 2u);
  for (const auto &result : results) {
    ASSERT_FALSE(result.isOk());
    EXPECT_NE(result.message().find("internal error"), std::string::npos) << result.message();
    EXPECT_NE(result.message().find("ran out of the KV blocks"), std::string::npos);
  }
  EXPECT_EQ(h.device.steps.size(), 2u);
  // The run freed its own sequences; only the thieves' are left.
  EXPECT_EQ(h.cache->liveSequences(), int32_t(thieves.size()));
}

} // namespace
} // namespace quill
