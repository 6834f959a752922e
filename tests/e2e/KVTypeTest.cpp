// quill-compile --kv-type: caches of f16, bf16 or Q8_0 blocks. The decode
// (plain and flash-decoding), prefill and batch steps agree with the
// reference forward pass whose cache rounds k and v the same way (the
// rounding and the Q8_0 quantization written in the oracle from the
// formats' definitions), follow that rounding rather than f32 caches, stay
// thread invariant, and take half the bytes (34 per 32 values for Q8_0);
// the reports say the type and the bytes per token.
#include "ReferenceForward.h"
#include "StepChecks.h"
#include "TestSupport.h"

#include <gtest/gtest.h>

#include <string>

namespace quill::test {
namespace {

/// An oracle over the llama2.c file `path` whose cache holds `type`.
OracleFactory roundedOracle(const std::string &path, KVType type) {
  return [path, type]() -> ErrorOr<ReferenceModel> {
    auto model = ReferenceModel::load(path);
    if (model.isOk())
      model->roundCacheTo(type);
    return model;
  };
}

struct Case {
  const char *name;
  KVType type;
  /// Heads of 8 (the CPU's small-head attention), of 32 (the wide-head
  /// microkernels, and for Q8_0 one block per head), or of 64 with 8 query
  /// heads per kv head (too many accumulators for the wide-head weighted
  /// sum: the generic form).
  enum Heads { Small, Wide, Grouped } heads;
  bool emulateCuda; ///< The CUDA target's kernels, run on the CPU.
  /// Decode attention split into flash-decoding chunks of 16 over the
  /// context of 64.
  bool flashDecoding;
};
void PrintTo(const Case &c, std::ostream *os) { *os << c.name; }

ModelConfig shapeOf(const Case &k) {
  ModelConfig c = k.heads == Case::Wide      ? llamaShape(128, 256, 2, 4, 2, 320, 64)
                  : k.heads == Case::Grouped ? llamaShape(512, 256, 2, 8, 1, 320, 64)
                                             : llamaShape(64, 160, 2, 8, 4, 320, 64);
  c.kvType = k.type; // As the artifact's config says: the paged cache's rows.
  return c;
}

class KVTypes : public ::testing::TestWithParam<Case> {};

TEST_P(KVTypes, StepsMatchTheReferenceWhoseCacheRoundsTheSameWay) {
  const Case k = GetParam();
  ModelConfig c = shapeOf(k);
  std::string name = std::string("kv-") + k.name;
  std::string model = synthesizeModel(c, name, 1, 41);
  std::string flags = "--prefill-chunk 8 --batch-rows 4 --kv-block-size 4 --kv-type " +
                      std::string(kvTypeName(k.type));
  if (k.flashDecoding)
    flags += " --attention-chunk 16";
  if (k.emulateCuda)
    flags += " --emulate-cuda-kernels";
  std::string artifact = compileArtifact(model, syntheticTokenizer(c.vocabSize), name, flags);
  ASSERT_FALSE(artifact.empty());
  OracleFactory rounded = roundedOracle(model, k.type);
  checkDecodeAndPrefill(artifact, rounded, c, k.name);
  if (!k.emulateCuda) // The emulation has no batch step to drive here.
    checkBatch(artifact, rounded, c, k.name);
  // The tolerance alone would let an f16 cache pass as f32: the logits must
  // also sit far closer to the rounded oracle than to the plain one.
  expectFollowsTheRounding(artifact, rounded, oracleFile(model), c, k.name);

  // 2 layers x (keys, values) x 64 positions x kv width x 2 bytes (half an
  // f32 cache), or for Q8_0 34 bytes per 32 values.
  LoadedArtifact loaded = load(artifact, 1);
  ASSERT_TRUE(loaded.device);
  EXPECT_EQ(loaded.artifact->config().kvType, k.type);
  const uint64_t rowBytes = k.type == KVType::Q8_0 ? c.kvDim() / 32 * 34 : c.kvDim() * 2;
  EXPECT_EQ(loaded.device->kvCache().bytes(), uint64_t(2 * 2 * 64) * rowBytes);
}

INSTANTIATE_TEST_SUITE_P(
    Types, KVTypes,
    ::testing::Values(Case{"f16_small_heads", KVType::F16, Case::Small, false, false},
                      Case{"bf16_small_heads", KVType::BF16, Case::Small, false, false},
                      Case{"f16_flash_decoding", KVType::F16, Case::Wide, false, true},
                      Case{"bf16_flash_decoding", KVType::BF16, Case::Wide, false, true},
                      Case{"f16_emulated_cuda", KVType::F16, Case::Wide, true, true},
                      Case{"q8_0_wide_heads", KVType::Q8_0, Case::Wide, false, false},
                      Case{"q8_0_grouped_heads", KVType::Q8_0, Case::Grouped, false, false},
                      Case{"q8_0_flash_decoding", KVType::Q8_0, Case::Wide, false, true},
                      Case{"q8_0_emulated_cuda", KVType::Q8_0, Case::Wide, true, true}),
    [](const auto &info) { return std::string(info.param.name); });

/// `--bench --json` and `--verbose` of `artifact` name `type` and the
/// `perToken` cache bytes one position takes.
void expectReports(const std::string &artifact, const std::string &type, int perToken) {
  const std::string bytes = std::to_string(perToken);
  CommandResult json = run(quote(tool("quill-run")) + " " + quote(artifact) +
                           " --bench --json --bench-prompt 8 --bench-decode 4");
  ASSERT_EQ(json.exitCode, 0) << json.err;
  EXPECT_NE(json.out.find("\"kv_type\":\"" + type + "\",\"kv_bytes_per_token\":" + bytes + ","),
            std::string::npos)
      << json.out;
  CommandResult verbose =
      run(quote(tool("quill-run")) + " " + quote(artifact) + " --verbose --temp 0 -n 2 -p a");
  ASSERT_EQ(verbose.exitCode, 0) << verbose.err;
  EXPECT_NE(verbose.err.find("kv cache: " + type + ", " + bytes + " bytes per token"),
            std::string::npos)
      << verbose.err;
}

TEST(KVTypes, ReportsSayTheTypeAndTheBytesPerToken) {
  std::string bf16 =
      compileSynthetic(llamaShape(64, 160, 2, 8, 4, 320, 64), "kv-report", "--kv-type bf16");
  ASSERT_FALSE(bf16.empty());
  // 2 layers x (keys, values) x kv width 32 x 2 bytes.
  expectReports(bf16, "bf16", 2 * 2 * 32 * 2);
  std::string q8 =
      compileSynthetic(llamaShape(128, 256, 2, 4, 2, 320, 64), "kv-report-q8", "--kv-type q8_0");
  ASSERT_FALSE(q8.empty());
  // 2 layers x (keys, values) x kv width 64 in 2 blocks of 34 bytes.
  expectReports(q8, "q8_0", 2 * 2 * 2 * 34);
}

TEST(KVTypes, AQ8_0CacheNeedsHeadsOfWholeBlocks) {
  ModelConfig c = llamaShape(64, 160, 2, 8, 4, 320, 64); // Heads of 8.
  std::string model = synthesizeModel(c, "kv-q8-narrow");
  CommandResult r = run(quote(tool("quill-compile")) + " " + quote(model) + " --tokenizer " +
                        quote(syntheticTokenizer(c.vocabSize)) + " --kv-type q8_0 -o " +
                        quote(tempDir() + "/kv-q8-narrow.qm"));
  expectCleanFailure(
      r, "--kv-type q8_0 needs a head dimension that is a multiple of 32; this model's is 8");
}

TEST(KVTypes, AnUnknownTypeIsOneLine) {
  ModelConfig c = llamaShape(64, 160, 2, 8, 4, 320, 64);
  std::string model = synthesizeModel(c, "kv-bad");
  CommandResult r = run(quote(tool("quill-compile")) + " " + quote(model) + " --tokenizer " +
                        quote(syntheticTokenizer(c.vocabSize)) + " --kv-type q4 -o " +
                        quote(tempDir() + "/kv-bad.qm"));
  expectCleanFailure(r, "unknown --kv-type 'q4' (expected f32, f16, bf16 or q8_0)");
}

} // namespace
} // namespace quill::test
