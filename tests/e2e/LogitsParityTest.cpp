// Every compiled artifact's logits, step by step, against the plain C++
// reference forward pass (the test oracle), on the real model and on
// synthetic shapes that stress grouped-query attention, separate
// classifiers, and widths that are not multiples of the vector width.
#include "ReferenceForward.h"
#include "TestSupport.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace quill::test {
namespace {

/// max_i |a_i - b_i| / max_i |b_i|: the error relative to the logits' scale
/// (elementwise ratios explode on logits near zero).
double relativeDifference(const float *actual, const std::vector<float> &expected) {
  double maxDiff = 0, maxRef = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    maxDiff = std::max(maxDiff, std::fabs(double(actual[i]) - expected[i]));
    maxRef = std::max(maxRef, std::fabs(double(expected[i])));
  }
  return maxDiff / std::max(maxRef, 1e-30);
}

/// Feeds the same tokens to both and compares the logits of every position.
void expectParity(const std::string &model, const std::string &tokenizer, const std::string &name,
                  int steps, int threads, const std::string &flags = "") {
  std::string artifact = compileArtifact(model, tokenizer, name, flags);
  ASSERT_FALSE(artifact.empty());
  LoadedArtifact loaded = load(artifact, threads);
  ASSERT_TRUE(loaded.device);
  auto reference = ReferenceModel::load(model);
  ASSERT_TRUE(reference.isOk()) << reference.message();
  const ModelConfig &config = reference->config();
  uint64_t state = 12345;
  double worst = 0;
  for (int pos = 0; pos < steps && pos < config.seqLen; ++pos) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    int token = pos == 0 ? 1 : int((state >> 33) % uint64_t(config.vocabSize));
    loaded.device->step(token, pos);
    std::vector<float> expected = reference->forward(token, pos);
    ASSERT_EQ(expected.size(), size_t(config.vocabSize));
    double diff = relativeDifference(loaded.device->logits(), expected);
    worst = std::max(worst, diff);
    ASSERT_LE(diff, 1e-4) << name << ": logits differ at position " << pos;
  }
  ::testing::Test::RecordProperty("worst_relative_difference", std::to_string(worst));
}

ModelConfig shape(int dim, int hidden, int layers, int heads, int kvHeads, int vocab, int context,
                  bool shared);

/// The prefill step (T tokens per pass) against the reference: the logits
/// after each chunk, then decode steps reading the cache the chunks wrote.
void expectPrefillParity(const std::string &model, const std::string &tokenizer,
                         const std::string &name, int threads, const std::string &flags = "") {
  std::string artifact = compileArtifact(model, tokenizer, name, flags);
  ASSERT_FALSE(artifact.empty());
  LoadedArtifact loaded = load(artifact, threads);
  ASSERT_TRUE(loaded.device);
  const int32_t chunk = loaded.device->prefillChunk();
  ASSERT_GT(chunk, 0) << "the artifact has no prefill step";
  auto reference = ReferenceModel::load(model);
  ASSERT_TRUE(reference.isOk()) << reference.message();
  const ModelConfig &config = reference->config();
  std::vector<int32_t> tokens;
  uint64_t state = 777;
  for (int i = 0; i < 2 * chunk + 6 && i < config.seqLen; ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    tokens.push_back(i == 0 ? 1 : int32_t((state >> 33) % uint64_t(config.vocabSize)));
  }
  std::vector<float> expected;
  KVCache &cache = loaded.device->kvCache();
  int pos = 0;
  for (; pos + chunk <= int(tokens.size()) && pos + chunk <= 2 * chunk; pos += chunk) {
    loaded.device->prefill(tokens.data() + pos, *cache.append(chunk));
    for (int i = pos; i < pos + chunk; ++i)
      expected = reference->forward(tokens[i], i);
    double diff = relativeDifference(loaded.device->logits(), expected);
    ASSERT_LE(diff, 1e-4) << name << ": logits differ after the prefill chunk ending at "
                          << pos + chunk - 1;
  }
  for (; pos < int(tokens.size()); ++pos) {
    loaded.device->step(tokens[pos], *cache.append());
    expected = reference->forward(tokens[pos], pos);
    ASSERT_LE(relativeDifference(loaded.device->logits(), expected), 1e-4)
        << name << ": decode after prefill differs at position " << pos;
  }
}

TEST(PrefillParity, Stories260K) {
  std::string model = sharedModel("stories260K/stories260K.bin");
  if (model.empty())
    GTEST_SKIP() << "../shared/models/stories260K is absent";
  expectPrefillParity(model, sharedModel("stories260K/tok512.bin"), "prefill-stories", 2);
}

TEST(PrefillParity, GroupedQueryAttentionOddWidthsSeparateClassifier) {
  ModelConfig c = shape(200, 520, 2, 10, 2, 512, 64, false);
  expectPrefillParity(synthesizeModel(c, "prefill-odd"), syntheticTokenizer(512), "prefill-odd", 2,
                      "--prefill-chunk 12");
}

TEST(PrefillParity, BlockedMatMulSplitAcrossThreadsAndAvx2) {
  // Widths that are multiples of 16: the register-tiled matmul; large
  // enough to be split across threads.
  ModelConfig c = shape(512, 1376, 2, 8, 4, 4096, 80, false);
  std::string model = synthesizeModel(c, "prefill-split");
  expectPrefillParity(model, syntheticTokenizer(4096), "prefill-split", 2);
  expectPrefillParity(model, syntheticTokenizer(4096), "prefill-split-avx2", 1,
                      "--cpu x86-64-v3 --prefill-chunk 16");
}

TEST(LogitsParity, Stories260K) {
  std::string model = sharedModel("stories260K/stories260K.bin");
  if (model.empty())
    GTEST_SKIP() << "../shared/models/stories260K is absent";
  expectParity(model, sharedModel("stories260K/tok512.bin"), "parity-stories", 64, 2);
}

ModelConfig shape(int dim, int hidden, int layers, int heads, int kvHeads, int vocab, int context,
                  bool shared) {
  ModelConfig c;
  c.dim = dim;
  c.hiddenDim = hidden;
  c.nLayers = layers;
  c.nHeads = heads;
  c.nKvHeads = kvHeads;
  c.vocabSize = vocab;
  c.seqLen = context;
  c.sharedClassifier = shared;
  return c;
}

TEST(LogitsParity, GroupedQueryAttentionOddWidthsSeparateClassifier) {
  // dim 200, hidden 520, 10 heads of 20 over 2 kv heads: no width is a
  // multiple of 16 floats.
  ModelConfig c = shape(200, 520, 2, 10, 2, 512, 64, false);
  expectParity(synthesizeModel(c, "gqa-odd"), syntheticTokenizer(512), "gqa-odd", 40, 2);
}

TEST(LogitsParity, MultiHeadSharedClassifierVersion1) {
  ModelConfig c = shape(96, 250, 3, 6, 6, 600, 48, true);
  expectParity(synthesizeModel(c, "mha-v1", /*formatVersion=*/1), syntheticTokenizer(600), "mha-v1",
               48, 1);
}

TEST(LogitsParity, LargeEnoughToSplitAcrossThreads) {
  // 4096 x 512 logits and 1376-wide feed-forward: kernels run split.
  ModelConfig c = shape(512, 1376, 2, 8, 4, 4096, 32, false);
  expectParity(synthesizeModel(c, "split"), syntheticTokenizer(4096), "split", 24, 2);
}

TEST(LogitsParity, FlashDecodingAttentionAcrossChunks) {
  // A 1024-position cache is split into 4 chunks of 256 (flash-decoding);
  // 300 positions cross the first chunk boundary. Two kv heads only: the
  // chunks are what gives the threads work.
  ModelConfig c = shape(128, 256, 2, 8, 2, 512, 1024, false);
  expectParity(synthesizeModel(c, "flash"), syntheticTokenizer(512), "flash", 300, 2);
}

TEST(LogitsParity, Avx2CodeAgreesToo) {
  // Kernels built for AVX2 (no AVX-512) must run here and agree as well.
  ModelConfig c = shape(200, 520, 2, 10, 2, 512, 64, false);
  expectParity(synthesizeModel(c, "avx2"), syntheticTokenizer(512), "avx2", 32, 2,
               "--cpu x86-64-v3");
}

TEST(LogitsParity, RotatedPairsSurviveAnyThreadCount) {
  // 260 QKV rows (dim 220, 11 heads of 20, one kv head) split between 3 or
  // 5 threads: the units are pairs of rows, so no split separates a rotated
  // pair (splitting rows would put a boundary at an odd row).
  ModelConfig c = shape(220, 300, 1, 11, 1, 512, 512, false);
  std::string model = synthesizeModel(c, "pairs");
  for (int threads : {3, 5})
    expectParity(model, syntheticTokenizer(512), "pairs-" + std::to_string(threads), 24, threads);
  // Prefill's matmuls split at odd rows too (register tiles of 8 rows with
  // leftovers on either side of a boundary).
  expectPrefillParity(model, syntheticTokenizer(512), "pairs-prefill-3", 3, "--prefill-chunk 12");
}

// The CUDA target's kernel transformations compiled for the CPU
// (--emulate-cuda-kernels: one unit of work per kernel call, the GPU's math
// approximations), so they are checked where there is no GPU.
TEST(LogitsParity, EmulatedCudaKernelsStories260K) {
  std::string model = sharedModel("stories260K/stories260K.bin");
  if (model.empty())
    GTEST_SKIP() << "../shared/models/stories260K is absent";
  expectParity(model, sharedModel("stories260K/tok512.bin"), "emulated-stories", 64, 2,
               "--emulate-cuda-kernels");
  expectPrefillParity(model, sharedModel("stories260K/tok512.bin"), "emulated-prefill-stories", 2,
                      "--emulate-cuda-kernels");
}

/// A synthetic model of shape `c` compiled with --emulate-cuda-kernels:
/// decode over `steps` positions and chunked prefill against the reference.
void expectEmulatedParity(const ModelConfig &c, const std::string &name, int steps,
                          float queryKeyGain = 1.0f, int prefillChunk = 12) {
  std::string model = synthesizeModel(c, name, 0, 7, queryKeyGain);
  expectParity(model, syntheticTokenizer(512), name, steps, 2, "--emulate-cuda-kernels");
  expectPrefillParity(model, syntheticTokenizer(512), name + "-prefill", 2,
                      "--emulate-cuda-kernels --prefill-chunk " + std::to_string(prefillChunk));
}

TEST(LogitsParity, EmulatedCudaKernelsGqaOddWidthsLongContext) {
  // Positions up to 600 (rotary angles far from the approximations' core
  // range) across flash-decoding chunks, odd widths, a separate classifier.
  expectEmulatedParity(shape(200, 520, 2, 10, 2, 512, 1024, false), "emulated-gqa", 600);
}

TEST(LogitsParity, PeakedAttentionOnTheCpuAndEmulated) {
  // wq and wk 3x wider: scores 9x larger, so each row's softmax is dominated
  // by a few positions and its maximum moves as positions come in (what an
  // online softmax must rescale for; flat random attention hides that).
  // Prefill chunks of 48 reach position 95: the GPU's lanes (32) each see
  // several positions of a row.
  ModelConfig c = shape(256, 640, 2, 4, 2, 512, 256, false);
  std::string model = synthesizeModel(c, "peaked", 0, 7, 3.0f);
  expectParity(model, syntheticTokenizer(512), "peaked", 160, 2);
  expectPrefillParity(model, syntheticTokenizer(512), "peaked-prefill", 2, "--prefill-chunk 48");
  expectEmulatedParity(c, "peaked-emulated", 160, 3.0f, /*prefillChunk=*/48);
}

TEST(LogitsParity, EmulatedCudaKernelsThreadPerUnit) {
  // --no-warp-reductions: every GPU unit on one thread (the A/B baseline),
  // prefill attention's units (query row, kv head) included.
  ModelConfig c = shape(256, 640, 2, 4, 2, 512, 256, false);
  std::string model = synthesizeModel(c, "emulated-threads", 0, 7, 3.0f);
  expectParity(model, syntheticTokenizer(512), "emulated-threads", 160, 2,
               "--emulate-cuda-kernels --no-warp-reductions");
  expectPrefillParity(model, syntheticTokenizer(512), "emulated-threads-prefill", 2,
                      "--emulate-cuda-kernels --no-warp-reductions --prefill-chunk 48");
}

TEST(LogitsParity, EmulatedCudaKernelsWarpWidths) {
  // Widths that are multiples of 128 (256, 640): each lane of the warp-shared
  // reductions keeps four interleaved partial sums, the path 110m and 1b take.
  expectEmulatedParity(shape(256, 640, 2, 4, 2, 512, 256, false), "emulated-warp", 160);
}

} // namespace
} // namespace quill::test
