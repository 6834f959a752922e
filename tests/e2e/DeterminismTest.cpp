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

/// True when both devices hold the same logits, bit for bit.
bool sameLogits(const LoadedArtifact &a, const LoadedArtifact &b, int32_t vocab) {
  return std::memcmp(a.device->logits(), b.device->logits(), sizeof(float) * vocab) == 0;
}

/// Steps both devices through `steps` positions from `firstPos` with the
/// same tokens (`pos * stride + 1`) and checks their logits after each.
void expectSameDecodeLogits(LoadedArtifact &a, LoadedArtifact &b, int32_t firstPos, int32_t steps,
                            int32_t vocab, int32_t stride) {
  for (int32_t pos = firstPos; pos < firstPos + steps; ++pos) {
    int32_t token = (pos * stride + 1) % vocab;
    a.device->step(token, pos);
    b.device->step(token, pos);
    ASSERT_TRUE(sameLogits(a, b, vocab)) << "position " << pos;
  }
}

/// Prefills one chunk of the same tokens (`i * 131 + offset`) on both
/// devices and checks their logits.
void expectSamePrefillLogits(LoadedArtifact &a, LoadedArtifact &b, int32_t vocab, int32_t offset) {
  int32_t chunk = a.device->prefillChunk();
  ASSERT_GT(chunk, 0);
  std::vector<int32_t> tokens;
  for (int32_t i = 0; i < chunk; ++i)
    tokens.push_back((i * 131 + offset) % vocab);
  a.device->prefill(tokens.data(), *a.device->kvCache().append(chunk));
  b.device->prefill(tokens.data(), *b.device->kvCache().append(chunk));
  ASSERT_TRUE(sameLogits(a, b, vocab));
}

TEST(Determinism, LogitsAreBitwiseEqualForOneAndTwoThreads) {
  ModelConfig c = twoLayerShape(32);
  std::string artifact =
      compileArtifact(synthesizeModel(c, "det"), syntheticTokenizer(4096), "det");
  ASSERT_FALSE(artifact.empty());
  LoadedArtifact one = load(artifact, 1), two = load(artifact, 2);
  ASSERT_TRUE(one.device && two.device);
  expectSameDecodeLogits(one, two, 0, 16, c.vocabSize, 977);
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
  expectSameDecodeLogits(one, two, 0, 300, c.vocabSize, 37);
}

TEST(Determinism, PrefillLogitsAreBitwiseEqualForOneAndTwoThreads) {
  ModelConfig c = twoLayerShape(64);
  std::string artifact =
      compileArtifact(synthesizeModel(c, "det-prefill"), syntheticTokenizer(4096), "det-prefill");
  ASSERT_FALSE(artifact.empty());
  LoadedArtifact one = load(artifact, 1), two = load(artifact, 2);
  ASSERT_TRUE(one.device && two.device);
  expectSamePrefillLogits(one, two, c.vocabSize, 1);
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
  ASSERT_NO_FATAL_FAILURE(expectSamePrefillLogits(team, split, c.vocabSize, 7));
  expectSameDecodeLogits(team, split, team.device->prefillChunk(), 12, c.vocabSize, 977);
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
