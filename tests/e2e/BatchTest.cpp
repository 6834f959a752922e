// The batch step over the paged KV cache and the scheduler around it: logits
// through scattered block tables against the reference, the golden text,
// batch invariance (a sequence's tokens do not depend on its neighbours),
// KV budgets too small for all prompts at once, and prefix sharing.
#include "ReferenceForward.h"
#include "TestSupport.h"

#include "compiler/Import/SyntheticModel.h"
#include "runtime/scheduler/BatchScheduler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <vector>

namespace quill::test {
namespace {

Tokenizer tokenizerOf(const LoadedArtifact &loaded) {
  const ModelConfig &config = loaded.artifact->config();
  auto tokenizer = Tokenizer::fromBytes(loaded.artifact->tokenizerData(),
                                        loaded.artifact->tokenizerSize(), config.vocabSize, "t");
  EXPECT_TRUE(tokenizer.isOk()) << tokenizer.message();
  return tokenizer.take();
}

/// Runs `requests` through a fresh paged cache of `budgetMB` (0: default),
/// at most `maxSequences` at once, every request sampling with `params`.
std::vector<ErrorOr<GenerationResult>> runBatch(LoadedArtifact &loaded, const Tokenizer &tokenizer,
                                                const std::vector<GenerationRequest> &requests,
                                                int32_t maxSequences, const SamplingParams &params,
                                                uint64_t budgetMB = 0,
                                                BatchStats *stats = nullptr) {
  const ModelConfig &config = loaded.artifact->config();
  auto cache = createPagedCache(*loaded.device, config, budgetMB << 20, maxSequences);
  EXPECT_TRUE(cache.isOk()) << cache.message();
  if (!cache)
    return {};
  BatchOptions options;
  options.maxSequences = maxSequences;
  BatchScheduler scheduler(
      *loaded.device, **cache, tokenizer, config,
      [&](size_t, int32_t) { return SamplerChain::fromParams(params, loaded.arena.get()); },
      options);
  return scheduler.run(requests, stats);
}

std::string stories(const std::string &file) { return sharedModel("stories260K/" + file); }

/// stories260K compiled (as NAME, with `flags`) and loaded with `threads` threads.
LoadedArtifact loadStories(const std::string &name, int threads, const std::string &flags = "") {
  std::string artifact =
      compileArtifact(stories("stories260K.bin"), stories("tok512.bin"), name, flags);
  if (artifact.empty())
    return {};
  return load(artifact, threads);
}

/// 32 different prompts: story openings of varied lengths.
std::vector<std::string> storyPrompts(int count) {
  const char *starts[] = {"Once upon a time", "The little dog", "Lily and Tom",  "One day",
                          "The sun was",      "A big red ball", "Tim wanted to", "There was a cat"};
  const char *ends[] = {"", " who", " went to the park", " was happy", ", and"};
  std::vector<std::string> prompts;
  for (int i = 0; i < count; ++i)
    prompts.push_back(std::string(starts[i % 8]) + ends[(i / 8 + i) % 5]);
  return prompts;
}

std::vector<GenerationRequest> requestsFor(const std::vector<std::string> &prompts, int tokens) {
  std::vector<GenerationRequest> requests;
  for (const std::string &p : prompts)
    requests.push_back({p, tokens, {}});
  return requests;
}

/// The tokens of each request run alone, then in batches of every size
/// given: all identical.
void expectBatchInvariance(LoadedArtifact &loaded, const Tokenizer &tokenizer,
                           const std::vector<GenerationRequest> &requests,
                           const SamplingParams &params, std::vector<int32_t> batchSizes) {
  std::vector<std::vector<int32_t>> alone;
  for (const GenerationRequest &request : requests) {
    auto results = runBatch(loaded, tokenizer, {request}, 1, params);
    ASSERT_EQ(results.size(), 1u);
    ASSERT_TRUE(results[0].isOk()) << results[0].message();
    ASSERT_FALSE(results[0]->tokens.empty());
    alone.push_back(results[0]->tokens);
  }
  for (int32_t batch : batchSizes) {
    BatchStats stats;
    auto results = runBatch(loaded, tokenizer, requests, batch, params, 0, &stats);
    ASSERT_EQ(results.size(), requests.size());
    EXPECT_EQ(stats.peakSequences, std::min<int32_t>(batch, int32_t(requests.size())));
    for (size_t i = 0; i < requests.size(); ++i) {
      ASSERT_TRUE(results[i].isOk()) << results[i].message();
      EXPECT_EQ(results[i]->tokens, alone[i]) << "request " << i << " in batches of " << batch;
    }
  }
}

TEST(BatchStep, LogitsThroughScatteredBlockTablesMatchTheReference) {
  // Two sequences of a GQA shape whose widths are not multiples of the vector
  // width, interleaved in one batch (one also in prefill chunks), their
  // blocks scattered over the pool.
  ModelConfig c;
  c.dim = 96, c.hiddenDim = 200, c.nLayers = 2, c.nHeads = 6, c.nKvHeads = 2;
  c.vocabSize = 300, c.seqLen = 96, c.sharedClassifier = false;
  std::string model = synthesizeModel(c, "paged");
  std::string artifact =
      compileArtifact(model, syntheticTokenizer(300), "paged", "--batch-rows 8 --kv-block-size 4");
  ASSERT_FALSE(artifact.empty());
  LoadedArtifact loaded = load(artifact, 2);
  ASSERT_TRUE(loaded.device);
  const BatchLayout *layout = loaded.device->batchLayout();
  ASSERT_NE(layout, nullptr);
  EXPECT_EQ(layout->rows, 8);
  EXPECT_EQ(layout->blockSize, 4);
  auto cache = createPagedCache(*loaded.device, c, /*budgetBytes=*/8 << 20, 2);
  ASSERT_TRUE(cache.isOk()) << cache.message();
  PagedKVCache &kv = **cache;
  auto refA = ReferenceModel::load(model), refB = ReferenceModel::load(model);
  ASSERT_TRUE(refA.isOk() && refB.isOk()) << refA.message();
  // A filler sequence takes every other block, so A's and B's are scattered.
  PagedKVCache::SequenceId a = kv.createSequence(), b = kv.createSequence();
  PagedKVCache::SequenceId filler = kv.createSequence();
  auto tokenAt = [&](int seq, int pos) { return pos == 0 ? 1 : (pos * 37 + seq * 101) % 300; };
  int32_t *tokens = loaded.device->batchTokens(), *positions = loaded.device->batchPositions();
  int32_t *tables = loaded.device->batchTables();
  auto writeTable = [&](int row, PagedKVCache::SequenceId s) {
    const std::vector<int32_t> &t = kv.blockTable(s);
    std::fill_n(tables + row * layout->tableWidth, layout->tableWidth, 0);
    std::copy(t.begin(), t.end(), tables + row * layout->tableWidth);
  };
  double worst = 0;
  int posA = 0, posB = 0;
  while (posA < 40 && posB + 1 + posA % 5 <= c.seqLen) {
    if (kv.length(filler) + 4 > c.seqLen)
      filler = kv.createSequence();
    ASSERT_TRUE(kv.append(filler, 4).isOk());
    // Row 0: A's next token (logits). Rows 1..k: a chunk of B's tokens, the
    // last of which (row 1) gets logits.
    int chunk = 1 + posA % 5;
    ASSERT_TRUE(kv.append(a, 1).isOk());
    ASSERT_TRUE(kv.append(b, chunk).isOk());
    tokens[0] = tokenAt(0, posA), positions[0] = posA, writeTable(0, a);
    tokens[1] = tokenAt(1, posB + chunk - 1), positions[1] = posB + chunk - 1, writeTable(1, b);
    for (int i = 0; i < chunk - 1; ++i) {
      tokens[2 + i] = tokenAt(1, posB + i), positions[2 + i] = posB + i;
      writeTable(2 + i, b);
    }
    loaded.device->batchStep(1 + chunk, 2);
    std::vector<float> expectA = refA->forward(tokenAt(0, posA), posA);
    std::vector<float> expectB;
    for (int i = 0; i < chunk; ++i)
      expectB = refB->forward(tokenAt(1, posB + i), posB + i);
    for (auto [row, expect] : {std::pair{0, &expectA}, std::pair{1, &expectB}}) {
      const float *got = loaded.device->batchLogits() + row * c.vocabSize;
      double maxDiff = 0, maxRef = 0;
      for (int v = 0; v < c.vocabSize; ++v) {
        maxDiff = std::max(maxDiff, std::fabs(double(got[v]) - (*expect)[v]));
        maxRef = std::max(maxRef, std::fabs(double((*expect)[v])));
      }
      worst = std::max(worst, maxDiff / maxRef);
      ASSERT_LE(maxDiff / maxRef, 1e-4) << "row " << row << " at A position " << posA;
    }
    ++posA;
    posB += chunk;
  }
  ::testing::Test::RecordProperty("worst_relative_difference", std::to_string(worst));
}

TEST(BatchStep, APromptsLogitsDoNotDependOnTheRowsBesideIt) {
  // A prompt's rows (its last first, as the scheduler writes them) alone,
  // then with 1 to 20 rows of other sequences after them or before them:
  // the prompt's logits must not change by a bit. stories260K's heads have
  // 4 rotary pairs, a loop LLVM unrolls and then vectorizes across rows (8
  // at a time): with libm's cosf for some rows and libmvec's for others,
  // its logits changed from 8 rows on.
  if (stories("stories260K.bin").empty())
    GTEST_SKIP() << "../shared/models/stories260K is absent";
  LoadedArtifact loaded = loadStories("rows-beside", 2);
  ASSERT_TRUE(loaded.device);
  const ModelConfig &c = loaded.artifact->config();
  const BatchLayout &layout = *loaded.device->batchLayout();
  const int32_t prompt[] = {1, 403, 261, 419, 88};
  std::vector<float> alone;
  for (int others : {0, 1, 2, 3, 6, 7, 8, 9, 15, 20}) {
    for (bool before : {false, true}) {
      auto cache = createPagedCache(*loaded.device, c, /*budgetBytes=*/8 << 20, 21);
      ASSERT_TRUE(cache.isOk()) << cache.message();
      PagedKVCache &kv = **cache;
      PagedKVCache::SequenceId mine = kv.createSequence();
      ASSERT_TRUE(kv.append(mine, 5).isOk());
      std::vector<PagedKVCache::SequenceId> rest;
      for (int i = 0; i < others; ++i) {
        rest.push_back(kv.createSequence());
        ASSERT_TRUE(kv.append(rest.back(), 1 + i % 3).isOk());
      }
      int rows = 0;
      auto put = [&](PagedKVCache::SequenceId s, int pos, int token) {
        int32_t *table = loaded.device->batchTables() + int64_t(rows) * layout.tableWidth;
        std::fill_n(table, layout.tableWidth, 0);
        std::copy(kv.blockTable(s).begin(), kv.blockTable(s).end(), table);
        loaded.device->batchTokens()[rows] = token;
        loaded.device->batchPositions()[rows] = pos;
        ++rows;
      };
      auto putOthers = [&] {
        for (int i = 0; i < others; ++i)
          put(rest[i], i % 3, 7 + i);
      };
      // Logits for the first row only: the prompt's last, or (others
      // before) every other sequence's row gets logits too.
      if (before)
        putOthers();
      const int mineAt = rows;
      put(mine, 4, prompt[4]);
      for (int pos = 0; pos < 4; ++pos)
        put(mine, pos, prompt[pos]);
      if (!before)
        putOthers();
      loaded.device->batchStep(rows, mineAt + 1);
      const float *got = loaded.device->batchLogits() + int64_t(mineAt) * c.vocabSize;
      if (alone.empty()) {
        alone.assign(got, got + c.vocabSize);
        continue;
      }
      ASSERT_EQ(std::memcmp(alone.data(), got, c.vocabSize * 4), 0)
          << "the prompt's logits changed with " << others << " other rows "
          << (before ? "before" : "after") << " it";
    }
  }
}

TEST(BatchScheduler, GreedyTextFromBosMatchesLlama2c) {
  std::string model = stories("stories260K.bin"), tok = stories("tok512.bin");
  std::string expected = stories("expected-greedy-200.txt");
  if (model.empty() || tok.empty() || expected.empty())
    GTEST_SKIP() << "../shared/models/stories260K is absent";
  std::string artifact = compileArtifact(model, tok, "golden-batch");
  ASSERT_FALSE(artifact.empty());
  LoadedArtifact loaded = load(artifact, 2);
  ASSERT_TRUE(loaded.device);
  Tokenizer tokenizer = tokenizerOf(loaded);
  SamplingParams greedy;
  greedy.temperature = 0;
  // The golden sequence next to 7 others, 3 of them with the same (empty)
  // prompt: it must come out the same.
  std::vector<GenerationRequest> requests = requestsFor(storyPrompts(8), 200);
  requests[0].prompt = requests[3].prompt = requests[5].prompt = "";
  auto results = runBatch(loaded, tokenizer, requests, 8, greedy);
  ASSERT_EQ(results.size(), 8u);
  for (int i : {0, 3, 5}) {
    ASSERT_TRUE(results[i].isOk()) << results[i].message();
    EXPECT_EQ(results[i]->promptTokens, std::vector<int32_t>{1});
    EXPECT_EQ(results[i]->stop, StopReason::Length);
    EXPECT_EQ(results[i]->text, readFile(expected)) << "request " << i;
  }
}

/// Every KV-cache type: the batch step's blocks, shared prefixes, copies
/// and forks work whatever the bytes of a cached row. stories260K for the
/// float types; Q8_0 needs heads of 32, so a synthetic model has them.
class BatchOverKVTypes : public ::testing::TestWithParam<const char *> {
protected:
  bool quantized() const { return std::string(GetParam()) == "q8_0"; }
  bool modelAbsent() const { return !quantized() && stories("stories260K.bin").empty(); }
  LoadedArtifact loadModel(const char *what, int threads) const {
    std::string name = std::string(what) + "-" + GetParam();
    std::string flags = std::string("--kv-type ") + GetParam();
    if (!quantized())
      return loadStories(name, threads, flags);
    std::string artifact = wideHeadArtifact(name, flags);
    return artifact.empty() ? LoadedArtifact{} : load(artifact, threads);
  }
};
INSTANTIATE_TEST_SUITE_P(KVTypes, BatchOverKVTypes, ::testing::Values("f32", "f16", "bf16", "q8_0"),
                         [](const auto &info) { return std::string(info.param); });

TEST_P(BatchOverKVTypes, GreedyAndSeededSamplingAloneAndInBatchesOf4And32) {
  if (modelAbsent())
    GTEST_SKIP() << "../shared/models/stories260K is absent";
  LoadedArtifact loaded = loadModel("invariance", 2);
  ASSERT_TRUE(loaded.device);
  Tokenizer tokenizer = tokenizerOf(loaded);
  auto requests = requestsFor(storyPrompts(32), 40);
  // The synthetic model's greedy text may end at once: 40 tokens each.
  for (GenerationRequest &request : requests)
    request.ignoreEos = quantized();
  SamplingParams greedy;
  greedy.temperature = 0;
  expectBatchInvariance(loaded, tokenizer, requests, greedy, {4, 32});
  SamplingParams seeded;
  seeded.temperature = 0.9f, seeded.topP = 0.9f, seeded.seed = 1234;
  expectBatchInvariance(loaded, tokenizer, requests, seeded, {4, 32});
}

TEST(BatchInvariance, Synthetic15mShapeAloneAndInBatchesOf4And32) {
  auto shape = syntheticShape("15m");
  ASSERT_TRUE(shape.isOk());
  std::string artifact =
      compileArtifact(synthesizeModel(*shape, "15m"), syntheticTokenizer(shape->vocabSize), "15m");
  ASSERT_FALSE(artifact.empty());
  LoadedArtifact loaded = load(artifact, 2);
  ASSERT_TRUE(loaded.device);
  Tokenizer tokenizer = tokenizerOf(loaded);
  // Prompts of 1 to 40 random tokens; random weights make every token
  // distinct, so the end token would be rare anyway: ignore it.
  std::vector<GenerationRequest> requests(32);
  uint64_t state = 99;
  for (int i = 0; i < 32; ++i) {
    requests[i].maxNewTokens = 12;
    requests[i].ignoreEos = true;
    requests[i].promptTokens.push_back(1);
    for (int t = 0; t < (i * 7) % 40; ++t) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      requests[i].promptTokens.push_back(3 + int32_t((state >> 33) % (shape->vocabSize - 3)));
    }
  }
  SamplingParams seeded;
  seeded.temperature = 1.0f, seeded.topK = 40, seeded.seed = 5;
  expectBatchInvariance(loaded, tokenizer, requests, seeded, {4, 32});
}

TEST(BatchScheduler, SmallKVBudgetRunsEveryPromptAndMatchesSoloRuns) {
  if (stories("stories260K.bin").empty())
    GTEST_SKIP() << "../shared/models/stories260K is absent";
  LoadedArtifact loaded = loadStories("stress", 2);
  ASSERT_TRUE(loaded.device);
  Tokenizer tokenizer = tokenizerOf(loaded);
  auto requests = requestsFor(storyPrompts(64), 60);
  SamplingParams seeded;
  seeded.temperature = 1.0f, seeded.seed = 77;
  std::vector<std::vector<int32_t>> alone;
  for (const GenerationRequest &request : requests) {
    auto results = runBatch(loaded, tokenizer, {request}, 1, seeded);
    ASSERT_TRUE(results.at(0).isOk()) << results[0].message();
    alone.push_back(results[0]->tokens);
  }
  // A block of stories260K holds 16 positions of 5 layers' keys and values
  // (20 KiB): 1 MiB is 50 blocks, room for about 8 of the 64 sequences.
  BatchStats stats;
  auto results = runBatch(loaded, tokenizer, requests, 64, seeded, /*budgetMB=*/1, &stats);
  ASSERT_EQ(results.size(), requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    ASSERT_TRUE(results[i].isOk()) << results[i].message();
    EXPECT_EQ(results[i]->tokens, alone[i]) << "request " << i;
  }
  EXPECT_LE(stats.peakKVBytes, uint64_t(1) << 20);
  EXPECT_GE(stats.peakSequences, 2);
  EXPECT_LT(stats.peakSequences, 16) << "the budget should have held sequences back";
}

TEST_P(BatchOverKVTypes, PromptsWithACommonPrefixShareItsBlocks) {
  if (modelAbsent())
    GTEST_SKIP() << "../shared/models/stories260K is absent";
  LoadedArtifact loaded = loadModel("prefix", 2);
  ASSERT_TRUE(loaded.device);
  Tokenizer tokenizer = tokenizerOf(loaded);
  const std::string system =
      "Once upon a time, there was a little girl named Lily. She loved to play outside in the "
      "park. One day, she saw a big tree with";
  std::vector<std::string> prompts;
  for (const char *end : {" a cat", " a bird on it", " red apples", "", " a dog. The dog"})
    prompts.push_back(system + end);
  auto requests = requestsFor(prompts, 30);
  SamplingParams greedy;
  greedy.temperature = 0;
  BatchStats stats;
  auto shared = runBatch(loaded, tokenizer, requests, 8, greedy, 0, &stats);
  int32_t prefix = static_cast<int32_t>(tokenizer.encode(system, true, false).size());
  // Every prompt after the first reuses at least the whole blocks of the
  // common prefix.
  EXPECT_GE(stats.prefixTokensReused, int64_t(prompts.size() - 1) * (prefix / 16 * 16));
  EXPECT_EQ(stats.prefilledTokens + stats.prefixTokensReused, stats.promptTokens);
  for (size_t i = 0; i < requests.size(); ++i) {
    auto alone = runBatch(loaded, tokenizer, {requests[i]}, 1, greedy);
    ASSERT_TRUE(shared[i].isOk() && alone.at(0).isOk());
    EXPECT_EQ(shared[i]->tokens, alone[0]->tokens) << "prompt " << i;
  }
}

TEST(BatchScheduler, ARequestThatCanNeverFitFailsAloneNamingTheBudget) {
  if (stories("stories260K.bin").empty())
    GTEST_SKIP() << "../shared/models/stories260K is absent";
  LoadedArtifact loaded = loadStories("never-fits", 1);
  ASSERT_TRUE(loaded.device);
  Tokenizer tokenizer = tokenizerOf(loaded);
  // 1 MiB holds 50 blocks = 800 positions > the 512-position context: shrink
  // the budget through a cache of 8 blocks instead.
  const ModelConfig &config = loaded.artifact->config();
  PagedKVLayout layout = pagedLayoutFor(*loaded.device->batchLayout(), config);
  auto cache = PagedKVCache::create(layout, 9);
  ASSERT_TRUE(cache.isOk());
  ASSERT_TRUE(loaded.device->attachPagedCache(**cache).isOk());
  SamplingParams greedy;
  greedy.temperature = 0;
  BatchScheduler scheduler(*loaded.device, **cache, tokenizer, config, [&](size_t, int32_t) {
    return SamplerChain::fromParams(greedy, nullptr);
  });
  std::vector<GenerationRequest> requests = {{"Once", 20, {}}, {"Once", 400, {}}, {"The", 20, {}}};
  auto results = scheduler.run(requests);
  ASSERT_EQ(results.size(), 3u);
  EXPECT_TRUE(results[0].isOk()) << results[0].message();
  EXPECT_TRUE(results[2].isOk()) << results[2].message();
  ASSERT_FALSE(results[1].isOk());
  EXPECT_NE(results[1].message().find("KV blocks"), std::string::npos) << results[1].message();
  EXPECT_NE(results[1].message().find("holds 8"), std::string::npos) << results[1].message();
  EXPECT_EQ((*cache)->usedBlocks(), 0) << "every block returns to the pool";
}

TEST(QuillRunBatch, JsonLinesInInputOrderThenTheAggregate) {
  std::string model = stories("stories260K.bin"), tok = stories("tok512.bin");
  if (model.empty() || tok.empty())
    GTEST_SKIP() << "../shared/models/stories260K is absent";
  std::string artifact = compileArtifact(model, tok, "cli-batch");
  ASSERT_FALSE(artifact.empty());
  std::string file = tempDir() + "/prompts.txt";
  {
    std::ofstream out(file);
    out << "Once upon a time\nThe cat\n\nLily went\n";
  }
  CommandResult r = run(quote(tool("quill-run")) + " " + quote(artifact) + " --batch-file " +
                        quote(file) + " -n 12 --temp 0 --json --batch 2 --verbose");
  ASSERT_EQ(r.exitCode, 0) << r.err;
  std::vector<std::string> lines;
  for (size_t at = 0; at < r.out.size();) {
    size_t end = r.out.find('\n', at);
    lines.push_back(r.out.substr(at, end - at));
    at = end + 1;
  }
  ASSERT_EQ(lines.size(), 5u) << r.out;
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(lines[i].rfind("{\"prompt_index\":" + std::to_string(i) + ",", 0), 0u) << lines[i];
  EXPECT_NE(lines[4].find("\"decode_tokens_per_s\":"), std::string::npos) << lines[4];
  EXPECT_NE(lines[4].find("\"peak_kv_bytes\":"), std::string::npos) << lines[4];
  EXPECT_NE(r.err.find("prompt tokens reused"), std::string::npos) << r.err;

  // The same prompt alone through the single-sequence path: same text.
  CommandResult solo = run(quote(tool("quill-run")) + " " + quote(artifact) +
                           " -p 'Once upon a time' -n 12 --temp 0 --json");
  ASSERT_EQ(solo.exitCode, 0) << solo.err;
  size_t at = solo.out.find("\"text\":");
  size_t end = solo.out.find(",\"stop_reason\"");
  EXPECT_NE(lines[0].find(solo.out.substr(at, end - at)), std::string::npos);

  for (const char *bad : {"--kv-budget 0", "--batch 0", "--batch 2,3", "-p hi"}) {
    CommandResult e = run(quote(tool("quill-run")) + " " + quote(artifact) + " --batch-file " +
                          quote(file) + " " + bad);
    EXPECT_NE(e.exitCode, 0) << bad;
    EXPECT_NE(e.err.find("quill-run: "), std::string::npos) << bad << ": " << e.err;
  }
  CommandResult missing = run(quote(tool("quill-run")) + " " + quote(artifact) +
                              " --batch-file /nonexistent/prompts.txt");
  EXPECT_NE(missing.exitCode, 0);
  EXPECT_NE(missing.err.find("cannot open batch file"), std::string::npos) << missing.err;
}

} // namespace
} // namespace quill::test
