// Sampling fan-out: a group's prompt forked into its samples at its first
// logits, one sample step and each way it ends, parallel sampling matching
// serial, and finished samples gathered into the request's result.
#include "runtime/scheduler/SampleFanOut.h"

#include "tests/unit/SchedulerTestSupport.h"

#include <gtest/gtest.h>

#include <limits>

namespace quill::scheduler {
namespace {

/// Requests over the tiny model; sequences start with their prompt
/// computed.
struct SampleFixture {
  ModelConfig config = test::tinyConfig();
  Tokenizer tokenizer = test::tinyTokenizer();
  SamplerFactory samplers;
  std::deque<GenerationRequest> requests;
  std::unique_ptr<PagedKVCache> cache = test::makeTinyCache(41);
  SequenceFactory factory{tokenizer, config, samplers, requests};

  explicit SampleFixture(SamplerFactory s = test::greedySamplers()) : samplers(std::move(s)) {}

  /// The started first sequence of a new request of `samples`.
  std::unique_ptr<Sequence> start(const std::vector<int32_t> &prompt, int32_t samples = 1,
                                  int32_t maxNewTokens = 8) {
    GenerationRequest request;
    request.samples = samples;
    request.maxNewTokens = maxNewTokens;
    requests.push_back(request);
    auto q = SequenceFactory::candidate(requests.size() - 1, samples, prompt, 20,
                                        cache->createSequence());
    EXPECT_TRUE(cache->append(q->kv, int32_t(prompt.size())).isOk());
    q->group->results.resize(samples);
    factory.start(*q);
    return q;
  }
};

/// Logits whose argmax is `best`.
std::vector<float> peakAt(int32_t best) {
  std::vector<float> logits(32, 0.0f);
  logits[best] = 5.0f;
  return logits;
}

TEST(SampleFanOut, APromptForksIntoItsSamplesSharingItsBlocks) {
  SampleFixture f;
  auto root = f.start(test::letters("abcdef"), /*samples=*/3);
  SequenceList born;
  forkSamples(*root, *f.cache, f.factory, born);
  EXPECT_TRUE(root->group->forked);
  EXPECT_EQ(root->group->live, 3);
  ASSERT_EQ(born.size(), 2u);
  for (int32_t s = 0; s < 2; ++s) {
    EXPECT_EQ(born[s]->member, s + 1);
    EXPECT_EQ(born[s]->group, root->group);
    EXPECT_EQ(f.cache->blockTable(born[s]->kv), f.cache->blockTable(root->kv));
  }
  // 7 positions: 2 blocks, each now named by 3 tables; nothing was copied.
  EXPECT_EQ(f.cache->usedBlocks(), 2);
  EXPECT_EQ(f.cache->refCount(f.cache->blockTable(root->kv)[0]), 3);
}

TEST(SampleFanOut, EverySampleOfAFirstRowSamplesFromIt) {
  SampleFixture f;
  auto root = f.start(test::letters("ab"), 3);
  std::vector<float> row = peakAt(9);
  SequenceList born;
  std::vector<LogitRow> toSample;
  fanOut(*root, row.data(), *f.cache, f.factory, born, toSample);
  ASSERT_EQ(toSample.size(), 3u);
  EXPECT_EQ(toSample[0].first, root.get());
  EXPECT_EQ(toSample[1].first, born[0].get());
  EXPECT_EQ(toSample[2].first, born[1].get());
  for (const LogitRow &r : toSample)
    EXPECT_EQ(r.second, row.data());
  // Forked already: later rows are the sequence's own.
  toSample.clear();
  fanOut(*born[0], row.data(), *f.cache, f.factory, born, toSample);
  EXPECT_EQ(toSample.size(), 1u);
  EXPECT_EQ(born.size(), 2u);
}

TEST(SampleFanOut, ASampleStepFeedsTheTokenBack) {
  SampleFixture f;
  auto q = f.start(test::letters("ab"));
  std::vector<float> row = peakAt(9);
  EXPECT_TRUE(sampleNext(*q, row.data(), *f.cache, 32, 48));
  EXPECT_EQ(q->pending, 9);
  EXPECT_EQ(q->result.tokens, std::vector<int32_t>{9});
  EXPECT_EQ(q->result.decodeSteps, 1);
  EXPECT_TRUE(q->failure.empty());
}

TEST(SampleFanOut, ASampleEndsAtTheEndTokenTheBudgetOrTheContext) {
  SampleFixture f;
  std::vector<float> eos = peakAt(2), nine = peakAt(9);
  auto ended = f.start(test::letters("ab"));
  EXPECT_FALSE(sampleNext(*ended, eos.data(), *f.cache, 32, 48));
  EXPECT_EQ(ended->result.stop, StopReason::Eos);
  EXPECT_TRUE(ended->result.tokens.empty());
  EXPECT_EQ(ended->pending, -1);

  auto one = f.start(test::letters("ab"), 1, /*maxNewTokens=*/1);
  EXPECT_FALSE(sampleNext(*one, nine.data(), *f.cache, 32, 48));
  EXPECT_EQ(one->result.stop, StopReason::Length);
  EXPECT_EQ(one->result.tokens, std::vector<int32_t>{9});
  // No budget left at all: nothing is sampled.
  EXPECT_FALSE(sampleNext(*one, nine.data(), *f.cache, 32, 48));
  EXPECT_EQ(one->result.tokens.size(), 1u);

  // 3 positions in a context of 3: the token is kept, nothing is fed back.
  auto full = f.start(test::letters("ab"));
  EXPECT_FALSE(sampleNext(*full, nine.data(), *f.cache, 32, /*seqLen=*/3));
  EXPECT_EQ(full->result.stop, StopReason::Context);
  EXPECT_EQ(full->result.tokens, std::vector<int32_t>{9});
  EXPECT_EQ(full->pending, -1);
}

TEST(SampleFanOut, NothingToPickIsLeftAsTheSequencesFailure) {
  SampleFixture f;
  auto q = f.start(test::letters("ab"));
  std::vector<float> none(32, -std::numeric_limits<float>::infinity());
  EXPECT_FALSE(sampleNext(*q, none.data(), *f.cache, 32, 48));
  EXPECT_EQ(q->failure, "request 0: the sampler found no token to pick after 0 tokens: every "
                        "logit is NaN or -inf after the logit processors");
}

TEST(SampleFanOut, SamplingInParallelDrawsWhatSerialSamplingDraws) {
  // Seeded draws at temperature 1: each sequence has its own stream.
  auto draw = [](tbb::task_arena *arena) {
    SampleFixture f(test::seededSamplers());
    std::vector<std::unique_ptr<Sequence>> qs;
    for (int i = 0; i < 6; ++i)
      qs.push_back(f.start(test::letters(std::string(1, char('a' + i))), 1, 20));
    std::vector<float> row(32);
    test::fakeLogits({1, 5}, 32, row.data());
    std::vector<std::vector<int32_t>> tokens;
    std::vector<Sequence *> going;
    for (auto &q : qs)
      going.push_back(q.get());
    for (int step = 0; step < 10 && !going.empty(); ++step) {
      std::vector<LogitRow> toSample;
      for (Sequence *q : going)
        toSample.push_back({q, row.data()});
      std::vector<char> goesOn = sampleAll(toSample, *f.cache, f.config, arena);
      EXPECT_EQ(goesOn.size(), going.size());
      std::vector<Sequence *> next;
      for (size_t i = 0; i < going.size(); ++i)
        if (goesOn[i])
          next.push_back(going[i]);
      going = next;
    }
    for (auto &q : qs)
      tokens.push_back(q->result.tokens);
    return tokens;
  };
  tbb::task_arena arena(4);
  std::vector<std::vector<int32_t>> serial = draw(nullptr), parallel = draw(&arena);
  EXPECT_EQ(serial, parallel);
  // Streams of draws over 32 tokens, each from its own seed, differ.
  EXPECT_NE(serial[0], serial[1]);
}

TEST(SampleFanOut, FinishedSamplesBecomeTheResultInOrder) {
  SampleFixture f;
  auto root = f.start(test::letters("ab"), 2);
  SequenceList born;
  forkSamples(*root, *f.cache, f.factory, born);
  std::vector<float> seven = peakAt(7), nine = peakAt(9);
  ASSERT_TRUE(sampleNext(*root, seven.data(), *f.cache, 32, 48));
  ASSERT_TRUE(sampleNext(*born[0], nine.data(), *f.cache, 32, 48));
  auto now = Clock::now();
  // The second retires first; each lands in its own slot.
  EXPECT_EQ(recordSample(*born[0], now), 1);
  EXPECT_EQ(recordSample(*root, now), 1);
  GenerationResult result = samplesResult(*root->group);
  EXPECT_EQ(result.tokens, std::vector<int32_t>{7});
  EXPECT_EQ(result.text, "e"); // Id 7 is "e".
  ASSERT_EQ(result.sequences.size(), 2u);
  EXPECT_EQ(result.sequences[1].tokens, std::vector<int32_t>{9});
  EXPECT_EQ(result.sequences[1].text, "g");

  // One sample: no list of sequences.
  auto single = f.start(test::letters("ab"));
  EXPECT_EQ(recordSample(*single, now), 0);
  EXPECT_TRUE(samplesResult(*single->group).sequences.empty());
}

} // namespace
} // namespace quill::scheduler
