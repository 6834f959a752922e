// Beam search and n samples through the batch scheduler on compiled models:
// one beam is greedy search, enough beams are exhaustive search (checked
// against the reference forward pass), beams share their KV blocks, and
// results do not depend on the thread count.
#include "ReferenceForward.h"
#include "TestSupport.h"

#include "runtime/scheduler/BatchScheduler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace quill::test {
namespace {

struct Loaded {
  LoadedArtifact artifact;
  std::optional<Tokenizer> tokenizer;
};

Loaded loadWithTokenizer(const std::string &path, int threads) {
  Loaded l;
  l.artifact = load(path, threads);
  if (!l.artifact.device)
    return l;
  const ModelConfig &config = l.artifact.artifact->config();
  auto tokenizer =
      Tokenizer::fromBytes(l.artifact.artifact->tokenizerData(),
                           l.artifact.artifact->tokenizerSize(), config.vocabSize, "t");
  EXPECT_TRUE(tokenizer.isOk()) << tokenizer.message();
  if (tokenizer)
    l.tokenizer.emplace(tokenizer.take());
  return l;
}

/// Runs one request through the scheduler with `params` for every sample.
ErrorOr<GenerationResult> runOne(Loaded &l, const GenerationRequest &request,
                                 const SamplingParams &params, BatchStats *stats = nullptr) {
  const ModelConfig &config = l.artifact.artifact->config();
  int32_t width = request.beamSearch ? request.beamSearch->beams : request.samples;
  auto cache = createPagedCache(*l.artifact.device, config, 0, std::max(width, 8));
  if (!cache)
    return cache.status();
  BatchScheduler scheduler(*l.artifact.device, **cache, *l.tokenizer, config,
                           [&](size_t, int32_t sample) {
                             SamplingParams p = params;
                             p.seed += uint64_t(sample) * 1000003;
                             return SamplerChain::fromParams(p, l.artifact.arena.get());
                           });
  auto results = scheduler.run({request}, stats);
  return std::move(results.at(0));
}

std::string storiesArtifact(const std::string &name, const std::string &flags = "") {
  std::string model = sharedModel("stories260K/stories260K.bin");
  std::string tok = sharedModel("stories260K/tok512.bin");
  if (model.empty() || tok.empty())
    return "";
  return compileArtifact(model, tok, name, flags);
}

/// Every KV-cache type: beams and samples fork and copy blocks whatever
/// the bytes of a cached row. stories260K for the float types; Q8_0 needs
/// heads of 32, so a synthetic model has them.
class BeamsOverKVTypes : public ::testing::TestWithParam<const char *> {
protected:
  std::string artifact(const char *what) const {
    std::string name = std::string(what) + "-" + GetParam();
    std::string flags = std::string("--kv-type ") + GetParam();
    return std::string(GetParam()) == "q8_0" ? wideHeadArtifact(name, flags)
                                             : storiesArtifact(name, flags);
  }
};
INSTANTIATE_TEST_SUITE_P(KVTypes, BeamsOverKVTypes, ::testing::Values("f32", "f16", "bf16", "q8_0"),
                         [](const auto &info) { return std::string(info.param); });

TEST_P(BeamsOverKVTypes, OneBeamEqualsGreedySearch) {
  std::string artifact = this->artifact("beam-greedy");
  if (artifact.empty())
    GTEST_SKIP() << "../shared/models/stories260K is absent";
  Loaded l = loadWithTokenizer(artifact, 2);
  ASSERT_TRUE(l.artifact.device && l.tokenizer);
  SamplingParams greedy;
  greedy.temperature = 0;
  for (const char *prompt : {"", "Once upon a time", "The dog", "Lily and Ben went"}) {
    GenerationRequest plain{prompt, 80, {}};
    auto expected = runOne(l, plain, greedy);
    ASSERT_TRUE(expected.isOk()) << expected.message();
    GenerationRequest beam = plain;
    beam.beamSearch = BeamSearchOptions{};
    auto found = runOne(l, beam, greedy);
    ASSERT_TRUE(found.isOk()) << found.message();
    EXPECT_EQ(found->tokens, expected->tokens) << "prompt '" << prompt << "'";
    EXPECT_EQ(found->text, expected->text);
    EXPECT_EQ(found->stop, expected->stop);
    ASSERT_EQ(found->sequences.size(), 1u);
  }
}

TEST(BeamSearchRun, BeamsNextToOtherRequestsInATightBatch) {
  // Three beams and two plain requests with room for four sequences at once:
  // the beams wait for their slots, and everyone gets its solo result. Also
  // -n 0 with beams, and a stop string cutting a beam's text.
  std::string artifact = storiesArtifact("beam-mixed");
  if (artifact.empty())
    GTEST_SKIP() << "../shared/models/stories260K is absent";
  Loaded l = loadWithTokenizer(artifact, 2);
  ASSERT_TRUE(l.artifact.device && l.tokenizer);
  const ModelConfig &config = l.artifact.artifact->config();
  SamplingParams greedy;
  greedy.temperature = 0;
  GenerationRequest beam{"Once upon a time", 30, {}};
  beam.beamSearch = BeamSearchOptions{};
  beam.beamSearch->beams = 3;
  beam.beamSearch->numReturn = 3;
  std::vector<GenerationRequest> requests = {beam, {"The dog", 30, {}}, {"Lily", 30, {}}, beam};
  requests[3].maxNewTokens = 0;
  std::vector<GenerationResult> alone;
  for (const GenerationRequest &r : requests) {
    auto result = runOne(l, r, greedy);
    ASSERT_TRUE(result.isOk()) << result.message();
    alone.push_back(*result);
  }
  EXPECT_TRUE(alone[3].tokens.empty());
  auto cache = createPagedCache(*l.artifact.device, config, 0, 4);
  ASSERT_TRUE(cache.isOk());
  BatchOptions options;
  options.maxSequences = 4;
  BatchScheduler scheduler(
      *l.artifact.device, **cache, *l.tokenizer, config,
      [&](size_t, int32_t) { return SamplerChain::fromParams(greedy, nullptr); }, options);
  BatchStats stats;
  auto results = scheduler.run(requests, &stats);
  ASSERT_EQ(results.size(), requests.size());
  EXPECT_LE(stats.peakSequences, 4);
  for (size_t i = 0; i < requests.size(); ++i) {
    ASSERT_TRUE(results[i].isOk()) << results[i].message();
    EXPECT_EQ(results[i]->tokens, alone[i].tokens) << "request " << i;
    ASSERT_EQ(results[i]->sequences.size(), alone[i].sequences.size());
    for (size_t k = 0; k < alone[i].sequences.size(); ++k)
      EXPECT_EQ(results[i]->sequences[k].tokens, alone[i].sequences[k].tokens);
  }
  // A stop string cuts the beams' text and says so.
  GenerationRequest stopped = beam;
  stopped.stopStrings = {"girl"};
  auto cut = runOne(l, stopped, greedy);
  ASSERT_TRUE(cut.isOk()) << cut.message();
  EXPECT_EQ(cut->stop, StopReason::StopString) << cut->text;
  EXPECT_EQ(cut->text.find("girl"), std::string::npos);
  EXPECT_LT(cut->tokens.size(), alone[0].tokens.size());
}

TEST(BeamSearchRun, EveryTokenBannedIsAnErrorNotAnEmptyResult) {
  std::string artifact = storiesArtifact("beam-banned");
  if (artifact.empty())
    GTEST_SKIP() << "../shared/models/stories260K is absent";
  Loaded l = loadWithTokenizer(artifact, 1);
  ASSERT_TRUE(l.artifact.device && l.tokenizer);
  SamplingParams banned;
  banned.temperature = 0;
  for (int32_t id = 0; id < l.artifact.artifact->config().vocabSize; ++id)
    banned.logitBias.push_back({id, -std::numeric_limits<float>::infinity()});
  GenerationRequest request{"Once", 10, {}};
  request.beamSearch = BeamSearchOptions{};
  request.beamSearch->beams = 3;
  auto found = runOne(l, request, banned);
  ASSERT_FALSE(found.isOk());
  EXPECT_NE(found.message().find("NaN or -inf"), std::string::npos) << found.message();
}

TEST(BeamSearchRun, EnoughBeamsEqualExhaustiveSearchOfTheReferenceModel) {
  // A small synthetic model; the logit bias leaves three tokens possible, so
  // three tokens deep there are 27 sequences and 32 beams keep them all.
  ModelConfig c;
  c.dim = 64, c.hiddenDim = 96, c.nLayers = 2, c.nHeads = 4, c.nKvHeads = 2;
  c.vocabSize = 300, c.seqLen = 32, c.sharedClassifier = false;
  std::string model = synthesizeModel(c, "exhaustive", 0, 11);
  std::string artifact = compileArtifact(model, syntheticTokenizer(300), "exhaustive");
  ASSERT_FALSE(artifact.empty());
  Loaded l = loadWithTokenizer(artifact, 2);
  ASSERT_TRUE(l.artifact.device && l.tokenizer);
  const std::vector<int32_t> allowed = {261, 262, 263};
  SamplingParams params;
  params.temperature = 0;
  for (int32_t id = 0; id < c.vocabSize; ++id)
    if (std::find(allowed.begin(), allowed.end(), id) == allowed.end())
      params.logitBias.push_back({id, -std::numeric_limits<float>::infinity()});
  const std::vector<int32_t> prompt = {1, 270, 280};

  // Exhaustive: every sequence of 3 allowed tokens, scored by the reference.
  struct Scored {
    std::vector<int32_t> tokens;
    double logprob;
  };
  std::vector<Scored> all;
  for (int32_t a : allowed)
    for (int32_t b : allowed)
      for (int32_t d : allowed) {
        auto reference = ReferenceModel::load(model);
        ASSERT_TRUE(reference.isOk());
        std::vector<float> logits;
        int pos = 0;
        for (int32_t t : prompt)
          logits = reference->forward(t, pos++);
        double logprob = 0;
        for (int32_t t : {a, b, d}) {
          double max = -1e30, sum = 0;
          for (int32_t x : allowed)
            max = std::max(max, double(logits[x]));
          for (int32_t x : allowed)
            sum += std::exp(double(logits[x]) - max);
          logprob += double(logits[t]) - max - std::log(sum);
          logits = reference->forward(t, pos++);
        }
        all.push_back({{a, b, d}, logprob});
      }
  std::stable_sort(all.begin(), all.end(),
                   [](const Scored &x, const Scored &y) { return x.logprob > y.logprob; });

  GenerationRequest request;
  request.promptTokens = prompt;
  request.maxNewTokens = 3;
  BeamSearchOptions beams;
  beams.beams = 32;
  beams.lengthPenalty = 0;
  beams.numReturn = 10;
  request.beamSearch = beams;
  auto found = runOne(l, request, params);
  ASSERT_TRUE(found.isOk()) << found.message();
  ASSERT_EQ(found->sequences.size(), 10u);
  for (size_t i = 0; i < 10; ++i) {
    EXPECT_NEAR(found->sequences[i].logprob, all[i].logprob, 1e-4) << "rank " << i;
    // Near-ties may swap places between the oracle and the compiled model.
    bool tied = (i > 0 && all[i - 1].logprob - all[i].logprob < 1e-4) ||
                all[i].logprob - all[i + 1].logprob < 1e-4;
    if (!tied) {
      EXPECT_EQ(found->sequences[i].tokens, all[i].tokens) << "rank " << i;
    }
  }
}

TEST_P(BeamsOverKVTypes, EightBeamsOver64StepsShareTheirKVBlocks) {
  std::string artifact = this->artifact("beam-kv");
  if (artifact.empty())
    GTEST_SKIP() << "../shared/models/stories260K is absent";
  Loaded l = loadWithTokenizer(artifact, 2);
  ASSERT_TRUE(l.artifact.device && l.tokenizer);
  SamplingParams greedy;
  greedy.temperature = 0;
  GenerationRequest request{"Once upon a time, there was a little girl named Lily. She loved to "
                            "play outside in the park. One day, she saw a big tree with a swing. "
                            "She wanted to play on the swing, but her mom said",
                            64,
                            {}};
  request.ignoreEos = true; // 64 steps for every beam.
  BatchStats one, eight;
  auto single = runOne(l, request, greedy, &one);
  ASSERT_TRUE(single.isOk()) << single.message();
  ASSERT_EQ(single->tokens.size(), 64u);
  BeamSearchOptions beams;
  beams.beams = 8;
  request.beamSearch = beams;
  auto searched = runOne(l, request, greedy, &eight);
  ASSERT_TRUE(searched.isOk()) << searched.message();
  ASSERT_EQ(searched->tokens.size(), 64u);
  double ratio = double(eight.peakKVBytes) / double(one.peakKVBytes);
  ::testing::Test::RecordProperty("kv_ratio_8_beams", std::to_string(ratio));
  EXPECT_LT(ratio, 4.0) << "8 beams use " << eight.peakKVBytes << " bytes, one sequence "
                        << one.peakKVBytes;
}

TEST(BeamSearchRun, ResultsDoNotDependOnTheThreadCount) {
  std::string artifact = storiesArtifact("beam-threads");
  if (artifact.empty())
    GTEST_SKIP() << "../shared/models/stories260K is absent";
  SamplingParams params;
  params.temperature = 0;
  params.repeatPenalty = 1.3f; // The processors rank beams too.
  GenerationRequest request{"The little cat", 40, {}};
  BeamSearchOptions beams;
  beams.beams = 6;
  beams.numReturn = 6;
  request.beamSearch = beams;
  std::vector<GenerationResult> byThreads;
  for (int threads : {1, 2}) {
    Loaded l = loadWithTokenizer(artifact, threads);
    ASSERT_TRUE(l.artifact.device && l.tokenizer);
    auto found = runOne(l, request, params);
    ASSERT_TRUE(found.isOk()) << found.message();
    byThreads.push_back(*found);
  }
  ASSERT_EQ(byThreads[0].sequences.size(), byThreads[1].sequences.size());
  for (size_t i = 0; i < byThreads[0].sequences.size(); ++i) {
    EXPECT_EQ(byThreads[0].sequences[i].tokens, byThreads[1].sequences[i].tokens);
    EXPECT_EQ(byThreads[0].sequences[i].logprob, byThreads[1].sequences[i].logprob);
  }
}

TEST_P(BeamsOverKVTypes, SampleZeroIsThePlainRunAndTheOthersAreTheirOwnStreams) {
  std::string artifact = this->artifact("n-samples");
  if (artifact.empty())
    GTEST_SKIP() << "../shared/models/stories260K is absent";
  SamplingParams params;
  params.temperature = 1.0f, params.topP = 0.95f, params.seed = 321;
  GenerationRequest plain{"Once upon a time", 40, {}};
  std::vector<std::vector<GenerationResult>> runs;
  for (int threads : {1, 2}) {
    Loaded l = loadWithTokenizer(artifact, threads);
    ASSERT_TRUE(l.artifact.device && l.tokenizer);
    auto alone = runOne(l, plain, params);
    ASSERT_TRUE(alone.isOk());
    GenerationRequest request = plain;
    request.samples = 4;
    BatchStats stats;
    auto sampled = runOne(l, request, params, &stats);
    ASSERT_TRUE(sampled.isOk()) << sampled.message();
    ASSERT_EQ(sampled->sequences.size(), 4u);
    EXPECT_EQ(sampled->sequences[0].tokens, alone->tokens) << "sample 0 is the plain run";
    EXPECT_EQ(sampled->tokens, alone->tokens);
    // The others: their own streams, so (with these settings) other tokens.
    for (int s = 1; s < 4; ++s)
      EXPECT_NE(sampled->sequences[s].tokens, sampled->sequences[0].tokens) << "sample " << s;
    // One prefill: the prompt's positions computed once.
    EXPECT_EQ(stats.prefilledTokens, int64_t(alone->promptTokens.size()));
    runs.push_back(sampled->sequences);
  }
  for (int s = 0; s < 4; ++s)
    EXPECT_EQ(runs[0][s].tokens, runs[1][s].tokens) << "sample " << s << " with 1 and 2 threads";
}

TEST(QuillRunBeams, JsonSequencesAndBadSettings) {
  std::string artifact = storiesArtifact("cli-beams");
  if (artifact.empty())
    GTEST_SKIP() << "../shared/models/stories260K is absent";
  std::string run0 = quote(tool("quill-run")) + " " + quote(artifact) + " -p 'Once upon a time'";
  CommandResult r = run(run0 + " -n 20 --beams 4 --num-return 3 --json");
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.out.find("\"sequences\":[{\"tokens\":"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"score\":"), std::string::npos) << r.out;
  size_t count = 0;
  for (size_t at = r.out.find("{\"tokens\":"); at != std::string::npos;
       at = r.out.find("{\"tokens\":", at + 1))
    ++count;
  EXPECT_EQ(count, 3u) << r.out;
  CommandResult samples = run(run0 + " -n 10 --n-samples 3 --seed 9 --json");
  ASSERT_EQ(samples.exitCode, 0) << samples.err;
  EXPECT_NE(samples.out.find("\"sequences\":["), std::string::npos);
  for (const char *bad : {"--beams 0", "--beams 65", "--beams 2 --num-return 3",
                          "--length-penalty 2", "--early-stopping", "--beams 2 --n-samples 2",
                          "--n-samples 0", "--beams 2 --logprobs 2 --json"}) {
    CommandResult e = run(run0 + " " + bad);
    EXPECT_NE(e.exitCode, 0) << bad;
    EXPECT_EQ(e.err.rfind("quill-run: ", 0), 0u) << bad << ": " << e.err;
    EXPECT_EQ(std::count(e.err.begin(), e.err.end(), '\n'), 1) << bad << ": " << e.err;
  }
}

} // namespace
} // namespace quill::test
