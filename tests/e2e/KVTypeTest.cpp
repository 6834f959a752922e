// quill-compile --kv-type: caches of f16 or bf16. The decode (plain and
// flash-decoding), prefill and batch steps agree with the reference
// forward pass whose cache rounds k and v the same way (the rounding
// written in the oracle from the formats' definitions), follow that
// rounding rather than f32 caches, stay thread invariant, and take half
// the bytes; the reports say the type and the bytes per token.
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
  /// Heads of 8 (the CPU's small-head attention) or 32 (the generic
  /// form, split into flash-decoding chunks of 16 over the context of 64).
  bool wideHeads;
  bool emulateCuda; ///< The CUDA target's kernels, run on the CPU.
};
void PrintTo(const Case &c, std::ostream *os) { *os << c.name; }

ModelConfig shapeOf(const Case &k) {
  ModelConfig c =
      k.wideHeads ? llamaShape(128, 256, 2, 4, 2, 320, 64) : llamaShape(64, 160, 2, 8, 4, 320, 64);
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
  if (k.wideHeads)
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

  // Half the bytes of an f32 cache: 2 layers x (keys, values) x 64
  // positions x kv width x 2 bytes.
  LoadedArtifact loaded = load(artifact, 1);
  ASSERT_TRUE(loaded.device);
  EXPECT_EQ(loaded.artifact->config().kvType, k.type);
  EXPECT_EQ(loaded.device->kvCache().bytes(), uint64_t(2 * 2 * 64) * c.kvDim() * 2);
}

INSTANTIATE_TEST_SUITE_P(Types, KVTypes,
                         ::testing::Values(Case{"f16_small_heads", KVType::F16, false, false},
                                           Case{"bf16_small_heads", KVType::BF16, false, false},
                                           Case{"f16_flash_decoding", KVType::F16, true, false},
                                           Case{"bf16_flash_decoding", KVType::BF16, true, false},
                                           Case{"f16_emulated_cuda", KVType::F16, true, true}),
                         [](const auto &info) { return std::string(info.param.name); });

TEST(KVTypes, ReportsSayTheTypeAndTheBytesPerToken) {
  ModelConfig c = llamaShape(64, 160, 2, 8, 4, 320, 64);
  std::string artifact = compileSynthetic(c, "kv-report", "--kv-type bf16");
  ASSERT_FALSE(artifact.empty());
  // 2 layers x (keys, values) x kv width 32 x 2 bytes.
  const std::string perToken = std::to_string(2 * 2 * 32 * 2);
  CommandResult json = run(quote(tool("quill-run")) + " " + quote(artifact) +
                           " --bench --json --bench-prompt 8 --bench-decode 4");
  ASSERT_EQ(json.exitCode, 0) << json.err;
  EXPECT_NE(json.out.find("\"kv_type\":\"bf16\",\"kv_bytes_per_token\":" + perToken + ","),
            std::string::npos)
      << json.out;
  CommandResult verbose =
      run(quote(tool("quill-run")) + " " + quote(artifact) + " --verbose --temp 0 -n 2 -p a");
  ASSERT_EQ(verbose.exitCode, 0) << verbose.err;
  EXPECT_NE(verbose.err.find("kv cache: bf16, " + perToken + " bytes per token"), std::string::npos)
      << verbose.err;
}

TEST(KVTypes, AnUnknownTypeIsOneLine) {
  ModelConfig c = llamaShape(64, 160, 2, 8, 4, 320, 64);
  std::string model = synthesizeModel(c, "kv-bad");
  CommandResult r = run(quote(tool("quill-compile")) + " " + quote(model) + " --tokenizer " +
                        quote(syntheticTokenizer(c.vocabSize)) + " --kv-type q4 -o " +
                        quote(tempDir() + "/kv-bad.qm"));
  expectCleanFailure(r, "unknown --kv-type 'q4' (expected f32, f16 or bf16)");
}

} // namespace
} // namespace quill::test
