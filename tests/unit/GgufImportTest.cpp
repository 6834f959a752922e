// The GGUF importer on synthetic files the test writes itself (versions 2
// and 3; F32, F16, BF16 and Q8_0 tensors; llama and gpt2 tokenizers), on
// broken, truncated and bit-flipped files, and on the real stories260K.gguf
// against stories260K.bin and tok512.bin.
#include "ModelWriters.h"

#include "compiler/Import/GgufFile.h"
#include "compiler/Import/Llama2cCheckpoint.h"
#include "compiler/Import/ModelSource.h"
#include "compiler/Import/TokenizerImport.h"
#include "runtime/tokenizer/Tokenizer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <random>

using namespace quill;
using namespace quill::test;
namespace fs = std::filesystem;

namespace {

std::string scratch(const std::string &name) { return scratchRoot() + "/gguf-" + name; }

std::string shared(const std::string &relative) {
  fs::path p = fs::path(QUILL_SHARED_DIR) / "models" / relative;
  return fs::exists(p) ? p.string() : "";
}

ModelConfig tinyConfig() {
  ModelConfig c;
  c.dim = 64;
  c.hiddenDim = 96; // Rows of 64 and 96 floats: whole Q8_0 blocks.
  c.nLayers = 2;
  c.nHeads = 4;
  c.nKvHeads = 2;
  c.vocabSize = 264;
  c.seqLen = 32;
  c.ropeTheta = 500000.0f;
  c.normEps = 1e-6f;
  return c;
}

/// <unk> <s> </s>, the byte tokens, then "▁" "a" "b" "▁a" "▁ab" (264).
void addLlamaTokenizer(GgufWriter &w) {
  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
  std::vector<float> scores = {0, 0, 0};
  std::vector<int32_t> types = {2, 3, 3};
  const char *hex = "0123456789ABCDEF";
  for (int b = 0; b < 256; ++b) {
    tokens.push_back(std::string("<0x") + hex[b / 16] + hex[b % 16] + ">");
    scores.push_back(0);
    types.push_back(6);
  }
  for (auto [piece, score] : std::vector<std::pair<std::string, float>>{{"\xE2\x96\x81", -10},
                                                                        {"a", -11},
                                                                        {"b", -12},
                                                                        {"\xE2\x96\x81"
                                                                         "a",
                                                                         -1},
                                                                        {"\xE2\x96\x81"
                                                                         "ab",
                                                                         -2}}) {
    tokens.push_back(piece);
    scores.push_back(score);
    types.push_back(1);
  }
  w.addString("tokenizer.ggml.model", "llama");
  w.addStrings("tokenizer.ggml.tokens", tokens);
  w.addF32s("tokenizer.ggml.scores", scores);
  w.addI32s("tokenizer.ggml.token_type", types);
  w.addU32("tokenizer.ggml.bos_token_id", 1);
  w.addU32("tokenizer.ggml.eos_token_id", 2);
}

/// What a GGUF of `values` holds and what import must give back.
struct BuiltGguf {
  std::vector<uint8_t> bytes;
  TensorMap expected; ///< Canonical name -> the stored values as fp32.
};

/// A llama GGUF of `values` with the tokenizer above: matrices and the
/// embedding as `type`, norms F32.
BuiltGguf llamaGguf(const ModelConfig &c, const TensorMap &values, uint32_t type,
                    uint32_t version = 3, void (*extra)(GgufWriter &) = nullptr) {
  const char *typeName = type == kGgmlF16    ? "F16"
                         : type == kGgmlBF16 ? "BF16"
                         : type == kGgmlQ8_0 ? "Q8_0"
                                             : "F32";
  BuiltGguf built;
  built.bytes = llamaGgufBytes(c, values, typeName, version, &built.expected, [&](GgufWriter &w) {
    addLlamaTokenizer(w);
    if (extra)
      extra(w);
  });
  return built;
}

float identity(float x) { return x; }

ErrorOr<std::unique_ptr<ModelSource>> openBytes(const std::string &name,
                                                const std::vector<uint8_t> &b) {
  std::string path = scratch(name);
  writeBytes(path, b);
  return openModel(path);
}

void expectFailure(const std::string &name, const std::vector<uint8_t> &bytes,
                   const std::string &fragment) {
  auto model = openBytes(name, bytes);
  ASSERT_FALSE(model.isOk()) << name;
  EXPECT_EQ(model.message().rfind(scratch(name) + ": ", 0), 0u) << model.message();
  EXPECT_NE(model.message().find(fragment), std::string::npos) << model.message();
  EXPECT_EQ(model.message().find('\n'), std::string::npos);
}

} // namespace

class GgufTensorTypes : public ::testing::TestWithParam<std::pair<uint32_t, uint32_t>> {};

TEST_P(GgufTensorTypes, ValuesComeBackAsStored) {
  auto [type, version] = GetParam();
  ModelConfig c = tinyConfig();
  c.sharedClassifier = false;
  BuiltGguf built = llamaGguf(c, syntheticTensors(c, 3, identity), type, version);
  auto model = openBytes("types.gguf", built.bytes);
  ASSERT_TRUE(model.isOk()) << model.message();
  const ModelConfig &got = (*model)->config();
  EXPECT_EQ(got.dim, 64);
  EXPECT_EQ(got.hiddenDim, 96);
  EXPECT_EQ(got.nLayers, 2);
  EXPECT_EQ(got.nKvHeads, 2);
  EXPECT_EQ(got.vocabSize, 264); // From the tokenizer's tokens.
  EXPECT_EQ(got.ropeTheta, 500000.0f);
  EXPECT_EQ(got.normEps, 1e-6f);
  EXPECT_FALSE(got.sharedClassifier);
  EXPECT_EQ((*model)->format(), "GGUF v" + std::to_string(version));
  ASSERT_EQ((*model)->tensors().size(), llama2cCanonicalNames(c).size());
  for (const auto &[name, expected] : built.expected) {
    auto values = (*model)->readTensor(name);
    ASSERT_TRUE(values.isOk()) << values.message();
    ASSERT_EQ(*values, expected) << name;
  }
}

std::string typeCaseName(const ::testing::TestParamInfo<std::pair<uint32_t, uint32_t>> &info) {
  uint32_t type = info.param.first;
  std::string name = type == kGgmlF32    ? "F32"
                     : type == kGgmlF16  ? "F16"
                     : type == kGgmlBF16 ? "BF16"
                                         : "Q8_0";
  return name + "_v" + std::to_string(info.param.second);
}

INSTANTIATE_TEST_SUITE_P(
    AllTypes, GgufTensorTypes,
    ::testing::Values(std::pair{uint32_t(kGgmlF32), 3u}, std::pair{uint32_t(kGgmlF16), 3u},
                      std::pair{uint32_t(kGgmlF16), 2u}, std::pair{uint32_t(kGgmlBF16), 3u},
                      std::pair{uint32_t(kGgmlQ8_0), 2u}, std::pair{uint32_t(kGgmlQ8_0), 3u}),
    typeCaseName);

TEST(GgufImport, KnownBitPatterns) {
  // An embedding of F16 ones (0x3C00) with -2 (0xC000) first, and Q8_0
  // blocks of scale 0.5 (0x3800) holding q = (i % 32) - 16.
  ModelConfig c = tinyConfig();
  TensorMap values = syntheticTensors(c, 4, identity);
  GgufWriter w;
  w.addString("general.architecture", "llama");
  w.addU32("llama.embedding_length", 64);
  w.addU32("llama.block_count", 2);
  w.addU32("llama.feed_forward_length", 96);
  w.addU32("llama.attention.head_count", 4);
  w.addU32("llama.attention.head_count_kv", 2);
  w.addU32("llama.context_length", 32);
  w.addU32("llama.vocab_size", 264);
  for (const std::string &name : llama2cCanonicalNames(c)) {
    std::vector<int64_t> shape = canonicalShape(c, name);
    std::vector<uint64_t> dims(shape.rbegin(), shape.rend());
    if (name == "tok_embeddings") {
      ByteBuilder b;
      for (int64_t i = 0; i < 264 * 64; ++i)
        b.put<uint16_t>(i == 0 ? 0xC000 : 0x3C00);
      w.addTensor(ggufTensorName(name), dims, kGgmlF16, b.bytes);
    } else if (name == "layers.0.wq") {
      ByteBuilder b;
      for (int block = 0; block < 64 * 64 / 32; ++block) {
        b.put<uint16_t>(0x3800);
        for (int i = 0; i < 32; ++i)
          b.put<int8_t>(int8_t(i - 16));
      }
      w.addTensor(ggufTensorName(name), dims, kGgmlQ8_0, b.bytes);
    } else {
      w.addTensor(ggufTensorName(name), dims, kGgmlF32, f32Bytes(values.at(name)));
    }
  }
  auto model = openBytes("bits.gguf", w.bytes());
  ASSERT_TRUE(model.isOk()) << model.message();
  auto embedding = (*model)->readTensor("tok_embeddings");
  ASSERT_TRUE(embedding.isOk());
  EXPECT_EQ((*embedding)[0], -2.0f);
  EXPECT_EQ((*embedding)[1], 1.0f);
  EXPECT_EQ(embedding->back(), 1.0f);
  auto wq = (*model)->readTensor("layers.0.wq");
  ASSERT_TRUE(wq.isOk());
  for (size_t i = 0; i < wq->size(); ++i)
    ASSERT_EQ((*wq)[i], 0.5f * float(int(i % 32) - 16)) << i;
  // Defaults where the metadata is silent.
  EXPECT_EQ((*model)->config().ropeTheta, 10000.0f);
  EXPECT_EQ((*model)->config().normEps, 1e-5f);
  EXPECT_TRUE((*model)->config().sharedClassifier); // No output.weight.
  EXPECT_FALSE((*model)->tokenizer().isOk());
}

TEST(GgufImport, AlignmentFromTheMetadata) {
  ModelConfig c = tinyConfig();
  BuiltGguf built = llamaGguf(c, syntheticTensors(c, 5, identity), kGgmlF16, 3,
                              [](GgufWriter &w) { w.setAlignment(64); });
  // The writer aligned the data to 64 only because the key says so.
  writeBytes(scratch("a64.gguf"), built.bytes);
  auto file = GgufFile::open(scratch("a64.gguf"));
  ASSERT_TRUE(file.isOk()) << file.message();
  EXPECT_EQ(file->alignment(), 64u);
  auto model = openModel(scratch("a64.gguf"));
  ASSERT_TRUE(model.isOk()) << model.message();
  EXPECT_EQ(*(*model)->readTensor("layers.1.w2"), built.expected.at("layers.1.w2"));
}

TEST(GgufImport, LlamaTokenizerBecomesATokenizerBin) {
  ModelConfig c = tinyConfig();
  BuiltGguf built = llamaGguf(c, syntheticTensors(c, 6, identity), kGgmlF16);
  auto model = openBytes("tok.gguf", built.bytes);
  ASSERT_TRUE(model.isOk()) << model.message();
  auto data = (*model)->tokenizer();
  ASSERT_TRUE(data.isOk()) << data.message();
  EXPECT_TRUE(fitsLlama2cLayout(*data));
  auto bytes = artifactTokenizerBytes(**model, "");
  ASSERT_TRUE(bytes.isOk()) << bytes.message();
  // Exactly what llama2.c's exporter writes for this vocabulary.
  ByteBuilder expected;
  expected.put<int32_t>(6);
  auto piece = [&](const std::string &p, float score) {
    expected.put(score).put<int32_t>(int32_t(p.size())).append(p);
  };
  piece("<unk>", 0), piece("\n<s>\n", 0), piece("\n</s>\n", 0);
  const char *hex = "0123456789ABCDEF";
  for (int b = 0; b < 256; ++b)
    piece(std::string("<0x") + hex[b / 16] + hex[b % 16] + ">", 0);
  piece(" ", -10), piece("a", -11), piece("b", -12), piece(" a", -1);
  piece(" ab", -2);
  EXPECT_EQ(*bytes, expected.bytes);
  auto tok = Tokenizer::fromBytes(bytes->data(), bytes->size(), 264, "t");
  ASSERT_TRUE(tok.isOk());
  EXPECT_EQ(tok->encode("ab a", true, false), (std::vector<int32_t>{1, 263, 262}));
}

TEST(GgufImport, Gpt2TokenizerIsByteLevelBpe) {
  SmallByteLevelVocab vocab = smallByteLevelVocab();
  ModelConfig c = tinyConfig();
  c.vocabSize = 272; // The tokenizer's 269 tokens, padded as embeddings are.
  BuiltGguf built = llamaGguf(c, syntheticTensors(c, 7, identity), kGgmlF16, 3,
                              [](GgufWriter &w) { w.addU32("llama.vocab_size", 272); });
  auto model = openBytes("for-gpt2.gguf", built.bytes);
  ASSERT_TRUE(model.isOk()) << model.message();

  // A GGUF holding only a gpt2 tokenizer, given as --tokenizer.
  GgufWriter t;
  std::vector<std::string> tokens;
  std::vector<int32_t> types;
  for (size_t id = 0; id < vocab.pieces.size(); ++id) {
    bool control = std::find(vocab.controlIds.begin(), vocab.controlIds.end(), int(id)) !=
                   vocab.controlIds.end();
    tokens.push_back(control ? vocab.pieces[id] : gpt2Printable(vocab.pieces[id]));
    types.push_back(control ? 3 : 1);
  }
  std::vector<std::string> merges;
  for (auto [left, right] : vocab.merges)
    merges.push_back(gpt2Printable(left) + " " + gpt2Printable(right));
  t.addString("tokenizer.ggml.model", "gpt2");
  t.addString("tokenizer.ggml.pre", "llama-bpe");
  t.addStrings("tokenizer.ggml.tokens", tokens);
  t.addI32s("tokenizer.ggml.token_type", types);
  t.addStrings("tokenizer.ggml.merges", merges);
  t.addU32("tokenizer.ggml.bos_token_id", 266);
  t.addU32("tokenizer.ggml.eos_token_id", 265);
  const std::string tokPath = scratch("gpt2-tok.gguf");
  writeBytes(tokPath, t.bytes());

  auto data = loadTokenizerFile(tokPath, c);
  ASSERT_TRUE(data.isOk()) << data.message();
  EXPECT_EQ(data->kind, TokenizerKind::ByteLevelBpe);
  EXPECT_EQ(data->preTokenizer, std::vector<PreTokenizeStep>{PreTokenizeStep::Llama3});
  EXPECT_EQ(data->pieces.size(), size_t(c.vocabSize));
  EXPECT_EQ(data->pieces[260], " w"); // Ġw back to raw bytes.
  auto bytes = artifactTokenizerBytes(**model, tokPath);
  ASSERT_TRUE(bytes.isOk()) << bytes.message();
  auto tok = Tokenizer::fromBytes(bytes->data(), bytes->size(), c.vocabSize, "t");
  ASSERT_TRUE(tok.isOk()) << tok.message();
  EXPECT_EQ(tok->encode("hello world", true, false), (std::vector<int32_t>{266, 259, 264}));
  EXPECT_EQ(tok->encode("hel<|end|>", false, false), (std::vector<int32_t>{256, 'l', 265}));
  EXPECT_EQ(tok->decode(266, 264), " world");
}

TEST(GgufImport, BadFilesAreOneLineErrors) {
  ModelConfig c = tinyConfig();
  TensorMap values = syntheticTensors(c, 8, identity);
  std::vector<uint8_t> good = llamaGguf(c, values, kGgmlF16).bytes;

  auto withVersion = [&](uint32_t version) {
    std::vector<uint8_t> b = good;
    std::memcpy(b.data() + 4, &version, 4);
    return b;
  };
  expectFailure("v1.gguf", withVersion(1), "GGUF version 1 is not supported");
  expectFailure("v4.gguf", withVersion(4), "unsupported GGUF version 4 (Quill reads 2 and 3)");
  expectFailure("be.gguf", withVersion(0x03000000), "big-endian GGUF is not supported");

  GgufWriter gemma;
  gemma.addString("general.architecture", "gemma");
  expectFailure("arch.gguf", gemma.bytes(),
                "unsupported architecture 'gemma' (Quill imports llama, qwen2 and qwen3)");
  expectFailure(
      "moe.gguf",
      llamaGguf(c, values, kGgmlF16, 3, [](GgufWriter &w) { w.addU32("llama.expert_count", 8); })
          .bytes,
      "mixture-of-experts");
  expectFailure(
      "align.gguf",
      llamaGguf(c, values, kGgmlF16, 3, [](GgufWriter &w) { w.addU32("general.alignment", 3); })
          .bytes,
      "general.alignment must be a uint32 power of two");
  expectFailure(
      "dup.gguf",
      llamaGguf(c, values, kGgmlF16, 3, [](GgufWriter &w) { w.addU32("llama.block_count", 2); })
          .bytes,
      "metadata key 'llama.block_count' appears twice");
  expectFailure("headdim.gguf",
                llamaGguf(c, values, kGgmlF16, 3,
                          [](GgufWriter &w) { w.addU32("llama.attention.key_length", 8); })
                    .bytes,
                "'llama.rope.dimension_count' is 16, but Quill needs the head size 8 (a rotary "
                "embedding over part of each head is not supported)");
}

TEST(GgufImport, TensorProblemsNameTheTensor) {
  ModelConfig c = tinyConfig();
  TensorMap values = syntheticTensors(c, 9, identity);
  // Rebuilds the model with each tensor passed through `edit` (false
  // drops it), and optionally a Q bias without its K and V biases.
  auto variant = [&](auto edit, bool addBias = false, const char *epsilonType = "f32") {
    GgufWriter w;
    w.addString("general.architecture", "llama");
    // 1e-5 as a float32, or its bits stored as an int32 (a writer's bug).
    if (std::string(epsilonType) == "f32")
      w.addF32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
    else
      w.addRaw("llama.attention.layer_norm_rms_epsilon", /*int32*/ 5, f32Bytes({1e-5f}));
    w.addU32("llama.embedding_length", 64);
    w.addU32("llama.block_count", 2);
    w.addU32("llama.feed_forward_length", 96);
    w.addU32("llama.attention.head_count", 4);
    w.addU32("llama.attention.head_count_kv", 2);
    w.addU32("llama.context_length", 32);
    w.addU32("llama.vocab_size", 264);
    for (const std::string &name : llama2cCanonicalNames(c)) {
      std::vector<int64_t> shape = canonicalShape(c, name);
      std::vector<uint64_t> dims(shape.rbegin(), shape.rend());
      std::string gguf = ggufTensorName(name);
      uint32_t type = kGgmlF32;
      std::vector<uint8_t> data = f32Bytes(values.at(name));
      if (edit(gguf, dims, type, data))
        w.addTensor(gguf, dims, type, data);
    }
    if (addBias)
      w.addTensor("blk.0.attn_q.bias", {64}, kGgmlF32, std::vector<uint8_t>(256));
    return w.bytes();
  };
  auto keep = [](const std::string &, std::vector<uint64_t> &, uint32_t &, std::vector<uint8_t> &) {
    return true;
  };
  EXPECT_TRUE(openBytes("variant.gguf", variant(keep)).isOk());
  expectFailure("missing.gguf",
                variant([](const std::string &n, std::vector<uint64_t> &, uint32_t &,
                           std::vector<uint8_t> &) { return n != "blk.1.ffn_up.weight"; }),
                "the model has no tensor 'blk.1.ffn_up.weight' (Quill's "
                "layers.1.w3)");
  expectFailure("shape.gguf",
                variant([](const std::string &n, std::vector<uint64_t> &dims, uint32_t &,
                           std::vector<uint8_t> &data) {
                  if (n == "blk.0.attn_k.weight") {
                    dims = {64, 64};
                    data.resize(64 * 64 * 4);
                  }
                  return true;
                }),
                "tensor 'blk.0.attn_k.weight' has shape 64x64 (rows x "
                "columns), expected 32x64");
  expectFailure("type.gguf",
                variant([](const std::string &n, std::vector<uint64_t> &, uint32_t &type,
                           std::vector<uint8_t> &data) {
                  if (n == "blk.0.ffn_down.weight") {
                    type = 13; // Q5_K: a K-quant Quill does not read.
                    data.resize(176 * 43);
                  }
                  return true;
                }),
                "tensor 'blk.0.ffn_down.weight' has type Q5_K; Quill imports "
                "F32, F16, BF16, Q8_0, Q4_0, Q4_K and Q6_K");
  // 64 x 64 weights are whole 256-weight blocks in all, but not row by row.
  expectFailure("partial-rows.gguf",
                variant([](const std::string &n, std::vector<uint64_t> &, uint32_t &type,
                           std::vector<uint8_t> &data) {
                  if (n == "blk.0.attn_q.weight") {
                    type = kGgmlQ4_K;
                    data.resize(144 * 16);
                  }
                  return true;
                }),
                "tensor 'blk.0.attn_q.weight' of 4096 elements is not rows of whole Q4_K "
                "blocks");
  expectFailure("bias.gguf", variant(keep, /*addBias=*/true),
                "the model has no tensor 'blk.0.attn_k.bias' (Quill's layers.0.bk)");
  expectFailure("past-end.gguf",
                variant([](const std::string &n, std::vector<uint64_t> &dims, uint32_t &,
                           std::vector<uint8_t> &data) {
                  // The last tensor claims more rows than the file holds.
                  if (n == "output_norm.weight")
                    dims = {64 * 1024};
                  (void)data;
                  return true;
                }),
                "extends past the end of the file");
  // A type of fewer bytes than the data holds: the size must be exact, up
  // to the next tensor or (for the last) the file's end.
  auto relabel = [&](const std::string &tensor, uint32_t relabelled) {
    return variant(
        [&](const std::string &n, std::vector<uint64_t> &, uint32_t &type, std::vector<uint8_t> &) {
          if (n == tensor)
            type = relabelled;
          return true;
        });
  };
  for (uint32_t relabelled : {kGgmlBF16, kGgmlQ8_0})
    expectFailure("relabelled.gguf", relabel("blk.1.attn_q.weight", relabelled),
                  "tensor 'blk.1.attn_q.weight' is ");
  expectFailure("relabelled-f16.gguf", relabel("blk.1.attn_q.weight", kGgmlF16),
                "is 8192 bytes as F16 64x64, but 16384 bytes lie before tensor '");
  expectFailure("relabelled-last.gguf", relabel("output_norm.weight", kGgmlF16),
                "bytes lie before the file end: its type or shape is wrong");
  expectFailure("int-epsilon.gguf", variant(keep, false, "i32"),
                "metadata 'llama.attention.layer_norm_rms_epsilon' is a int32, expected a float32");
}

/// Points tensor `name`'s data at `offset`, in the bytes of a GGUF file.
void setTensorOffset(std::vector<uint8_t> &bytes, const std::string &name, uint64_t offset) {
  std::vector<uint8_t> key(8 + name.size());
  uint64_t length = name.size();
  std::memcpy(key.data(), &length, 8);
  std::memcpy(key.data() + 8, name.data(), name.size());
  auto at = std::search(bytes.begin(), bytes.end(), key.begin(), key.end());
  ASSERT_NE(at, bytes.end()) << name;
  size_t pos = size_t(at - bytes.begin()) + key.size();
  uint32_t dims;
  std::memcpy(&dims, bytes.data() + pos, 4);
  std::memcpy(bytes.data() + pos + 4 + 8 * dims + 4, &offset, 8);
}

TEST(GgufImport, OverlappingTensorDataIsAnError) {
  ModelConfig c = tinyConfig();
  TensorMap values = syntheticTensors(c, 10, identity);
  BuiltGguf built = llamaGguf(c, values, kGgmlF32);
  // blk.0.attn_k.weight read from where blk.0.attn_q.weight's rows are.
  std::vector<uint8_t> same = built.bytes;
  setTensorOffset(same, "blk.0.attn_k.weight", 0);
  expectFailure("overlap.gguf", same, "start at the same data offset 0");
  std::vector<uint8_t> inside = built.bytes;
  setTensorOffset(inside, "blk.0.attn_k.weight", 32);
  expectFailure("overlap-inside.gguf", inside, "overlaps tensor");
}

TEST(GgufImport, EveryTruncationIsAnError) {
  ModelConfig c = tinyConfig();
  c.dim = 32, c.hiddenDim = 32, c.nLayers = 1, c.nHeads = 2, c.nKvHeads = 1;
  c.vocabSize = 264;
  std::vector<uint8_t> good = llamaGguf(c, syntheticTensors(c, 10, identity), kGgmlQ8_0).bytes;
  // The writer pads after the last tensor too; the file ends at its data.
  while (good.back() == 0)
    good.pop_back();
  const std::string path = scratch("cut.gguf");
  for (size_t size = 0; size < good.size(); ++size) {
    writeBytes(path, std::vector<uint8_t>(good.begin(), good.begin() + size));
    auto model = openModel(path);
    ASSERT_FALSE(model.isOk()) << "prefix of " << size << " bytes opened";
    ASSERT_EQ(model.message().find('\n'), std::string::npos);
    ASSERT_NE(model.message().find(path), std::string::npos) << model.message();
  }
}

TEST(GgufImport, BitFlipsNeverCrash) {
  ModelConfig c = tinyConfig();
  c.dim = 32, c.hiddenDim = 32, c.nLayers = 1, c.nHeads = 2, c.nKvHeads = 1;
  const std::vector<uint8_t> good =
      llamaGguf(c, syntheticTensors(c, 11, identity), kGgmlQ8_0).bytes;
  const std::string path = scratch("flip.gguf");
  std::mt19937 rng(6);
  int opened = 0;
  for (int round = 0; round < 1500; ++round) {
    std::vector<uint8_t> bad = good;
    for (int flips = 1 + int(rng() % 3); flips > 0; --flips) {
      // Most flips land in the header and metadata, where parsing happens.
      size_t at = rng() % 4 ? rng() % std::min<size_t>(bad.size(), 8192) : rng() % bad.size();
      bad[at] ^= uint8_t(1u << (rng() % 8));
    }
    writeBytes(path, bad);
    auto model = openModel(path);
    if (!model.isOk()) {
      ASSERT_EQ(model.message().find('\n'), std::string::npos);
      continue;
    }
    ++opened;
    for (const ImportedTensor &t : (*model)->tensors())
      ASSERT_TRUE((*model)->readTensor(t.name).isOk());
    auto tokenizer = artifactTokenizerBytes(**model, "");
    (void)tokenizer;
  }
  RecordProperty("opened", opened);
}

TEST(GgufImport, Stories260KEqualsTheLlama2cFiles) {
  std::string gguf = shared("stories260K/stories260K.gguf");
  std::string bin = shared("stories260K/stories260K.bin");
  std::string tok = shared("stories260K/tok512.bin");
  if (gguf.empty() || bin.empty() || tok.empty())
    GTEST_SKIP() << "../shared/models/stories260K is absent";
  auto model = openModel(gguf);
  ASSERT_TRUE(model.isOk()) << model.message();
  auto checkpoint = Llama2cCheckpoint::open(bin);
  ASSERT_TRUE(checkpoint.isOk()) << checkpoint.message();
  const ModelConfig &a = (*model)->config(), &b = checkpoint->config();
  EXPECT_EQ(a.dim, b.dim);
  EXPECT_EQ(a.hiddenDim, b.hiddenDim);
  EXPECT_EQ(a.nLayers, b.nLayers);
  EXPECT_EQ(a.nHeads, b.nHeads);
  EXPECT_EQ(a.nKvHeads, b.nKvHeads);
  EXPECT_EQ(a.vocabSize, b.vocabSize);
  EXPECT_EQ(a.seqLen, b.seqLen);
  EXPECT_EQ(a.sharedClassifier, b.sharedClassifier);
  EXPECT_NEAR(a.normEps, b.normEps, 1e-12);
  // Every tensor, element for element: GGUF's Q/K rows are llama2.c's.
  ASSERT_EQ((*model)->tensors().size(), checkpoint->weights().size());
  for (const WeightTensor &w : checkpoint->weights()) {
    auto values = (*model)->readTensor(w.name);
    ASSERT_TRUE(values.isOk()) << values.message();
    ASSERT_EQ(values->size(), size_t(w.numElements()));
    ASSERT_EQ(std::memcmp(values->data(), w.data, values->size() * 4), 0) << w.name;
  }
  // The tokenizer in the metadata is tok512.bin, byte for byte.
  auto bytes = artifactTokenizerBytes(**model, "");
  ASSERT_TRUE(bytes.isOk()) << bytes.message();
  EXPECT_EQ(*bytes, readBytes(tok));
}
