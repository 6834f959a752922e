// Weights kept in their file's encoding (F16, BF16, Q8_0, Q4_0, Q4_K, Q6_K
// and llama.cpp's Q4_K_M mix) or quantized by quill-compile --quantize:
// the decode, prefill and batch steps' logits agree with the reference
// forward pass run on the values the encoding stands for (dequantized by
// the test writers' own formulas), and do not depend on the thread count.
#include "ReferenceForward.h"
#include "StepChecks.h"
#include "TestSupport.h"
#include "compiler/Import/ModelSource.h"
#include "runtime/artifact/Artifact.h"
#include "runtime/scheduler/BatchScheduler.h"
#include "tests/unit/ModelWriters.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <vector>

namespace quill::test {
namespace {

namespace fs = std::filesystem;

/// Rows of 256 (whole K-quant super-blocks), grouped-query attention.
ModelConfig quantConfig(bool shared) {
  ModelConfig c;
  c.dim = 256, c.hiddenDim = 512, c.nLayers = 2, c.nHeads = 4, c.nKvHeads = 2;
  c.vocabSize = 320, c.seqLen = 64, c.sharedClassifier = shared;
  return c;
}

/// A GGUF of quantConfig(`shared`) with seed `seed`, every matrix `type`,
/// and the llama2.c file of the values its blocks stand for (the oracle's).
struct EncodedModel {
  ModelConfig config;
  std::string model, reference;
};
EncodedModel encodedModel(const std::string &name, const char *type, const ModelConfig &config,
                          uint64_t seed) {
  EncodedModel m{config, tempDir() + "/" + name + ".gguf",
                 tempDir() + "/" + name + "-reference.bin"};
  TensorMap values = syntheticTensors(m.config, seed, [](float x) { return x; }), stored;
  writeBytes(m.model, llamaGgufBytes(m.config, values, type, 3, &stored));
  writeLlama2cV1(m.reference, m.config, stored);
  return m;
}
EncodedModel encodedModel(const std::string &name, const char *type, bool shared, uint64_t seed) {
  return encodedModel(name, type, quantConfig(shared), seed);
}

struct FileEncoding {
  const char *type; ///< encodeTensor's name, or "Q4_K_M".
  bool shared;      ///< The classifier shares the embedding.
};
void PrintTo(const FileEncoding &e, std::ostream *os) { *os << e.type; }

class FileEncodings : public ::testing::TestWithParam<FileEncoding> {};

/// quill-compile's command line for `model` with `flags` (its IR is read
/// with --emit).
std::string compileCommand(const std::string &model, const ModelConfig &c,
                           const std::string &flags) {
  return quote(tool("quill-compile")) + " " + quote(model) + " --tokenizer " +
         quote(syntheticTokenizer(c.vocabSize)) + " " + flags;
}

TEST_P(FileEncodings, StepsMatchTheReferenceOnTheStoredValues) {
  const FileEncoding e = GetParam();
  std::string name = std::string("enc-") + e.type;
  auto [c, model, reference] = encodedModel(name, e.type, e.shared, 23);
  std::string artifact = compileArtifact(model, syntheticTokenizer(c.vocabSize), name,
                                         "--prefill-chunk 8 --batch-rows 4 --kv-block-size 4");
  ASSERT_FALSE(artifact.empty());
  // Products over block types take Q8_0-rounded inputs, over bf16
  // bf16-rounded ones (f16: f32). (Q4_K_M's matrices are all Q4_K or Q6_K.)
  auto typeOf = [&](const std::string &) {
    return std::string(e.type) == "Q4_K_M" ? std::string("Q4_K") : std::string(e.type);
  };
  std::set<std::string> q8 = q8InputMatrices(c, typeOf), bf16 = bf16InputMatrices(c, typeOf);
  const double tolerance = roundedInputTolerance(q8, bf16);
  checkDecodeAndPrefill(artifact, oracleFile(reference, q8, bf16), c, e.type, tolerance);
  checkBatch(artifact, oracleFile(reference, q8, bf16), c, e.type, tolerance);
  if (!q8.empty())
    expectFollowsTheRounding(artifact, oracleFile(reference, q8), oracleFile(reference), c, e.type);
  if (!bf16.empty())
    expectRoundsAsTheOracleAtPositionZero(artifact, oracleFile(reference, {}, bf16),
                                          oracleFile(reference), c, e.type);
}

INSTANTIATE_TEST_SUITE_P(Types, FileEncodings,
                         ::testing::Values(FileEncoding{"F16", false}, FileEncoding{"BF16", true},
                                           FileEncoding{"Q8_0", true}, FileEncoding{"Q4_0", false},
                                           FileEncoding{"Q4_K", false}, FileEncoding{"Q6_K", true},
                                           FileEncoding{"Q4_K_M", false}),
                         [](const auto &info) { return std::string(info.param.type); });

TEST(FileEncodings, ABatchOfOneSumsAsTheTilesOverTwoPanels) {
  // The down projection's rows are 1280 wide: two panels of the register
  // tiles (1024 and 256 columns), which a batch step with one live row
  // must add in the same order for its logits to stay those it gets among
  // other rows (checkBatch compares them bit for bit).
  for (const char *type : {"Q8_0", "Q4_K", "F16"}) {
    ModelConfig wide = quantConfig(false);
    wide.hiddenDim = 1280;
    std::string name = std::string("panels-") + type;
    auto [c, model, reference] = encodedModel(name, type, wide, 37);
    std::string artifact = compileArtifact(model, syntheticTokenizer(c.vocabSize), name,
                                           "--batch-rows 4 --kv-block-size 4");
    ASSERT_FALSE(artifact.empty());
    std::set<std::string> q8 =
        q8InputMatrices(c, [&](const std::string &) { return std::string(type); });
    checkBatch(artifact, oracleFile(reference, q8), c, type, q8.empty() ? 1e-4 : kQ8InputTolerance);
  }
}

TEST(FileEncodings, RowGroupsAndFileRowsBothMatchTheReference) {
  // On a CPU with AVX-512 VNNI the int8 kernels read Q8_0, Q4_0, Q4_K and
  // Q6_K weights stored in row groups (the default: StepsMatchTheReferenceOnTheStoredValues);
  // --no-row-groups keeps the file's rows, which the kernels transpose per
  // call. Both must give the oracle's logits; the default must really
  // have grouped the weights (and the A/B flag not).
  if (!cpuHasFlag("avx512_vnni"))
    GTEST_SKIP() << "this CPU lacks AVX-512 VNNI: no 16-row groups to compare";
  for (const char *type : {"Q8_0", "Q4_0", "Q4_K", "Q6_K"}) {
    std::string name = std::string("file-rows-") + type;
    auto [c, model, reference] = encodedModel(name, type, false, 41);
    const std::string flags = "--prefill-chunk 8 --batch-rows 4 --kv-block-size 4";
    const std::string compile = compileCommand(model, c, flags);
    CommandResult grouped = run(compile + " --emit=kernels");
    CommandResult plain = run(compile + " --no-row-groups --emit=kernels");
    ASSERT_EQ(grouped.exitCode, 0) << grouped.err;
    ASSERT_EQ(plain.exitCode, 0) << plain.err;
    EXPECT_NE(grouped.out.find("#quill.row_groups<16>"), std::string::npos) << type;
    EXPECT_EQ(plain.out.find("row_groups"), std::string::npos) << type;

    std::string artifact =
        compileArtifact(model, syntheticTokenizer(c.vocabSize), name, flags + " --no-row-groups");
    ASSERT_FALSE(artifact.empty());
    // The weight table says which matrices are grouped (--verbose).
    std::string groupedArtifact =
        compileArtifact(model, syntheticTokenizer(c.vocabSize), name + "-grouped", flags);
    ASSERT_FALSE(groupedArtifact.empty());
    auto verbose = [&](const std::string &file) {
      return run(quote(tool("quill-run")) + " " + quote(file) + " -n 1 --temp 0 --verbose").err;
    };
    EXPECT_NE(verbose(groupedArtifact).find("in row groups of 16)"), std::string::npos) << type;
    EXPECT_EQ(verbose(artifact).find("row groups"), std::string::npos) << type;
    std::set<std::string> q8 =
        q8InputMatrices(c, [&](const std::string &) { return std::string(type); });
    checkDecodeAndPrefill(artifact, oracleFile(reference, q8), c, name, kQ8InputTolerance);
    checkBatch(artifact, oracleFile(reference, q8), c, name, kQ8InputTolerance);
  }
}

TEST(FileEncodings, EmulatedCudaKernelsMatchTheReference) {
  // The CUDA target's kernels (one unit per call, inputs rounded to Q8_0
  // blocks where the generic products read them, the GPU's math
  // approximations) compiled for the CPU, on the stored values; BF16's
  // inputs rounded to bf16 where the products read them.
  for (const char *type : {"Q8_0", "Q4_0", "Q4_K_M", "BF16"}) {
    std::string name = std::string("emulated-") + type;
    auto [c, model, reference] = encodedModel(name, type, false, 29);
    std::string artifact = compileArtifact(model, syntheticTokenizer(c.vocabSize), name,
                                           "--emulate-cuda-kernels --prefill-chunk 8");
    ASSERT_FALSE(artifact.empty());
    auto typeOf = [&](const std::string &) {
      return std::string(type) == "Q4_K_M" ? std::string("Q4_K") : std::string(type);
    };
    std::set<std::string> q8 = q8InputMatrices(c, typeOf), bf16 = bf16InputMatrices(c, typeOf);
    // (The GPU's approximate rsqrt, exp and silu move activations by about
    // 1e-6, enough to flip bf16 roundings even at position 0: the exact
    // check of the rounding runs on the CPU's kernels.)
    checkDecodeAndPrefill(artifact, oracleFile(reference, q8, bf16), c, name,
                          roundedInputTolerance(q8, bf16));
  }
}

TEST(FileEncodings, GroupsOfEightRowsOnAvxVnniMatchTheReference) {
  // An AVX2 CPU with AVX-VNNI (alderlake: no AVX-512): 8-lane vectors, the
  // int8 matmuls' groups 8 rows and their vpdpbusd the 256-bit VEX form.
  if (!cpuHasFlag("avx_vnni") || !cpuHasFlag("avx2"))
    GTEST_SKIP() << "this CPU lacks AVX-VNNI, so an alderlake artifact cannot run here";
  for (const char *type : {"Q8_0", "Q4_K_M"}) {
    std::string name = std::string("avx-vnni-") + type;
    auto [c, model, reference] = encodedModel(name, type, false, 31);
    std::string artifact =
        compileArtifact(model, syntheticTokenizer(c.vocabSize), name,
                        "--cpu=alderlake --prefill-chunk 8 --batch-rows 4 --kv-block-size 4");
    ASSERT_FALSE(artifact.empty());
    std::set<std::string> q8 = q8InputMatrices(c, [&](const std::string &) {
      return std::string(type) == "Q4_K_M" ? std::string("Q4_K") : std::string(type);
    });
    checkDecodeAndPrefill(artifact, oracleFile(reference, q8), c, name, kQ8InputTolerance);
    checkBatch(artifact, oracleFile(reference, q8), c, name, kQ8InputTolerance);
  }
}

TEST(FileEncodings, Avx2PairProductsMatchTheReference) {
  // A Haswell artifact (AVX2, no VNNI): the int8 products as vpmaddubsw
  // pairs summed in i16 and widened by vpmaddwd, Q8_0's bytes signed; the
  // weights in row groups of 8, and again in the file's rows (decode's
  // blocks of 4 rows, the matmuls' per-call transposes). Their integer
  // sums are vpdpbusd's, so every step must give the oracle's logits.
  if (!cpuHasFlag("avx2") || !cpuHasFlag("fma") || !cpuHasFlag("f16c"))
    GTEST_SKIP() << "this CPU lacks AVX2, so a haswell artifact cannot run here";
  for (const char *type : {"Q8_0", "Q4_0", "Q4_K_M"}) {
    std::string name = std::string("avx2-") + type;
    auto [c, model, reference] = encodedModel(name, type, false, 43);
    const std::string flags = "--cpu=haswell --prefill-chunk 8 --batch-rows 4 --kv-block-size 4";
    const std::string compile = compileCommand(model, c, flags);
    CommandResult kernels = run(compile + " --emit=kernels");
    ASSERT_EQ(kernels.exitCode, 0) << kernels.err;
    EXPECT_NE(kernels.out.find("#quill.row_groups<8>"), std::string::npos) << type;
    CommandResult linalg = run(compile + " --emit=linalg");
    ASSERT_EQ(linalg.exitCode, 0) << linalg.err;
    EXPECT_NE(linalg.out.find("llvm.x86.avx2.pmadd.ub.sw"), std::string::npos) << type;
    EXPECT_EQ(linalg.out.find("vpdpbusd"), std::string::npos) << type;
    std::set<std::string> q8 = q8InputMatrices(c, [&](const std::string &) {
      return std::string(type) == "Q4_K_M" ? std::string("Q4_K") : std::string(type);
    });
    for (const char *layout : {"", " --no-row-groups"}) {
      std::string artifact = compileArtifact(model, syntheticTokenizer(c.vocabSize),
                                             name + (*layout ? "-file-rows" : ""), flags + layout);
      ASSERT_FALSE(artifact.empty());
      checkDecodeAndPrefill(artifact, oracleFile(reference, q8), c, name + layout,
                            kQ8InputTolerance);
      checkBatch(artifact, oracleFile(reference, q8), c, name + layout, kQ8InputTolerance);
    }
  }
}

TEST(FileEncodings, Bf16PairTilesOnZen4MatchTheReference) {
  // A Zen 4 artifact (its vdpbf16ps outruns the FMAs, so bf16 matmuls take
  // the bf16-pair register tiles): prefill and the batch step against the
  // oracle that rounds the same inputs to bf16, a batch of one included.
  if (!cpuHasFlag("avx512_bf16") || !cpuHasFlag("avx512_vbmi2"))
    GTEST_SKIP() << "this CPU lacks AVX512_BF16, so a znver4 artifact cannot run here";
  ModelConfig wide = quantConfig(false);
  wide.hiddenDim = 1280; // The down projection's rows: two panels of columns.
  auto [c, model, reference] = encodedModel("zen4-bf16", "BF16", wide, 43);
  std::string artifact = compileArtifact(model, syntheticTokenizer(c.vocabSize), "zen4-bf16",
                                         "--cpu=znver4 --prefill-chunk 8 --batch-rows 4 "
                                         "--kv-block-size 4");
  ASSERT_FALSE(artifact.empty());
  std::set<std::string> bf16 = matrixNames(c);
  checkDecodeAndPrefill(artifact, oracleFile(reference, {}, bf16), c, "zen4 bf16",
                        kBf16InputTolerance);
  checkBatch(artifact, oracleFile(reference, {}, bf16), c, "zen4 bf16", kBf16InputTolerance);
  expectRoundsAsTheOracleAtPositionZero(artifact, oracleFile(reference, {}, bf16),
                                        oracleFile(reference), c, "zen4 bf16");
}

TEST(FileEncodings, RowsPastTheLastWholeGroupMatchTheReference) {
  // A vocabulary of 330: the classifier's last rows are a partial group of
  // the int8 matmul's row groups (16 or 8 rows), computed in full lanes
  // that are never stored past the output's last column.
  for (const char *type : {"Q8_0", "Q6_K"}) {
    ModelConfig odd = quantConfig(false);
    odd.vocabSize = 330;
    std::string name = std::string("partial-group-") + type;
    auto [c, model, reference] = encodedModel(name, type, odd, 41);
    std::string artifact = compileArtifact(model, syntheticTokenizer(c.vocabSize), name,
                                           "--prefill-chunk 8 --batch-rows 4 --kv-block-size 4");
    ASSERT_FALSE(artifact.empty());
    std::set<std::string> q8 =
        q8InputMatrices(c, [&](const std::string &) { return std::string(type); });
    checkDecodeAndPrefill(artifact, oracleFile(reference, q8), c, type, kQ8InputTolerance);
    checkBatch(artifact, oracleFile(reference, q8), c, type, kQ8InputTolerance);
  }
}

/// quill-compile --quantize=SCHEME of an fp32 llama2.c file, against the
/// oracle on what the test writers' own formulas make of its weights.
struct Scheme {
  const char *flag; ///< --quantize's value.
  /// The encodeTensor type llama.cpp's rule gives a matrix of the 2-layer
  /// model with a separate classifier.
  const char *(*typeOf)(const std::string &canonical);
};

const char *everyMatrix(const char *type, const std::string &) { return type; }
/// Q4_0: the classifier Q6_K.
const char *q4_0Types(const std::string &name) { return name == "output" ? "Q6_K" : "Q4_0"; }
/// Q4_K_M over 2 layers: use_more_bits(i, 2) holds for layer 1 only
/// (i >= 7 * 2 / 8), so its wv and w2 are Q6_K, as is the classifier.
const char *q4_KMTypes(const std::string &name) {
  if (name == "output" || name == "layers.1.wv" || name == "layers.1.w2")
    return "Q6_K";
  return "Q4_K";
}
void PrintTo(const Scheme &s, std::ostream *os) { *os << s.flag; }

class QuantizeSchemes : public ::testing::TestWithParam<Scheme> {};

/// GGUF's bytes per block of 32 or 256 weights, written out from the format
/// (ggml-common.h's block structs), and the block's element count.
std::pair<uint64_t, uint64_t> blockOf(const std::string &type) {
  if (type == "F32")
    return {4, 1};
  if (type == "F16" || type == "BF16")
    return {2, 1};
  if (type == "Q8_0")
    return {2 + 32, 32}; // fp16 d, 32 int8
  if (type == "Q4_0")
    return {2 + 16, 32}; // fp16 d, 32 nibbles
  if (type == "Q4_K")
    return {2 + 2 + 12 + 128, 256}; // fp16 d, dmin, 6-bit scales, nibbles
  if (type == "Q6_K")
    return {128 + 64 + 16 + 2, 256}; // low 4 bits, high 2 bits, int8 scales, fp16 d
  ADD_FAILURE() << "no block size for " << type;
  return {1, 1};
}

/// The artifact holds every tensor of the model once: its weight table
/// names each (alone, or as a part of a pack) exactly once, in the type
/// `typeOf` gives its matrix (norms f32), with the bytes its blocks take,
/// and the weight blob is at most 1.05x those bytes (alignment padding).
/// With `normsMayFold` (f32 matrices), a norm folded into the packs that
/// follow it is stored in them and not by itself.
void expectTheTableStatesEachWeight(const std::string &artifact, const ModelConfig &c,
                                    const TensorMap &model,
                                    const char *(*typeOf)(const std::string &),
                                    bool normsMayFold = false) {
  auto opened = Artifact::open(artifact);
  ASSERT_TRUE(opened.isOk()) << opened.message();
  std::map<std::string, int> stored;
  uint64_t modelBytes = 0;
  for (const WeightEntry &e : opened->weightTable()) {
    std::vector<std::string> parts;
    for (size_t at = 0; at <= e.name.size();) {
      size_t plus = std::min(e.name.find('+', at), e.name.size());
      parts.push_back(e.name.substr(at, plus - at));
      at = plus + 1;
    }
    uint64_t elements = 0, bytes = 0;
    for (const std::string &part : parts) {
      std::vector<int64_t> shape = canonicalShape(c, part);
      ASSERT_FALSE(shape.empty()) << part;
      std::string type = shape.size() == 2 ? typeOf(part) : "F32";
      std::string lower = type;
      std::transform(lower.begin(), lower.end(), lower.begin(), ::tolower);
      EXPECT_EQ(weightEncodingInfo(e.encoding).name, lower) << e.name;
      uint64_t n = 1;
      for (int64_t d : shape)
        n *= uint64_t(d);
      auto [blockBytes, blockElements] = blockOf(type);
      elements += n;
      bytes += n / blockElements * blockBytes;
      ++stored[part];
    }
    EXPECT_EQ(e.elements, elements) << e.name;
    EXPECT_EQ(e.bytes, bytes) << e.name;
    modelBytes += bytes;
  }
  for (const auto &[name, values] : model) {
    auto it = stored.find(name);
    if (it == stored.end())
      EXPECT_TRUE(normsMayFold && canonicalShape(c, name).size() == 1) << name << " is not stored";
    else
      EXPECT_EQ(it->second, 1) << name << " is stored more than once";
  }
  EXPECT_LE(stored.size(), model.size());
  EXPECT_LE(double(opened->schedule().weightBytes), 1.05 * double(modelBytes));
}

TEST_P(QuantizeSchemes, StepsMatchTheReferenceOnTheFormulasBlocks) {
  const Scheme s = GetParam();
  ModelConfig c = quantConfig(false);
  TensorMap values = syntheticTensors(c, 29, [](float x) { return x; });
  std::string name = std::string("quantize-") + s.flag;
  std::string source = tempDir() + "/" + name + ".bin";
  writeLlama2cV1(source, c, values);
  TensorMap dequantized = values;
  for (auto &[tensor, v] : dequantized)
    if (canonicalShape(c, tensor).size() == 2)
      v = encodeTensor(v, s.typeOf(tensor)).stored;
  std::string reference = tempDir() + "/" + name + "-reference.bin";
  writeLlama2cV1(reference, c, dequantized);
  std::string artifact = compileArtifact(source, syntheticTokenizer(c.vocabSize), name,
                                         std::string("--quantize ") + s.flag +
                                             " --prefill-chunk 8 --batch-rows 4 --kv-block-size 4");
  ASSERT_FALSE(artifact.empty());
  expectTheTableStatesEachWeight(artifact, c, values, s.typeOf);
  std::set<std::string> q8 = q8InputMatrices(c, s.typeOf), bf16 = bf16InputMatrices(c, s.typeOf);
  checkDecodeAndPrefill(artifact, oracleFile(reference, q8, bf16), c, s.flag,
                        roundedInputTolerance(q8, bf16));
  if (!bf16.empty())
    expectRoundsAsTheOracleAtPositionZero(artifact, oracleFile(reference, {}, bf16),
                                          oracleFile(reference), c, s.flag);
}

INSTANTIATE_TEST_SUITE_P(
    Schemes, QuantizeSchemes,
    ::testing::Values(Scheme{"f16", [](const std::string &n) { return everyMatrix("F16", n); }},
                      Scheme{"bf16", [](const std::string &n) { return everyMatrix("BF16", n); }},
                      Scheme{"q8_0", [](const std::string &n) { return everyMatrix("Q8_0", n); }},
                      Scheme{"q4_0", q4_0Types}, Scheme{"q4_k_m", q4_KMTypes}),
    [](const auto &info) { return std::string(info.param.flag); });

TEST(QuantizeSchemes, Fp32StepsReadOneCopyOfEachWeight) {
  // The decode step packs Q, K and V (with the RMSNorm folded in) and gate
  // and up; the prefill and batch steps read the same packs. Without
  // sharing, they keep copies: the blob grows by their bytes.
  ModelConfig c = quantConfig(false);
  TensorMap values = syntheticTensors(c, 31, [](float x) { return x; });
  std::string source = tempDir() + "/share-f32.bin";
  writeLlama2cV1(source, c, values);
  const std::string steps = "--prefill-chunk 8 --batch-rows 4 --kv-block-size 4";
  std::string shared = compileArtifact(source, syntheticTokenizer(c.vocabSize), "share-f32", steps);
  std::string copies = compileArtifact(source, syntheticTokenizer(c.vocabSize), "share-f32-copies",
                                       steps + " --no-weight-sharing");
  ASSERT_FALSE(shared.empty() || copies.empty());
  expectTheTableStatesEachWeight(
      shared, c, values, [](const std::string &) { return "F32"; }, /*normsMayFold=*/true);
  auto a = Artifact::open(shared), b = Artifact::open(copies);
  ASSERT_TRUE(a.isOk() && b.isOk());
  // Q, K and V of every layer, once more (with their norm folded in).
  uint64_t qkv = uint64_t(c.dim + 2 * c.dim / c.nHeads * c.nKvHeads) * c.dim * 4 * c.nLayers;
  EXPECT_GE(b->schedule().weightBytes, a->schedule().weightBytes + qkv);
  checkDecodeAndPrefill(shared, oracleFile(source), c, "f32 shared", 1e-4);
  checkBatch(shared, oracleFile(source), c, "f32 shared", 1e-4);
}

TEST(FileEncodings, WithoutQuantizedActivationsQ4_0ProductsTakeF32Inputs) {
  // --no-quantize-activations: Q8_0 and Q4_0 products multiply the f32
  // input, so the artifact matches the oracle that does not round inputs,
  // as closely as any f32 product (1e-4). The rounding is visible: the two
  // oracles differ by more than that.
  auto [c, model, reference] = encodedModel("f32-inputs-q4_0", "Q4_0", true, 31);
  auto plain = oracleFile(reference)();
  auto rounded = oracleFile(reference, matrixNames(c))();
  ASSERT_TRUE(plain.isOk() && rounded.isOk());
  double difference = 0;
  for (int pos = 0; pos < 4; ++pos) {
    std::vector<float> a = plain->forward(tokenAt(pos, c.vocabSize), pos);
    difference = std::max(
        difference, relativeDifference(a.data(), rounded->forward(tokenAt(pos, c.vocabSize), pos)));
  }
  EXPECT_GT(difference, 1e-3);
  std::string artifact = compileArtifact(
      model, syntheticTokenizer(c.vocabSize), "f32-inputs-q4_0",
      "--no-quantize-activations --prefill-chunk 8 --batch-rows 4 --kv-block-size 4");
  ASSERT_FALSE(artifact.empty());
  checkDecodeAndPrefill(artifact, oracleFile(reference), c, "Q4_0 with f32 inputs");
  checkBatch(artifact, oracleFile(reference), c, "Q4_0 with f32 inputs");
}

TEST(FileEncodings, Q8_0InputsWithoutInt8DotProductsFollowTheRounding) {
  // Without int8 dot products (--no-int8-dot, on haswell: AVX2) the kernels
  // round the inputs and multiply them as f32: the same rounded products
  // as the int8 kernels.
  auto [c, model, reference] = encodedModel("q8-inputs-haswell", "Q8_0", false, 43);
  std::string artifact = compileArtifact(
      model, syntheticTokenizer(c.vocabSize), "q8-inputs-haswell",
      "--cpu=haswell --no-int8-dot --prefill-chunk 8 --batch-rows 4 --kv-block-size 4");
  ASSERT_FALSE(artifact.empty());
  auto rounded = oracleFile(reference, matrixNames(c));
  checkDecodeAndPrefill(artifact, rounded, c, "Q8_0 on haswell", kQ8InputTolerance);
  expectFollowsTheRounding(artifact, rounded, oracleFile(reference), c, "Q8_0 on haswell");
}

TEST(FileEncodings, InfoSaysEachTypeAndTheBytesPerToken) {
  // Q8_0 matrices (34 bytes per 32 weights), F32 norms, a separate
  // classifier: a token reads every matrix but one embedding row.
  ModelConfig c = quantConfig(false);
  TensorMap values = syntheticTensors(c, 37, [](float x) { return x; });
  TensorMap stored;
  std::string model = tempDir() + "/info-q8_0.gguf";
  writeBytes(model, llamaGgufBytes(c, values, "Q8_0", 3, &stored));
  CommandResult r = run(quote(tool("quill-compile")) + " --info " + quote(model));
  ASSERT_EQ(r.exitCode, 0) << r.err;
  // The line naming a tensor ends with its type and shape.
  auto lineOf = [&](const std::string &name) {
    size_t at = r.out.find(" " + name + " ");
    return at == std::string::npos ? std::string() : r.out.substr(at, r.out.find('\n', at) - at);
  };
  EXPECT_NE(lineOf("blk.0.attn_q.weight").find(" Q8_0  256x256"), std::string::npos) << r.out;
  EXPECT_NE(lineOf("blk.0.attn_norm.weight").find(" F32  256"), std::string::npos) << r.out;
  const uint64_t kv = uint64_t(c.dim) / c.nHeads * c.nKvHeads;
  const uint64_t layerWeights =
      2 * uint64_t(c.dim) * c.dim + 2 * kv * c.dim + 3 * uint64_t(c.dim) * c.hiddenDim;
  const uint64_t matrices = c.nLayers * layerWeights + uint64_t(c.vocabSize) * c.dim; // + output
  const uint64_t norms = (2 * uint64_t(c.nLayers) + 1) * c.dim * 4;
  const uint64_t perToken = matrices / 32 * 34 + norms + uint64_t(c.dim) / 32 * 34;
  EXPECT_NE(r.out.find("a decode step reads " + std::to_string(perToken) + " bytes per token"),
            std::string::npos)
      << r.out;
}

/// Greedy tokens from BOS (token 1) through `artifact`'s decode step.
std::vector<int> greedyTokens(const std::string &artifact, int count) {
  LoadedArtifact loaded = load(artifact, 2);
  std::vector<int> tokens;
  if (!loaded.device)
    return tokens;
  const int vocab = loaded.artifact->config().vocabSize;
  int token = 1;
  for (int pos = 0; pos < count; ++pos) {
    loaded.device->step(token, pos);
    const float *logits = loaded.device->logits();
    token = int(std::max_element(logits, logits + vocab) - logits);
    tokens.push_back(token);
  }
  return tokens;
}

TEST(QuantizeSchemes, Stories260KInQ8_0FollowsFp32GreedyForAtLeast50Tokens) {
  std::string model = sharedModel("stories260K/stories260K.bin");
  std::string tok = sharedModel("stories260K/tok512.bin");
  if (model.empty())
    GTEST_SKIP() << "../shared/models/stories260K is absent";
  std::string fp32 = compileArtifact(model, tok, "s260k-f32");
  std::string q8 = compileArtifact(model, tok, "s260k-q8_0", "--quantize q8_0");
  ASSERT_FALSE(fp32.empty() || q8.empty());
  std::vector<int> a = greedyTokens(fp32, 120), b = greedyTokens(q8, 120);
  ASSERT_EQ(a.size(), 120u);
  ASSERT_EQ(b.size(), 120u);
  size_t agree = 0;
  while (agree < a.size() && a[agree] == b[agree])
    ++agree;
  ::testing::Test::RecordProperty("greedy_tokens_agreeing", int(agree));
  EXPECT_GE(agree, 50u) << "Q8_0 leaves fp32's greedy path at token " << agree;
}

TEST(QuantizeSchemes, AnUnknownSchemeIsOneLine) {
  ModelConfig c = quantConfig(false);
  std::string model = synthesizeModel(c, "unknown-scheme");
  CommandResult r = run(quote(tool("quill-compile")) + " " + quote(model) + " --tokenizer " +
                        quote(syntheticTokenizer(c.vocabSize)) + " --quantize q5_k -o " +
                        quote(tempDir() + "/unknown-scheme.qm"));
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_EQ(r.err, "quill-compile: unknown --quantize scheme 'q5_k' (expected f16, bf16, q8_0, "
                   "q4_0 or q4_k_m)\n");
  EXPECT_FALSE(std::filesystem::exists(tempDir() + "/unknown-scheme.qm"));
}

TEST(QuantizeSchemes, BlocksAreNotQuantizedAgain) {
  ModelConfig c = quantConfig(false);
  TensorMap values = syntheticTensors(c, 31, [](float x) { return x; });
  std::string model = tempDir() + "/requantize.gguf";
  TensorMap stored;
  writeBytes(model, llamaGgufBytes(c, values, "Q8_0", 3, &stored));
  CommandResult r = run(quote(tool("quill-compile")) + " " + quote(model) + " --tokenizer " +
                        quote(syntheticTokenizer(c.vocabSize)) + " --quantize q4_0 -o " +
                        quote(tempDir() + "/requantize.qm"));
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_NE(r.err.find("is already Q8_0; --quantize takes F32, F16 or BF16 weights"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

} // namespace
} // namespace quill::test
