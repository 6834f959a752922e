// Beam bookkeeping: end tokens, a search's choices continuing beams in place
// or in forks, ending beams nobody continues, the finished search's result,
// and a wrong count of rows coming back as an error.
#include "runtime/scheduler/BeamGroups.h"

#include "tests/unit/SchedulerTestSupport.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace quill::scheduler {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

/// A beam search of `beams` over the tiny model, its prompt computed.
struct BeamFixture {
  ModelConfig config = test::tinyConfig();
  Tokenizer tokenizer = test::tinyTokenizer();
  SamplerFactory samplers = test::greedySamplers();
  std::deque<GenerationRequest> requests;
  std::unique_ptr<PagedKVCache> cache = test::makeTinyCache(41);
  SequenceFactory factory{tokenizer, config, samplers, requests};
  std::vector<int32_t> prompt = test::letters("ab");
  std::unique_ptr<Sequence> root;

  explicit BeamFixture(int32_t beams, int32_t maxNewTokens = 8, int32_t numReturn = 1,
                       SamplerFactory chains = test::greedySamplers())
      : samplers(std::move(chains)) {
    GenerationRequest request;
    request.maxNewTokens = maxNewTokens;
    request.beamSearch = BeamSearchOptions{};
    request.beamSearch->beams = beams;
    request.beamSearch->numReturn = numReturn;
    requests.push_back(request);
    root = SequenceFactory::candidate(0, beams, prompt, 20, cache->createSequence());
    EXPECT_TRUE(cache->append(root->kv, int32_t(prompt.size())).isOk());
    root->group->beams.emplace(*request.beamSearch, beamEndTokens(request, config));
    factory.start(*root);
  }
  Group &group() { return *root->group; }
  Status step(const std::vector<LogitRow> &rows, SequenceList &born,
              std::vector<Sequence *> &ended) {
    return stepBeams(group(), rows, requests[0], *cache, factory, born, ended);
  }
};

/// -inf everywhere but `finite` (token, logit).
std::vector<float> only(std::vector<std::pair<int32_t, float>> finite) {
  std::vector<float> logits(32, kNegInf);
  for (auto [token, logit] : finite)
    logits[token] = logit;
  return logits;
}

TEST(BeamGroups, EndTokensAreEosAndBosUnlessIgnored) {
  ModelConfig config = test::tinyConfig();
  GenerationRequest request;
  EXPECT_EQ(beamEndTokens(request, config), (std::vector<int32_t>{2, 1}));
  request.ignoreEos = true;
  EXPECT_TRUE(beamEndTokens(request, config).empty());
  request.ignoreEos = false;
  config.bosId = config.eosId;
  EXPECT_EQ(beamEndTokens(request, config), (std::vector<int32_t>{2}));
}

TEST(BeamGroups, ChoicesContinueTheirParentInPlaceThenInForks) {
  BeamFixture f(2);
  SequenceList born;
  std::vector<Sequence *> ended;
  // The prompt's row: tokens 5 and 7 are the only ones to pick.
  std::vector<float> first = only({{5, 3.0f}, {7, 2.0f}});
  ASSERT_TRUE(f.step({{f.root.get(), first.data()}}, born, ended));
  EXPECT_TRUE(f.group().forked);
  EXPECT_TRUE(ended.empty());
  // Beam 0 (token 5) continues the prompt's sequence; beam 1 (token 7) a fork.
  EXPECT_EQ(f.root->member, 0);
  EXPECT_EQ(f.root->pending, 5);
  ASSERT_EQ(born.size(), 1u);
  Sequence &fork = *born[0];
  EXPECT_EQ(fork.member, 1);
  EXPECT_EQ(fork.pending, 7);
  EXPECT_EQ(f.group().live, 2);
  EXPECT_EQ(f.cache->blockTable(fork.kv), f.cache->blockTable(f.root->kv));

  // Beam 0 (cumulative log p(5) = -0.31) now spreads over all 32 tokens
  // (-0.31 - log 32 = -3.78 each); beam 1 (log p(7) = -1.31) over 9 and 10
  // (-1.31 - log 2 = -2.01 each). Both choices extend beam 1; beam 0 ends.
  std::vector<float> spread(32, 0.0f), pair = only({{9, 0.0f}, {10, 0.0f}});
  SequenceList born2;
  // Rows in any order: by beam they are sorted.
  ASSERT_TRUE(f.step({{&fork, pair.data()}, {f.root.get(), spread.data()}}, born2, ended));
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_EQ(ended[0], f.root.get());
  EXPECT_EQ(fork.member, 0);
  EXPECT_EQ(fork.pending, 9);
  ASSERT_EQ(born2.size(), 1u);
  EXPECT_EQ(born2[0]->member, 1);
  EXPECT_EQ(born2[0]->pending, 10);
  EXPECT_EQ(f.group().beams->tokens(0), (std::vector<int32_t>{7, 9}));
  EXPECT_EQ(f.group().beams->tokens(1), (std::vector<int32_t>{7, 10}));
}

TEST(BeamGroups, AForkOfABeamHasSeenTheBeamsTokens) {
  // A presence penalty makes a chain's processing show what it has seen.
  auto penalized = [](size_t, int32_t) {
    SamplingParams p;
    p.temperature = 0;
    p.presencePenalty = 1.5f;
    return SamplerChain::fromParams(p, nullptr);
  };
  BeamFixture f(2, 8, 1, penalized);
  SequenceList born, born2;
  std::vector<Sequence *> ended;
  std::vector<float> first = only({{5, 3.0f}, {7, 2.0f}});
  ASSERT_TRUE(f.step({{f.root.get(), first.data()}}, born, ended));
  // As above: both choices of the second step extend beam 1 (token 7).
  std::vector<float> spread(32, 0.0f), pair = only({{9, 0.0f}, {10, 0.0f}});
  ASSERT_TRUE(f.step({{born[0].get(), pair.data()}, {f.root.get(), spread.data()}}, born2, ended));
  ASSERT_EQ(born2.size(), 1u);
  // The new fork's chain has seen the prompt, the beam's 7, and its 10.
  SamplerChain seen = penalized(0, 1);
  for (int32_t token : f.prompt)
    seen.accept(token);
  seen.accept(7);
  seen.accept(10);
  std::vector<float> expected(32), actual(32);
  seen.process(spread.data(), 32, expected.data());
  born2[0]->sampler->process(spread.data(), 32, actual.data());
  EXPECT_EQ(actual, expected);
  EXPECT_EQ(actual[7], -1.5f);
  EXPECT_EQ(actual[10], -1.5f);
  EXPECT_EQ(actual[9], 0.0f);
}

TEST(BeamGroups, RowsThatAreNotOnePerBeamAreAnError) {
  BeamFixture f(2);
  SequenceList born;
  std::vector<Sequence *> ended;
  std::vector<float> first = only({{5, 3.0f}, {7, 2.0f}});
  ASSERT_TRUE(f.step({{f.root.get(), first.data()}}, born, ended));
  // Two beams run, one row comes: nothing is stepped, nothing changes.
  SequenceList born2;
  Status s = f.step({{f.root.get(), first.data()}}, born2, ended);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(), "internal error: request 0 has 1 logits rows for 2 beams");
  EXPECT_TRUE(born2.empty());
  EXPECT_TRUE(ended.empty());
  EXPECT_EQ(f.group().beams->length(), 1);
  EXPECT_EQ(f.root->pending, 5);
}

TEST(BeamGroups, TheBudgetEndsTheSearchAndItsResultRanksTheHypotheses) {
  BeamFixture f(2, /*maxNewTokens=*/1, /*numReturn=*/2);
  SequenceList born;
  std::vector<Sequence *> ended;
  std::vector<float> first = only({{5, 3.0f}, {7, 2.0f}});
  f.root->firstToken = f.root->admitted + std::chrono::milliseconds(3);
  ASSERT_TRUE(f.step({{f.root.get(), first.data()}}, born, ended));
  // One token was the budget: the search is done, no fork is made.
  EXPECT_TRUE(f.group().beams->done());
  EXPECT_TRUE(born.empty());
  ASSERT_EQ(ended.size(), 1u);
  recordBeamTimes(f.group(), *f.root, f.root->firstToken + std::chrono::milliseconds(5));

  auto outcome = beamGroupResult(f.group(), f.requests[0], f.prompt, f.tokenizer, f.config);
  ASSERT_TRUE(outcome.isOk()) << outcome.message();
  const GenerationResult &best = outcome->result;
  // log p(5) = 3 - log(e^3 + e^2) = -log(1 + e^-1); log p(7) = that - 1.
  const double lp5 = -std::log1p(std::exp(-1.0));
  EXPECT_EQ(best.tokens, std::vector<int32_t>{5});
  EXPECT_EQ(best.text, "c"); // Id 5 is "c".
  EXPECT_EQ(best.stop, StopReason::Length);
  EXPECT_NEAR(best.logprob, lp5, 1e-12);
  EXPECT_NEAR(best.score, lp5, 1e-12); // Length 1: the score is the logprob.
  EXPECT_EQ(best.promptTokens, f.prompt);
  EXPECT_NEAR(best.prefillSeconds, 0.003, 1e-9);
  EXPECT_NEAR(best.decodeSeconds, 0.005, 1e-9);
  ASSERT_EQ(best.sequences.size(), 2u);
  EXPECT_EQ(best.sequences[1].tokens, std::vector<int32_t>{7});
  EXPECT_NEAR(best.sequences[1].logprob, lp5 - 1.0, 1e-12);
  EXPECT_EQ(outcome->generatedTokens, 1);
}

TEST(BeamGroups, AStopStringCutsAHypothesisWhenItIsReplayed) {
  BeamFixture f(1, /*maxNewTokens=*/1);
  f.requests[0].stopStrings = {"c"};
  SequenceList born;
  std::vector<Sequence *> ended;
  std::vector<float> first = only({{5, 3.0f}, {7, 2.0f}});
  ASSERT_TRUE(f.step({{f.root.get(), first.data()}}, born, ended));
  auto outcome = beamGroupResult(f.group(), f.requests[0], f.prompt, f.tokenizer, f.config);
  ASSERT_TRUE(outcome.isOk());
  EXPECT_EQ(outcome->result.stop, StopReason::StopString);
  EXPECT_EQ(outcome->result.text, "");
  EXPECT_EQ(outcome->result.tokens, std::vector<int32_t>{5});
}

TEST(BeamGroups, ASearchWithNothingToPickIsAnError) {
  BeamFixture f(2);
  SequenceList born;
  std::vector<Sequence *> ended;
  std::vector<float> none(32, kNegInf);
  ASSERT_TRUE(f.step({{f.root.get(), none.data()}}, born, ended));
  EXPECT_TRUE(f.group().beams->done());
  EXPECT_EQ(ended.size(), 1u);
  auto outcome = beamGroupResult(f.group(), f.requests[0], f.prompt, f.tokenizer, f.config);
  ASSERT_FALSE(outcome.isOk());
  EXPECT_EQ(outcome.message(), "request 0: beam search found no token to pick: every logit is "
                               "NaN or -inf after the logit processors");
}

} // namespace
} // namespace quill::scheduler
