// GGUF and Hugging Face checkpoints through the real tools: the stories260K
// conversions must print llama2.c's golden text with their own tokenizers
// and tokenize like tok512.bin; synthetic F16, BF16, Q8_0 and sharded files
// must give the reference forward pass's logits on the values they store;
// --info describes without compiling; bad input fails cleanly.
#include "ReferenceForward.h"
#include "TestSupport.h"
#include "tests/unit/ModelWriters.h"

#include "compiler/Import/SyntheticModel.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>

namespace fs = std::filesystem;

namespace quill::test {
namespace {

/// quill-compile MODEL [flags] -o DIR/NAME.qm, with no --tokenizer unless
/// the flags give one.
CommandResult compile(const std::string &model, const std::string &name,
                      const std::string &flags = "") {
  return run(quote(tool("quill-compile")) + " " + quote(model) + " -o " +
             quote(tempDir() + "/" + name + ".qm") + " " + flags);
}

std::string artifact(const std::string &name) { return tempDir() + "/" + name + ".qm"; }

/// The "prompt_tokens":[...] of quill-run --json for `prompt`.
std::string promptTokens(const std::string &artifactPath, const std::string &prompt) {
  CommandResult r = run(quote(tool("quill-run")) + " " + quote(artifactPath) + " -p " +
                        quote(prompt) + " -n 1 --temp 0 --json");
  EXPECT_EQ(r.exitCode, 0) << r.err;
  size_t begin = r.out.find("\"prompt_tokens\":[");
  size_t end = r.out.find(']', begin);
  return begin == std::string::npos ? "" : r.out.substr(begin, end - begin + 1);
}

void expectGolden(const std::string &artifactPath) {
  CommandResult r =
      run(quote(tool("quill-run")) + " " + quote(artifactPath) + " -n 200 --temp 0 --threads 1");
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(r.out, readFile(sharedModel("stories260K/expected-greedy-200.txt")) + "\n");
}

/// One line on stderr, starting "quill-compile: ", containing `fragment`.
class Stories260KFormats : public ::testing::TestWithParam<const char *> {};

TEST_P(Stories260KFormats, GreedyTextWithTheModelsOwnTokenizer) {
  std::string model = sharedModel(GetParam());
  if (model.empty() || sharedModel("stories260K/expected-greedy-200.txt").empty())
    GTEST_SKIP() << "../shared/models is absent";
  std::string name = fs::path(GetParam()).filename().string();
  CommandResult r = compile(model, "own-" + name);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  expectGolden(artifact("own-" + name));
}

INSTANTIATE_TEST_SUITE_P(GgufAndHuggingFace, Stories260KFormats,
                         ::testing::Values("stories260K/stories260K.gguf", "stories260K-hf"),
                         [](const auto &info) {
                           return std::string(info.param).find("gguf") != std::string::npos
                                      ? "Gguf"
                                      : "HuggingFace";
                         });

TEST(ModelFormats, PromptsTokenizeLikeTok512) {
  std::string bin = sharedModel("stories260K/stories260K.bin");
  std::string gguf = sharedModel("stories260K/stories260K.gguf");
  std::string hf = sharedModel("stories260K-hf");
  if (bin.empty() || gguf.empty() || hf.empty())
    GTEST_SKIP() << "../shared/models is absent";
  std::string tok = sharedModel("stories260K/tok512.bin");
  ASSERT_EQ(compile(bin, "p-bin", "--tokenizer " + quote(tok)).exitCode, 0);
  ASSERT_EQ(compile(gguf, "p-gguf").exitCode, 0);
  ASSERT_EQ(compile(hf, "p-hf").exitCode, 0);
  for (const char *prompt :
       {"Once upon a time", "Hello, world! 123 and 4567.", "  two  spaces\nand a newline",
        "caf\xC3\xA9 \xF0\x9F\x99\x82 ~[]|", "Lily's dog didn't want to go."}) {
    std::string expected = promptTokens(artifact("p-bin"), prompt);
    ASSERT_FALSE(expected.empty());
    EXPECT_EQ(promptTokens(artifact("p-gguf"), prompt), expected) << prompt;
    EXPECT_EQ(promptTokens(artifact("p-hf"), prompt), expected) << prompt;
  }
}

TEST(ModelFormats, TokenizerOverrides) {
  std::string bin = sharedModel("stories260K/stories260K.bin");
  std::string gguf = sharedModel("stories260K/stories260K.gguf");
  std::string hf = sharedModel("stories260K-hf");
  if (bin.empty() || gguf.empty() || hf.empty())
    GTEST_SKIP() << "../shared/models is absent";
  // A llama2.c checkpoint with a tokenizer.json, or with a GGUF's tokenizer.
  ASSERT_EQ(compile(bin, "o-json", "--tokenizer " + quote(hf + "/tokenizer.json")).exitCode, 0);
  expectGolden(artifact("o-json"));
  ASSERT_EQ(compile(bin, "o-gguf", "--tokenizer " + quote(gguf)).exitCode, 0);
  expectGolden(artifact("o-gguf"));
  // A Hugging Face checkpoint with tok512.bin instead of its own.
  ASSERT_EQ(
      compile(hf, "o-bin", "--tokenizer " + quote(sharedModel("stories260K/tok512.bin"))).exitCode,
      0);
  expectGolden(artifact("o-bin"));
  EXPECT_EQ(promptTokens(artifact("o-json"), "Once upon a time"),
            "\"prompt_tokens\":[1,403,407,261,378]");
}

TEST(ModelFormats, InfoDescribesWithoutCompiling) {
  std::string gguf = sharedModel("stories260K/stories260K.gguf");
  std::string hf = sharedModel("stories260K-hf");
  if (gguf.empty() || hf.empty())
    GTEST_SKIP() << "../shared/models is absent";
  CommandResult r = run(quote(tool("quill-compile")) + " --info " + quote(gguf));
  ASSERT_EQ(r.exitCode, 0) << r.err;
  for (const char *line :
       {"format:       GGUF v3", "architecture: llama",
        "dim 64, hidden 172, layers 5, heads 8, kv heads 4", "SentencePiece-style BPE",
        "512 tokens", "layers.0.wq              blk.0.attn_q.weight       F32  64x64"})
    EXPECT_NE(r.out.find(line), std::string::npos) << line << "\n" << r.out;
  r = run(quote(tool("quill-compile")) + " --info " + quote(hf));
  ASSERT_EQ(r.exitCode, 0) << r.err;
  for (const char *line : {"Hugging Face safetensors", "model.embed_tokens.weight",
                           "rows un-permuted from rotate-half"})
    EXPECT_NE(r.out.find(line), std::string::npos) << line << "\n" << r.out;
  r = run(quote(tool("quill-compile")) + " --info " + quote(tempDir() + "/nothing-here.gguf"));
  expectCleanFailure(r, "nothing-here.gguf");
}

//===----------------------------------------------------------------------===//
// Synthetic files: every type and layout against a llama2.c file of the
// values it stores.
//===----------------------------------------------------------------------===//

struct Variant {
  const char *name;
  bool gguf;
  const char *dtype;
  uint32_t versionOrShards;
  bool shared;
};

/// Test names and failure messages show the variant's name, not its bytes.
void PrintTo(const Variant &v, std::ostream *os) { *os << v.name; }

class SyntheticFormats : public ::testing::TestWithParam<Variant> {};

TEST_P(SyntheticFormats, LogitsMatchTheReferenceOnTheStoredValues) {
  const Variant v = GetParam();
  // Grouped-query attention over heads of 16, rows of 96 and 160 floats
  // (whole Q8_0 blocks), none a multiple of 64. The weights keep their
  // encoding (QuantizedWeightsTest.cpp checks every one), so the logits are
  // the oracle's on the values the file stores, not an fp32 artifact's bits.
  ModelConfig c;
  c.dim = 96, c.hiddenDim = 160, c.nLayers = 2, c.nHeads = 6, c.nKvHeads = 2;
  c.vocabSize = 320, c.seqLen = 32, c.sharedClassifier = v.shared;
  TensorMap values = syntheticTensors(c, 17, [](float x) { return x; });
  TensorMap stored;
  std::string model = tempDir() + "/" + v.name;
  if (v.gguf) {
    model += ".gguf";
    writeBytes(model, llamaGgufBytes(c, values, v.dtype, v.versionOrShards, &stored));
  } else {
    fs::create_directories(model);
    writeHfCheckpoint(model, c, hfTensorSpecs(c, values, v.dtype, &stored), int(v.versionOrShards));
  }
  std::string reference = tempDir() + "/" + v.name + "-reference.bin";
  writeLlama2cV1(reference, c, stored);
  std::string tok = syntheticTokenizer(c.vocabSize);
  // Q8_0's and BF16's products keep f32 inputs here: this checks the
  // stored values (QuantizedWeightsTest.cpp checks the rounded inputs).
  const std::string dtype = v.dtype;
  std::string a =
      compileArtifact(model, tok, std::string(v.name) + "-model",
                      dtype == "Q8_0" || dtype == "BF16" ? "--no-quantize-activations" : "");
  ASSERT_FALSE(a.empty());
  LoadedArtifact fromModel = load(a, 2);
  ASSERT_TRUE(fromModel.device);
  auto oracle = ReferenceModel::load(reference);
  ASSERT_TRUE(oracle.isOk()) << oracle.message();
  uint64_t state = 99;
  for (int pos = 0; pos < 24; ++pos) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    int token = pos == 0 ? 1 : int((state >> 33) % uint64_t(c.vocabSize));
    fromModel.device->step(token, pos);
    std::vector<float> expected = oracle->forward(token, pos);
    double maxDiff = 0, maxRef = 0;
    for (int i = 0; i < c.vocabSize; ++i) {
      maxDiff = std::max(maxDiff, std::fabs(double(fromModel.device->logits()[i]) - expected[i]));
      maxRef = std::max(maxRef, std::fabs(double(expected[i])));
    }
    ASSERT_LE(maxDiff / maxRef, 1e-4) << v.name << " at position " << pos;
  }
}

INSTANTIATE_TEST_SUITE_P(TypesAndLayouts, SyntheticFormats,
                         ::testing::Values(Variant{"GgufV2F16", true, "F16", 2, false},
                                           Variant{"GgufV3Q8_0", true, "Q8_0", 3, true},
                                           Variant{"GgufV3BF16", true, "BF16", 3, false},
                                           Variant{"HfBF16ThreeShards", false, "BF16", 3, false},
                                           Variant{"HfF16Tied", false, "F16", 1, true}),
                         [](const auto &info) { return std::string(info.param.name); });

/// quill-synth --format gguf writes the values of the llama2.c file of the
/// same seed, with the vocabulary of the tokenizer.bin it is given: both
/// compile to artifacts whose logits agree bit for bit and whose prompts
/// tokenize alike.
void expectSynthGgufMatchesLlama2c(bool separateClassifier) {
  const std::string name = separateClassifier ? "synth-gguf-separate" : "synth-gguf-shared";
  const std::string base = tempDir() + "/" + name;
  const std::string shape = " --dim 96 --hidden 160 --layers 2 --heads 6 --kv-heads 2"
                            " --vocab 320 --seq-len 32 --seed 7" +
                            std::string(separateClassifier ? " --separate-classifier" : "");
  CommandResult v1 = run(quote(tool("quill-synth")) + shape + " --format v1 -o " +
                         quote(base + ".bin") + " --tokenizer-out " + quote(base + "-tok.bin"));
  ASSERT_EQ(v1.exitCode, 0) << v1.err;
  CommandResult gguf = run(quote(tool("quill-synth")) + shape + " --format gguf --vocab-from " +
                           quote(base + "-tok.bin") + " -o " + quote(base + ".gguf"));
  ASSERT_EQ(gguf.exitCode, 0) << gguf.err;
  // GGUF v3's header: magic, version, tensor count (9 per layer, the
  // embedding, the final norm and a separate classifier).
  std::string file = readFile(base + ".gguf");
  ASSERT_GT(file.size(), 24u);
  EXPECT_EQ(file.substr(0, 4), "GGUF");
  uint32_t version;
  uint64_t tensors;
  std::memcpy(&version, file.data() + 4, 4);
  std::memcpy(&tensors, file.data() + 8, 8);
  EXPECT_EQ(version, 3u);
  EXPECT_EQ(tensors, 9u * 2 + 2 + (separateClassifier ? 1 : 0));

  ASSERT_EQ(
      compile(base + ".bin", name + "-v1", "--tokenizer " + quote(base + "-tok.bin")).exitCode, 0);
  ASSERT_EQ(compile(base + ".gguf", name + "-gguf").exitCode, 0);
  LoadedArtifact fromV1 = load(artifact(name + "-v1"), 1);
  LoadedArtifact fromGguf = load(artifact(name + "-gguf"), 1);
  ASSERT_TRUE(fromV1.device && fromGguf.device);
  for (int pos = 0; pos < 12; ++pos) {
    const int token = pos == 0 ? 1 : (pos * 37) % 320;
    fromV1.device->step(token, pos);
    fromGguf.device->step(token, pos);
    ASSERT_EQ(std::memcmp(fromV1.device->logits(), fromGguf.device->logits(), 320 * sizeof(float)),
              0)
        << name << " at position " << pos;
  }
  EXPECT_EQ(promptTokens(artifact(name + "-gguf"), "a b\nc"),
            promptTokens(artifact(name + "-v1"), "a b\nc"));
}

TEST(ModelFormats, SynthesizedGgufHoldsTheLlama2cValues) {
  expectSynthGgufMatchesLlama2c(true);
  expectSynthGgufMatchesLlama2c(false);
}

TEST(ModelFormats, SynthesizedGgufNeedsAWholeVocabulary) {
  const std::string base = tempDir() + "/synth-gguf-short";
  ASSERT_EQ(run(quote(tool("quill-synth")) + " --shape tiny --format v1 -o " +
                quote(base + ".bin") + " --tokenizer-out " + quote(base + "-tok.bin"))
                .exitCode,
            0);
  // The tiny shape's 512 pieces cannot serve a vocabulary of 600.
  CommandResult r =
      run(quote(tool("quill-synth")) + " --shape tiny --vocab 600 --format gguf" +
          " --vocab-from " + quote(base + "-tok.bin") + " -o " + quote(base + ".gguf"));
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_NE(r.err.find("tokenizer truncated in token 512 of 600"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(base + ".gguf"));
}

//===----------------------------------------------------------------------===//
// Bad input through quill-compile: one line naming the file, exit 1.
//===----------------------------------------------------------------------===//

TEST(ModelFormatsBadInput, BrokenGgufAndSafetensors) {
  ModelConfig c;
  c.dim = 64, c.hiddenDim = 96, c.nLayers = 1, c.nHeads = 4, c.nKvHeads = 2;
  c.vocabSize = 300, c.seqLen = 16;
  TensorMap values = syntheticTensors(c, 5, [](float x) { return x; });
  std::string tok = quote(syntheticTokenizer(c.vocabSize));

  std::vector<uint8_t> gguf = llamaGgufBytes(
      c, values, "F16", 3, nullptr, [](GgufWriter &w) { w.addU32("llama.vocab_size", 300); });
  std::string truncated = tempDir() + "/truncated.gguf";
  writeBytes(truncated, std::vector<uint8_t>(gguf.begin(), gguf.begin() + gguf.size() / 2));
  expectCleanFailure(compile(truncated, "bad", "--tokenizer " + tok), truncated + ": tensor '");
  std::string version = tempDir() + "/version.gguf";
  std::vector<uint8_t> v9 = gguf;
  v9[4] = 9;
  writeBytes(version, v9);
  expectCleanFailure(compile(version, "bad", "--tokenizer " + tok),
                     version + ": unsupported GGUF version 9");
  GgufWriter phi;
  phi.addString("general.architecture", "phi3");
  std::string arch = tempDir() + "/phi3.gguf";
  writeBytes(arch, phi.bytes());
  expectCleanFailure(compile(arch, "bad", "--tokenizer " + tok),
                     arch + ": unsupported architecture 'phi3'");

  std::string dir = tempDir() + "/lying-hf";
  fs::create_directories(dir);
  writeHfCheckpoint(dir, c, hfTensorSpecs(c, values, "BF16", nullptr));
  writeBytes(dir + "/model.safetensors",
             safetensorsBytes(R"({"model.norm.weight":{"dtype":"F32","shape":[64],)"
                              R"("data_offsets":[0,256]},"model.embed_tokens.weight":)"
                              R"({"dtype":"F32","shape":[300,64],"data_offsets":[128,76928]}})",
                              std::vector<uint8_t>(76928)));
  expectCleanFailure(compile(dir, "bad", "--tokenizer " + tok),
                     dir + "/model.safetensors: tensors ");
}

TEST(ModelFormatsBadInput, UnsupportedTokenizerJsonNeedsAnOverride) {
  ModelConfig c;
  c.dim = 64, c.hiddenDim = 96, c.nLayers = 1, c.nHeads = 4, c.nKvHeads = 2;
  c.vocabSize = 300, c.seqLen = 16, c.sharedClassifier = true;
  std::string dir = tempDir() + "/unigram-hf";
  fs::create_directories(dir);
  writeHfCheckpoint(
      dir, c, hfTensorSpecs(c, syntheticTensors(c, 6, [](float x) { return x; }), "F16", nullptr));
  writeText(dir + "/tokenizer.json", R"({"model": {"type": "Unigram", "vocab": [["a", 0.0]]}})");
  expectCleanFailure(compile(dir, "unigram"), dir +
                                                  "/tokenizer.json: tokenizer model type 'Unigram' "
                                                  "is not supported (Quill reads BPE)");
  // --emit needs no tokenizer, and --tokenizer replaces the model's own.
  EXPECT_EQ(run(quote(tool("quill-compile")) + " " + quote(dir) + " --emit=quill").exitCode, 0);
  EXPECT_EQ(
      compile(dir, "unigram-override", "--tokenizer " + quote(syntheticTokenizer(300))).exitCode,
      0);
  fs::remove(dir + "/tokenizer.json");
  expectCleanFailure(compile(dir, "no-tokenizer"), "no tokenizer.json");
}

} // namespace
} // namespace quill::test
