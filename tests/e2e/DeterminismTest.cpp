// Results must not depend on the thread count: the same logits bit for bit,
// and the same sampled tokens for one seed.
#include "TestSupport.h"

#include "runtime/decode/Generator.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace quill::test {
namespace {

/// Two layers of grouped-query attention, wide enough that the matvecs
/// are split across threads.
ModelConfig twoLayerShape(int32_t seqLen) {
  ModelConfig c;
  c.dim = 512, c.hiddenDim = 1376, c.nLayers = 2, c.nHeads = 8, c.nKvHeads = 4;
  c.vocabSize = 4096, c.seqLen = seqLen, c.sharedClassifier = false;
  return c;
}

TEST(Determinism, LogitsAreBitwiseEqualForOneAndTwoThreads) {
  ModelConfig c = twoLayerShape(32);
  std::string artifact =
      compileArtifact(synthesizeModel(c, "det"), syntheticTokenizer(4096), "det");
  ASSERT_FALSE(artifact.empty());
  LoadedArtifact one = load(artifact, 1), two = load(artifact, 2);
  ASSERT_TRUE(one.device && two.device);
  for (int pos = 0; pos < 16; ++pos) {
    int token = (pos * 977 + 1) % c.vocabSize;
    one.device->step(token, pos);
    two.device->step(token, pos);
    ASSERT_EQ(std::memcmp(one.device->logits(), two.device->logits(), sizeof(float) * c.vocabSize),
              0)
        << "position " << pos;
  }
}

TEST(Determinism, FlashDecodingMergesInAFixedOrder) {
  // A 1024-position cache split into chunks, 2 kv heads: the chunk units are
  // spread over the threads, the merge order must not depend on that.
  ModelConfig c;
  c.dim = 128, c.hiddenDim = 256, c.nLayers = 1, c.nHeads = 8, c.nKvHeads = 2;
  c.vocabSize = 512, c.seqLen = 1024, c.sharedClassifier = true;
  std::string artifact =
      compileArtifact(synthesizeModel(c, "det-flash"), syntheticTokenizer(512), "det-flash");
  ASSERT_FALSE(artifact.empty());
  LoadedArtifact one = load(artifact, 1), two = load(artifact, 2);
  ASSERT_TRUE(one.device && two.device);
  for (int pos = 0; pos < 300; ++pos) {
    int token = (pos * 37 + 1) % c.vocabSize;
    one.device->step(token, pos);
    two.device->step(token, pos);
    ASSERT_EQ(std::memcmp(one.device->logits(), two.device->logits(), sizeof(float) * c.vocabSize),
              0)
        << "position " << pos;
  }
}

TEST(Determinism, PrefillLogitsAreBitwiseEqualForOneAndTwoThreads) {
  ModelConfig c = twoLayerShape(64);
  std::string artifact =
      compileArtifact(synthesizeModel(c, "det-prefill"), syntheticTokenizer(4096), "det-prefill");
  ASSERT_FALSE(artifact.empty());
  LoadedArtifact one = load(artifact, 1), two = load(artifact, 2);
  ASSERT_TRUE(one.device && two.device);
  int32_t chunk = one.device->prefillChunk();
  ASSERT_GT(chunk, 0);
  std::vector<int32_t> tokens;
  for (int i = 0; i < chunk; ++i)
    tokens.push_back((i * 131 + 1) % c.vocabSize);
  one.device->prefill(tokens.data(), *one.device->kvCache().append(chunk));
  two.device->prefill(tokens.data(), *two.device->kvCache().append(chunk));
  EXPECT_EQ(std::memcmp(one.device->logits(), two.device->logits(), sizeof(float) * c.vocabSize),
            0);
}

TEST(Determinism, StepTeamGivesTheLogitsOfKernelsSplitOneByOne) {
  // The step team (pieces claimed from a shared counter) and
  // the per-kernel split cut the kernels at different rows, and 3 threads
  // cut them unevenly: every way gives the same bits, decode and prefill.
  ModelConfig c = twoLayerShape(96);
  std::string artifact =
      compileArtifact(synthesizeModel(c, "det-team"), syntheticTokenizer(4096), "det-team");
  ASSERT_FALSE(artifact.empty());
  LoadedArtifact team = load(artifact, 3), split = load(artifact, 2);
  ASSERT_TRUE(team.device && split.device);
  split.device->setStepTeam(false);
  int32_t chunk = team.device->prefillChunk();
  ASSERT_GT(chunk, 0);
  std::vector<int32_t> tokens;
  for (int i = 0; i < chunk; ++i)
    tokens.push_back((i * 131 + 7) % c.vocabSize);
  team.device->prefill(tokens.data(), *team.device->kvCache().append(chunk));
  split.device->prefill(tokens.data(), *split.device->kvCache().append(chunk));
  ASSERT_EQ(std::memcmp(team.device->logits(), split.device->logits(), sizeof(float) * c.vocabSize),
            0);
  for (int pos = chunk; pos < chunk + 12; ++pos) {
    int token = (pos * 977 + 1) % c.vocabSize;
    team.device->step(token, pos);
    split.device->step(token, pos);
    ASSERT_EQ(
        std::memcmp(team.device->logits(), split.device->logits(), sizeof(float) * c.vocabSize), 0)
        << "position " << pos;
  }
}

TEST(Determinism, SeededSamplingGivesTheSameTokensForAnyThreadCount) {
  std::string model = sharedModel("stories260K/stories260K.bin");
  if (model.empty())
    GTEST_SKIP() << "../shared/models/stories260K is absent";
  std::string artifact = compileArtifact(model, sharedModel("stories260K/tok512.bin"), "seeded");
  std::string base = quote(tool("quill-run")) + " " + quote(artifact) +
                     " -p 'Once upon a time' -n 64 --temp 0.8 --top-p 0.9 --seed 42 --json";
  CommandResult one = run(base + " --threads 1");
  CommandResult two = run(base + " --threads 2");
  ASSERT_EQ(one.exitCode, 0) << one.err;
  ASSERT_EQ(two.exitCode, 0) << two.err;
  auto tokens = [](const std::string &json) {
    size_t at = json.find("\"tokens\":");
    return json.substr(at, json.find(']', at) - at);
  };
  EXPECT_EQ(tokens(one.out), tokens(two.out));
  CommandResult other = run(base.substr(0, base.find("--seed")) + "--seed 43 --json --threads 2");
  EXPECT_NE(tokens(one.out), tokens(other.out)) << "a different seed should change the text";
}

} // namespace
} // namespace quill::test
