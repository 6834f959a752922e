// The Hugging Face importer on checkpoints the test writes itself (single
// and sharded safetensors, F32/F16/BF16, rotate-half Q/K rows), on lying
// headers, truncated and bit-flipped files, and on the real stories260K-hf
// against stories260K.bin.
#include "ModelWriters.h"

#include "compiler/Import/Llama2cCheckpoint.h"
#include "compiler/Import/ModelSource.h"
#include "compiler/Import/SafetensorsFile.h"
#include "compiler/Import/TokenizerImport.h"
#include "runtime/support/Json.h"
#include "runtime/tokenizer/Tokenizer.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <random>

using namespace quill;
using namespace quill::test;
namespace fs = std::filesystem;

namespace {

/// A fresh directory per call under the per-process scratch root.
std::string freshDir(const std::string &name) {
  fs::path dir = fs::path(scratchRoot()) / ("hf-" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

std::string shared(const std::string &relative) {
  fs::path p = fs::path(QUILL_SHARED_DIR) / "models" / relative;
  return fs::exists(p) ? p.string() : "";
}

ModelConfig tinyConfig() {
  ModelConfig c;
  c.dim = 64;
  c.hiddenDim = 96;
  c.nLayers = 2;
  c.nHeads = 4;
  c.nKvHeads = 2;
  c.vocabSize = 300;
  c.seqLen = 48;
  c.ropeTheta = 20000.0f;
  c.normEps = 1e-6f;
  c.bosId = 1;
  c.eosId = 2;
  return c;
}

float identity(float x) { return x; }

std::vector<SafetensorSpec> hfTensors(const ModelConfig &c, const TensorMap &values,
                                      const std::string &dtype, TensorMap *expected) {
  return hfTensorSpecs(c, values, dtype, expected);
}

std::string writeHfDir(const std::string &name, const ModelConfig &c,
                       const std::vector<SafetensorSpec> &specs, int shards = 1,
                       const std::string &extraConfig = "") {
  std::string dir = freshDir(name);
  writeHfCheckpoint(dir, c, specs, shards, extraConfig);
  return dir;
}

void expectOpenFails(const std::string &path, const std::string &fragment) {
  auto model = openModel(path);
  ASSERT_FALSE(model.isOk()) << path;
  EXPECT_NE(model.message().find(fragment), std::string::npos) << model.message();
  EXPECT_EQ(model.message().find('\n'), std::string::npos);
}

} // namespace

class HfCheckpoints : public ::testing::TestWithParam<std::pair<const char *, int>> {};

TEST_P(HfCheckpoints, ValuesComeBackInQuillsLayout) {
  auto [dtype, shards] = GetParam();
  ModelConfig c = tinyConfig();
  c.sharedClassifier = shards == 1;
  TensorMap expected;
  std::string dir =
      writeHfDir(std::string("ckpt-") + dtype + std::to_string(shards), c,
                 hfTensors(c, syntheticTensors(c, 21, identity), dtype, &expected), shards);
  auto model = openModel(dir);
  ASSERT_TRUE(model.isOk()) << model.message();
  const ModelConfig &got = (*model)->config();
  EXPECT_EQ(got.dim, 64);
  EXPECT_EQ(got.nKvHeads, 2);
  EXPECT_EQ(got.vocabSize, 300);
  EXPECT_EQ(got.seqLen, 48);
  EXPECT_EQ(got.ropeTheta, 20000.0f);
  EXPECT_EQ(got.normEps, 1e-6f);
  EXPECT_EQ(got.sharedClassifier, c.sharedClassifier);
  for (const auto &[name, values] : expected) {
    auto read = (*model)->readTensor(name);
    ASSERT_TRUE(read.isOk()) << read.message();
    ASSERT_EQ(*read, values) << name;
  }
  if (shards > 1) {
    EXPECT_NE((*model)->format().find(std::to_string(shards) + " shards"), std::string::npos);
  }
}

INSTANTIATE_TEST_SUITE_P(DtypesAndShards, HfCheckpoints,
                         ::testing::Values(std::pair{"F32", 1}, std::pair{"F16", 1},
                                           std::pair{"BF16", 1}, std::pair{"BF16", 3},
                                           std::pair{"F16", 2}),
                         [](const auto &info) {
                           return std::string(info.param.first) + "_" +
                                  std::to_string(info.param.second) + "files";
                         });

TEST(HfImport, RotateHalfRowsAreUnpermutedByHand) {
  // Heads of 4 rows: Quill's row 2i + j is stored at j * 2 + i, so stored
  // rows 0 1 2 3 come back as 0 2 1 3.
  ModelConfig c;
  c.dim = 8, c.hiddenDim = 8, c.nLayers = 1, c.nHeads = 2, c.nKvHeads = 1;
  c.vocabSize = 4, c.seqLen = 4;
  std::vector<SafetensorSpec> specs;
  for (const std::string &name : llama2cCanonicalNames(c)) {
    std::vector<int64_t> shape = canonicalShape(c, name);
    int64_t rows = shape.size() == 2 ? shape[0] : 1;
    int64_t cols = shape.back();
    std::vector<float> v;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t k = 0; k < cols; ++k)
        v.push_back(float(r));
    specs.push_back({hfTensorName(name), "F32", shape, f32Bytes(v)});
  }
  auto model = openModel(writeHfDir("by-hand", c, specs));
  ASSERT_TRUE(model.isOk()) << model.message();
  auto rowsOf = [&](const std::string &name) {
    std::vector<float> v = *(*model)->readTensor(name);
    std::vector<float> rows;
    for (size_t i = 0; i < v.size(); i += 8)
      rows.push_back(v[i]);
    return rows;
  };
  EXPECT_EQ(rowsOf("layers.0.wq"), (std::vector<float>{0, 2, 1, 3, 4, 6, 5, 7}));
  EXPECT_EQ(rowsOf("layers.0.wk"), (std::vector<float>{0, 2, 1, 3}));
  EXPECT_EQ(rowsOf("layers.0.wv"), (std::vector<float>{0, 1, 2, 3}));
}

TEST(HfImport, ASafetensorsFileNextToConfigJson) {
  ModelConfig c = tinyConfig();
  std::string dir =
      writeHfDir("file-path", c, hfTensors(c, syntheticTensors(c, 22, identity), "BF16", nullptr));
  auto model = openModel(dir + "/model.safetensors");
  ASSERT_TRUE(model.isOk()) << model.message();
  EXPECT_EQ((*model)->config().dim, 64);
  fs::remove(dir + "/config.json");
  expectOpenFails(dir + "/model.safetensors", "a safetensors file needs config.json next to it");
  expectOpenFails(dir, "a directory without config.json");
}

TEST(HfImport, ConfigProblems) {
  ModelConfig c = tinyConfig();
  auto specs = hfTensors(c, syntheticTensors(c, 23, identity), "F16", nullptr);
  expectOpenFails(writeHfDir("gemma", c, specs, 1,
                             "  \"model_type\": \"gemma\",\n  \"architectures\": "
                             "[\"GemmaForCausalLM\"],\n"),
                  "config.json: unsupported architecture 'GemmaForCausalLM' (model_type "
                  "'gemma'); Quill imports LlamaForCausalLM, MistralForCausalLM, "
                  "Qwen2ForCausalLM, Qwen3ForCausalLM");
  expectOpenFails(
      writeHfDir("scaling", c, specs, 1, "  \"rope_scaling\": {\"type\": \"longrope\"},\n"),
      "RoPE scaling type 'longrope' is not supported (Quill supports linear, llama3 and yarn)");
  expectOpenFails(writeHfDir("bias", c, specs, 1, "  \"attention_bias\": true,\n"),
                  "the model has no tensor 'model.layers.0.self_attn.q_proj.bias'");
  expectOpenFails(writeHfDir("mlp-bias", c, specs, 1, "  \"mlp_bias\": true,\n"),
                  "\"mlp_bias\": feed-forward biases are not supported");
  expectOpenFails(writeHfDir("heads", c, specs, 1, "  \"num_attention_heads\": 5,\n"),
                  "dim 64 is not divisible by n_heads 5");
  expectOpenFails(writeHfDir("string", c, specs, 1, "  \"hidden_size\": \"64\",\n"),
                  "\"hidden_size\" is not an integer");
  std::string dir = writeHfDir("broken-json", c, specs);
  writeText(dir + "/config.json", "{\"hidden_size\": 64,");
  expectOpenFails(dir, dir + "/config.json: invalid JSON at line 1");
  // Values the runtime could never run: refused at import, naming the file.
  for (auto [extra, fragment] : std::vector<std::pair<std::string, std::string>>{
           {"  \"eos_token_id\": -1,\n", "eos token id -1 is outside the vocabulary of 300"},
           {"  \"eos_token_id\": 300,\n", "eos token id 300 is outside the vocabulary of 300"},
           {"  \"bos_token_id\": -1,\n", "bos token id -1 is outside the vocabulary of 300"},
           {"  \"rope_theta\": 1e308,\n", "rope theta inf is not a positive float32"}}) {
    std::string bad = writeHfDir("config-values", c, specs, 1, extra);
    expectOpenFails(bad, bad + "/config.json: ");
    expectOpenFails(bad, fragment);
  }
}

TEST(HfImport, JsonFilesThatAreNotFilesAreRefused) {
  ModelConfig c = tinyConfig();
  auto specs = hfTensors(c, syntheticTensors(c, 23, identity), "F16", nullptr);
  // A directory where config.json or the shard index should be.
  std::string dir = writeHfDir("config-dir", c, specs);
  fs::remove(dir + "/config.json");
  fs::create_directory(dir + "/config.json");
  expectOpenFails(dir, dir + "/config.json: JSON file is a directory, not a file");
  dir = writeHfDir("index-dir", c, specs, 2);
  fs::remove(dir + "/model.safetensors.index.json");
  fs::create_directory(dir + "/model.safetensors.index.json");
  expectOpenFails(dir, "/model.safetensors.index.json: JSON file is a directory, not a file");
  // A link to /dev/zero is read no further than its kind.
  dir = writeHfDir("config-zero", c, specs);
  fs::remove(dir + "/config.json");
  fs::create_symlink("/dev/zero", dir + "/config.json");
  expectOpenFails(dir, dir + "/config.json: JSON file is a device, not a file");
  // Past the cap, refused before anything is read (a sparse file).
  dir = writeHfDir("config-huge", c, specs);
  fs::resize_file(dir + "/config.json", (uint64_t(256) << 20) + 1);
  expectOpenFails(dir, "/config.json: JSON file is 268435457 bytes, more than the limit of "
                       "268435456");
}

TEST(HfImport, TensorProblemsNameTheFileAndTensor) {
  ModelConfig c = tinyConfig();
  auto specs = hfTensors(c, syntheticTensors(c, 24, identity), "F16", nullptr);
  auto without = [&](const std::string &drop) {
    std::vector<SafetensorSpec> out;
    for (const auto &s : specs)
      if (s.name != drop)
        out.push_back(s);
    return out;
  };
  expectOpenFails(writeHfDir("missing", c, without("model.layers.1.mlp.up_proj.weight")),
                  "the model has no tensor "
                  "'model.layers.1.mlp.up_proj.weight' (Quill's layers.1.w3)");
  auto wrongShape = specs;
  for (auto &s : wrongShape)
    if (s.name == "model.layers.0.self_attn.k_proj.weight")
      s.shape = {16, 128};
  expectOpenFails(writeHfDir("shape", c, wrongShape),
                  "tensor 'model.layers.0.self_attn.k_proj.weight' has shape "
                  "16x128 (rows x columns), expected 32x64");
  auto wrongType = specs;
  for (auto &s : wrongType)
    if (s.name == "model.norm.weight") {
      s.dtype = "I8";
      s.data.resize(64);
    }
  expectOpenFails(writeHfDir("dtype", c, wrongType),
                  "tensor 'model.norm.weight' has dtype I8; Quill imports "
                  "F32, F16 and BF16");
  auto extra = specs;
  extra.push_back({"model.layers.0.self_attn.q_proj.bias", "F16", {64}, std::vector<uint8_t>(128)});
  expectOpenFails(writeHfDir("extra", c, extra),
                  "unexpected tensor 'model.layers.0.self_attn.q_proj.bias': the model's "
                  "configuration has no place for it");
  c.sharedClassifier = false;
  expectOpenFails(writeHfDir("untied", c, specs), "the model has no tensor 'lm_head.weight'");
}

TEST(HfImport, LyingSafetensorsHeaders) {
  ModelConfig c = tinyConfig();
  c.dim = 8, c.hiddenDim = 8, c.nLayers = 1, c.nHeads = 2, c.nKvHeads = 1;
  c.vocabSize = 4;
  std::string dir = freshDir("lies");
  writeText(dir + "/config.json", hfConfigJson(c));
  auto check = [&](const std::string &header, size_t dataBytes, const std::string &fragment) {
    writeBytes(dir + "/model.safetensors",
               safetensorsBytes(header, std::vector<uint8_t>(dataBytes)));
    expectOpenFails(dir, fragment);
    auto direct = SafetensorsFile::open(dir + "/model.safetensors");
    ASSERT_FALSE(direct.isOk());
    EXPECT_EQ(direct.message().rfind(dir + "/model.safetensors: ", 0), 0u) << direct.message();
  };
  check(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},)"
        R"("b":{"dtype":"F32","shape":[4],"data_offsets":[8,24]}})",
        24, "tensors 'a' and 'b' overlap in the data");
  check(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", 8,
        "data_offsets end at 16, past the 8 data bytes");
  check(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,12]}})", 16,
        "data_offsets span 12 bytes, but F32 of shape [4] needs 16");
  check(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[16,0]}})", 16,
        "not integers 0 <= begin <= end");
  check(R"({"a":{"dtype":"Q9","shape":[4],"data_offsets":[0,16]}})", 16, "unknown dtype 'Q9'");
  check(R"({"a":{"dtype":"F32","shape":[-4],"data_offsets":[0,16]}})", 16,
        "shape holds something other than a non-negative integer");
  check(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},)"
        R"("a":{"dtype":"F32","shape":[4],"data_offsets":[16,32]}})",
        32, "tensor 'a': appears twice");
  check(R"([1, 2])", 0, "the header is not a JSON object");
  // Bytes after the last tensor, or before the first (the header length
  // one byte short: the data would start a byte early).
  check(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", 17,
        "1 bytes after the last tensor's data");
  check(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[4,20]}})", 20,
        "the data has 4 bytes no tensor covers before tensor 'a'");
  {
    // Padded with spaces, as writers pad it to 8 bytes: one short still
    // parses as JSON.
    std::vector<uint8_t> good = safetensorsBytes(
        R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}   )", std::vector<uint8_t>(16));
    uint64_t headerBytes;
    std::memcpy(&headerBytes, good.data(), 8);
    headerBytes -= 1;
    std::memcpy(good.data(), &headerBytes, 8);
    writeBytes(dir + "/model.safetensors", good);
    expectOpenFails(dir, "1 bytes after the last tensor's data (is the header length right?)");
  }
  check(R"({"a":{"dtype":"F32","shape":[4611686018427387904, 8],)"
        R"("data_offsets":[0,16]}})",
        16, "overflows 64-bit arithmetic");
  // A header length beyond the file.
  std::vector<uint8_t> bytes = safetensorsBytes("{}", {});
  uint64_t huge = 1 << 20;
  std::memcpy(bytes.data(), &huge, 8);
  writeBytes(dir + "/model.safetensors", bytes);
  auto direct = SafetensorsFile::open(dir + "/model.safetensors");
  ASSERT_FALSE(direct.isOk());
  EXPECT_NE(direct.message().find("truncated: the header needs 1048576 bytes"), std::string::npos)
      << direct.message();
}

TEST(HfImport, ShardIndexProblems) {
  ModelConfig c = tinyConfig();
  auto specs = hfTensors(c, syntheticTensors(c, 25, identity), "BF16", nullptr);
  std::string dir = writeHfDir("index", c, specs, 2);
  ASSERT_TRUE(openModel(dir).isOk());
  fs::remove(dir + "/model-00002-of-00002.safetensors");
  expectOpenFails(dir, "model-00002-of-00002.safetensors: cannot open");
  writeText(dir + "/model.safetensors.index.json",
            R"({"weight_map": {"model.norm.weight": "../elsewhere.safetensors"}})");
  expectOpenFails(dir, "maps to something other than a file name");
  writeText(dir + "/model.safetensors.index.json",
            R"({"weight_map": {"model.norm.weight": "model-00001-of-00002.safetensors"}})");
  expectOpenFails(dir, "has no tensor 'model.norm.weight', which");
}

TEST(HfImport, EveryTruncationOfTheWeightsIsAnError) {
  ModelConfig c;
  c.dim = 8, c.hiddenDim = 8, c.nLayers = 1, c.nHeads = 2, c.nKvHeads = 1;
  c.vocabSize = 4, c.seqLen = 4;
  std::string dir = freshDir("truncate");
  writeText(dir + "/config.json", hfConfigJson(c));
  std::vector<uint8_t> good =
      safetensorsBytes(hfTensors(c, syntheticTensors(c, 26, identity), "BF16", nullptr));
  writeBytes(dir + "/model.safetensors", good);
  ASSERT_TRUE(openModel(dir).isOk());
  for (size_t size = 0; size < good.size(); ++size) {
    writeBytes(dir + "/model.safetensors", std::vector<uint8_t>(good.begin(), good.begin() + size));
    auto model = openModel(dir);
    ASSERT_FALSE(model.isOk()) << size;
    ASSERT_NE(model.message().find(dir + "/model.safetensors"), std::string::npos)
        << model.message();
    ASSERT_EQ(model.message().find('\n'), std::string::npos);
  }
}

TEST(HfImport, BitFlipsNeverCrash) {
  ModelConfig c;
  c.dim = 8, c.hiddenDim = 8, c.nLayers = 1, c.nHeads = 2, c.nKvHeads = 1;
  c.vocabSize = 4, c.seqLen = 4;
  std::string dir = freshDir("flips");
  writeText(dir + "/config.json", hfConfigJson(c));
  const std::vector<uint8_t> good =
      safetensorsBytes(hfTensors(c, syntheticTensors(c, 27, identity), "F16", nullptr));
  uint64_t headerBytes;
  std::memcpy(&headerBytes, good.data(), 8);
  std::mt19937 rng(31337);
  for (int round = 0; round < 1500; ++round) {
    std::vector<uint8_t> bad = good;
    for (int flips = 1 + int(rng() % 3); flips > 0; --flips) {
      size_t at = rng() % (8 + headerBytes); // The header is what parses.
      bad[at] ^= uint8_t(1u << (rng() % 8));
    }
    writeBytes(dir + "/model.safetensors", bad);
    auto model = openModel(dir);
    if (!model.isOk()) {
      ASSERT_EQ(model.message().find('\n'), std::string::npos);
      continue;
    }
    for (const ImportedTensor &t : (*model)->tensors())
      ASSERT_TRUE((*model)->readTensor(t.name).isOk());
  }
}

TEST(HfImport, Stories260KEqualsTheLlama2cFiles) {
  std::string hf = shared("stories260K-hf");
  std::string bin = shared("stories260K/stories260K.bin");
  std::string tok = shared("stories260K/tok512.bin");
  if (hf.empty() || bin.empty() || tok.empty())
    GTEST_SKIP() << "../shared/models/stories260K(-hf) is absent";
  auto model = openModel(hf);
  ASSERT_TRUE(model.isOk()) << model.message();
  auto checkpoint = Llama2cCheckpoint::open(bin);
  ASSERT_TRUE(checkpoint.isOk()) << checkpoint.message();
  EXPECT_EQ((*model)->config().nKvHeads, checkpoint->config().nKvHeads);
  EXPECT_EQ((*model)->config().seqLen, checkpoint->config().seqLen);
  EXPECT_TRUE((*model)->config().sharedClassifier);
  // Every tensor element for element, Q and K after un-permuting.
  ASSERT_EQ((*model)->tensors().size(), checkpoint->weights().size());
  for (const WeightTensor &w : checkpoint->weights()) {
    auto values = (*model)->readTensor(w.name);
    ASSERT_TRUE(values.isOk()) << values.message();
    ASSERT_EQ(std::memcmp(values->data(), w.data, values->size() * 4), 0) << w.name;
  }
  // tokenizer.json encodes prompts to tok512.bin's ids.
  auto bytes = artifactTokenizerBytes(**model, "");
  ASSERT_TRUE(bytes.isOk()) << bytes.message();
  auto fromJson = Tokenizer::fromBytes(bytes->data(), bytes->size(), 512, "j");
  auto reference = Tokenizer::fromFile(tok, 512);
  ASSERT_TRUE(fromJson.isOk()) << fromJson.message();
  ASSERT_TRUE(reference.isOk());
  for (const char *prompt : {"Once upon a time", "", "Hello, world! 123", "  two  spaces\nnewline",
                             "\xC3\xBCn\xC3\xAF"
                             "c\xC3\xB6"
                             "d\xC3\xA9 \xF0\x9F\x99\x82",
                             "Lily and Tom went to the park. They saw a big dog."})
    EXPECT_EQ(fromJson->encode(prompt, true, false), reference->encode(prompt, true, false))
        << prompt;
  for (int32_t id = 0; id < 512; ++id)
    ASSERT_EQ(fromJson->decode(id == 1 ? 0 : 1, id), reference->decode(id == 1 ? 0 : 1, id)) << id;
}
