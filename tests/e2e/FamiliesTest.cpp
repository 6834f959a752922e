// The Llama family beyond Llama 2, from GGUF and from Hugging Face: Llama 3
// (scaled RoPE, several end tokens), Qwen2 (Q/K/V biases, YaRN, no BOS)
// and Qwen3 (per-head q/k norms, heads wider than dim / heads, linear RoPE
// scaling). Synthetic models of odd shapes with grouped-query attention:
// every step's logits against the reference forward pass extended with each
// family's published math, the same tokens from both formats, and greedy
// decoding that stops at every declared end token.
#include "ReferenceForward.h"
#include "StepChecks.h"
#include "TestSupport.h"
#include "compiler/Import/Llama2cCheckpoint.h"
#include "compiler/Import/ModelSource.h"
#include "tests/unit/ModelWriters.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <random>

namespace quill::test {
namespace {

namespace fs = std::filesystem;

constexpr double kPi = 3.14159265358979323846;

//===----------------------------------------------------------------------===//
// RoPE scalings, from their published definitions (not Quill's code).
//===----------------------------------------------------------------------===//

std::vector<double> baseFrequencies(double theta, int headDim) {
  std::vector<double> f;
  for (int i = 0; i < headDim / 2; ++i)
    f.push_back(std::pow(theta, -2.0 * i / headDim));
  return f;
}

/// Meta's apply_scaling (Llama 3.1 reference code).
std::vector<double> llama3Frequencies(double theta, int headDim, double factor, double low,
                                      double high, double oldContext) {
  std::vector<double> out;
  for (double freq : baseFrequencies(theta, headDim)) {
    double wavelen = 2 * kPi / freq;
    if (wavelen < oldContext / high) {
      out.push_back(freq);
    } else if (wavelen > oldContext / low) {
      out.push_back(freq / factor);
    } else {
      double smooth = (oldContext / wavelen - low) / (high - low);
      out.push_back((1 - smooth) * freq / factor + smooth * freq);
    }
  }
  return out;
}

/// YaRN (Peng et al. 2023) as transformers' _compute_yarn_parameters writes
/// it: beta_fast 32, beta_slow 1, truncated correction range.
std::vector<double> yarnFrequencies(double theta, int headDim, double factor, double original) {
  auto correction = [&](double rotations) {
    return headDim * std::log(original / (rotations * 2 * kPi)) / (2 * std::log(theta));
  };
  double low = std::max(std::floor(correction(32)), 0.0);
  double high = std::min(std::ceil(correction(1)), double(headDim - 1));
  if (low == high)
    high += 0.001;
  std::vector<double> out, base = baseFrequencies(theta, headDim);
  for (size_t i = 0; i < base.size(); ++i) {
    double ramp = std::min(std::max((double(i) - low) / (high - low), 0.0), 1.0);
    double keep = 1 - ramp; // the extrapolation weight
    out.push_back(base[i] / factor * (1 - keep) + base[i] * keep);
  }
  return out;
}

std::vector<float> toFloats(const std::vector<double> &v) { return {v.begin(), v.end()}; }

//===----------------------------------------------------------------------===//
// The families.
//===----------------------------------------------------------------------===//

struct Family {
  const char *name;
  const char *ggufArch, *hfType, *hfClass;
  ModelConfig config;  ///< Shape and features (no frequency table).
  std::string hfExtra; ///< config.json members (rope_scaling, ...).
  std::function<void(GgufWriter &)> ggufExtra;
  std::vector<float> freqs; ///< The oracle's table; empty: theta's.
  float attentionFactor = 1.0f;
  bool ropeFactorsTensor = false; ///< GGUF: Llama 3's rope_freqs.weight.
};
void PrintTo(const Family &f, std::ostream *os) { *os << f.name; }

ModelConfig shape(int dim, int hidden, int heads, int kvHeads, int headDim, bool tied) {
  ModelConfig c;
  c.dim = dim, c.hiddenDim = hidden, c.nLayers = 2, c.nHeads = heads, c.nKvHeads = kvHeads;
  c.headDimension = headDim, c.vocabSize = 300, c.seqLen = 64, c.sharedClassifier = tied;
  return c;
}

Family llama3() {
  Family f{"Llama3", "llama", "llama", "LlamaForCausalLM", shape(64, 160, 4, 1, 0, true)};
  f.config.ropeTheta = 500000.0f;
  // Factor 8 over an original context of 512: heads of 16 have pairs kept,
  // smoothed and divided.
  f.freqs = toFloats(llama3Frequencies(500000.0, 16, 8.0, 1.0, 4.0, 512.0));
  f.hfExtra = "  \"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 8.0, "
              "\"low_freq_factor\": 1.0, \"high_freq_factor\": 4.0, "
              "\"original_max_position_embeddings\": 512},\n";
  f.ropeFactorsTensor = true;
  return f;
}

Family qwen2() {
  // GQA 4:1, biases, eps 1e-6, theta 1e6, YaRN factor 4 over 32 positions.
  Family f{"Qwen2", "qwen2", "qwen2", "Qwen2ForCausalLM", shape(64, 96, 8, 2, 0, true)};
  f.config.qkvBias = true;
  f.config.normEps = 1e-6f;
  f.config.ropeTheta = 1e6f;
  f.config.addBos = false;
  f.freqs = toFloats(yarnFrequencies(1e6, 8, 4.0, 32.0));
  f.attentionFactor = float(0.1 * std::log(4.0) + 1.0);
  f.hfExtra = "  \"rope_scaling\": {\"type\": \"yarn\", \"factor\": 4.0, "
              "\"original_max_position_embeddings\": 32},\n";
  f.ggufExtra = [](GgufWriter &w) {
    w.addString("qwen2.rope.scaling.type", "yarn");
    w.addF32("qwen2.rope.scaling.factor", 4.0f);
    w.addU32("qwen2.rope.scaling.original_context_length", 32);
    w.addBool("tokenizer.ggml.add_bos_token", false);
  };
  return f;
}

Family qwen3() {
  // dim 64, 8 heads of 16: the attention is 128 wide. GQA 4:1, q/k norms,
  // an untied classifier, linear scaling by 2.
  Family f{"Qwen3", "qwen3", "qwen3", "Qwen3ForCausalLM", shape(64, 128, 8, 2, 16, false)};
  f.config.qkNorm = true;
  f.config.normEps = 1e-6f;
  f.config.ropeTheta = 1e6f;
  f.config.addBos = false;
  for (double v : baseFrequencies(1e6, 16))
    f.freqs.push_back(float(v / 2));
  f.hfExtra = "  \"rope_scaling\": {\"rope_type\": \"linear\", \"factor\": 2.0},\n";
  f.ggufExtra = [](GgufWriter &w) {
    w.addString("qwen3.rope.scaling.type", "linear");
    w.addF32("qwen3.rope.scaling.factor", 2.0f);
    w.addBool("tokenizer.ggml.add_bos_token", false);
  };
  return f;
}

Family mistral() {
  // A window of 6 positions, shorter than the prompts and the checks.
  Family f{"Mistral", "llama", "mistral", "MistralForCausalLM", shape(64, 128, 4, 2, 0, false)};
  f.config.slidingWindow = 6;
  f.hfExtra = "  \"sliding_window\": 6,\n";
  f.ggufExtra = [](GgufWriter &w) { w.addU32("llama.attention.sliding_window", 6); };
  return f;
}

/// Uniform values for every tensor the family has: matrices scaled by
/// 1/sqrt(columns), norm weights near 1, biases well away from 0.
TensorMap familyTensors(const ModelConfig &c, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  TensorMap t;
  for (const std::string &name : llama2cCanonicalNames(c)) {
    std::vector<int64_t> s = canonicalShape(c, name);
    int64_t count = s.size() == 2 ? s[0] * s[1] : s[0];
    std::vector<float> v(static_cast<size_t>(count));
    const bool norm = name.find("norm") != std::string::npos;
    const bool bias =
        name.size() > 3 && name[name.size() - 3] == '.' && name[name.size() - 2] == 'b';
    const float scale = s.size() == 2 ? 1.0f / std::sqrt(float(s[1])) : bias ? 0.5f : 0.2f;
    for (float &x : v)
      x = (norm ? 1.0f : 0.0f) + scale * u(rng);
    if (name == "tok_embeddings")
      for (float &x : v)
        x *= 0.5f;
    t[name] = std::move(v);
  }
  return t;
}

/// Llama 3.1's rope_freqs.weight as llama.cpp's converter writes it: the
/// divisor of each pair's frequency.
std::vector<float> llama3FactorsTensor(const Family &f) {
  std::vector<double> base = baseFrequencies(f.config.ropeTheta, f.config.headDim());
  std::vector<float> factors;
  for (size_t i = 0; i < base.size(); ++i)
    factors.push_back(float(base[i] / double(f.freqs[i])));
  return factors;
}

/// The family's model written as GGUF (`gguf`) or as a Hugging Face
/// directory; its path.
std::string writeFamily(const Family &f, bool gguf, const TensorMap &values,
                        const std::string &extraHf = "",
                        const std::function<void(GgufWriter &)> &extraGguf = {}) {
  std::string path = tempDir() + "/" + f.name + (gguf ? ".gguf" : "-hf");
  if (gguf) {
    writeBytes(path,
               familyGgufBytes(f.ggufArch, f.config, values, "F32", 3, nullptr, [&](GgufWriter &w) {
                 w.addU32("tokenizer.ggml.bos_token_id", uint32_t(f.config.bosId));
                 w.addU32("tokenizer.ggml.eos_token_id", uint32_t(f.config.eosId));
                 if (f.ggufExtra)
                   f.ggufExtra(w);
                 if (extraGguf)
                   extraGguf(w);
                 if (f.ropeFactorsTensor)
                   w.addTensor("rope_freqs.weight", {uint64_t(f.config.headDim() / 2)}, kGgmlF32,
                               f32Bytes(llama3FactorsTensor(f)));
               }));
  } else {
    fs::create_directories(path);
    writeHfCheckpoint(path, f.config, hfTensorSpecs(f.config, values, "F32", nullptr));
    writeText(path + "/config.json",
              hfFamilyConfigJson(f.hfType, f.hfClass, f.config, f.hfExtra + extraHf));
  }
  return path;
}

/// The oracle of family `f`; the products over `q8Inputs` take Q8_0
/// inputs.
OracleFactory familyOracle(const Family &f, const TensorMap &values,
                           std::set<std::string> q8Inputs = {}) {
  return [f, values, q8Inputs]() -> ErrorOr<ReferenceModel> {
    auto model = ReferenceModel::fromTensors(f.config, values, f.freqs, f.attentionFactor);
    if (model.isOk())
      model->roundInputsToQ8_0(q8Inputs);
    return model;
  };
}

/// The token ids of quill-run --json's "tokens" array.
std::string generatedTokens(const std::string &artifact, const std::string &flags) {
  CommandResult r =
      run(quote(tool("quill-run")) + " " + quote(artifact) + " --json --temp 0 -p ab " + flags);
  EXPECT_EQ(r.exitCode, 0) << r.err;
  size_t at = r.out.find("\"tokens\":[");
  if (at == std::string::npos)
    return "";
  size_t end = r.out.find(']', at);
  return r.out.substr(at + 10, end - at - 10);
}

class Families : public ::testing::TestWithParam<Family> {};

TEST_P(Families, StepsMatchTheReferenceFromGgufAndHuggingFace) {
  const Family f = GetParam();
  TensorMap values = familyTensors(f.config, 31);
  std::string tok = syntheticTokenizer(f.config.vocabSize);
  std::string tokens[2];
  for (bool gguf : {true, false}) {
    std::string what = std::string(f.name) + (gguf ? " GGUF" : " HF");
    std::string artifact = compileArtifact(writeFamily(f, gguf, values), tok,
                                           std::string(f.name) + (gguf ? "-g" : "-h"),
                                           "--prefill-chunk 8 --batch-rows 4 --kv-block-size 4");
    ASSERT_FALSE(artifact.empty()) << what;
    checkDecodeAndPrefill(artifact, familyOracle(f, values), f.config, what);
    checkBatch(artifact, familyOracle(f, values), f.config, what);
    tokens[gguf] = generatedTokens(artifact, "-n 24 --ignore-eos");
  }
  EXPECT_FALSE(tokens[0].empty());
  EXPECT_EQ(tokens[0], tokens[1]) << f.name << ": GGUF and Hugging Face generate differently";
}

TEST_P(Families, CompilesToPtxForTheCudaTarget) {
  // The features lower through the target-neutral layer: the CUDA target
  // takes them too (run on a GPU by scripts/gpu; here the PTX is checked to
  // be whole: every kernel an entry, no call outside it).
  const Family f = GetParam();
  TensorMap values = familyTensors(f.config, 31);
  CommandResult r = run(quote(tool("quill-compile")) + " " + quote(writeFamily(f, true, values)) +
                        " --target=cuda --emit=ptx");
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.out.find(".visible .entry "), std::string::npos);
  EXPECT_EQ(r.out.find(".extern"), std::string::npos) << f.name << ": a call outside the PTX";
}

INSTANTIATE_TEST_SUITE_P(LlamaFamily, Families,
                         ::testing::Values(llama3(), qwen2(), qwen3(), mistral()),
                         [](const auto &info) { return std::string(info.param.name); });

TEST(FamilySlidingWindow, TheBatchSchedulerFreesBlocksTheWindowLeftAndMatchesSoloRuns) {
  // Blocks of 4 positions and a window of 6: a sequence of 30 positions
  // needs at most 3 blocks at a time, and the paged batch step (which may
  // no longer read the freed blocks) agrees with the decode step's tokens.
  Family f = mistral();
  TensorMap values = familyTensors(f.config, 31);
  std::string tok = syntheticTokenizer(f.config.vocabSize);
  std::string artifact = compileArtifact(writeFamily(f, false, values), tok, "window-batch",
                                         "--batch-rows 4 --kv-block-size 4");
  ASSERT_FALSE(artifact.empty());
  std::string prompts = tempDir() + "/window-prompts.txt";
  writeText(prompts, "ab\nbcd\n");
  CommandResult batch = run(quote(tool("quill-run")) + " " + quote(artifact) + " --batch-file " +
                            quote(prompts) + " --json --temp 0 -n 28 --ignore-eos");
  ASSERT_EQ(batch.exitCode, 0) << batch.err;
  size_t dropped = batch.out.find("\"window_dropped_blocks\":");
  ASSERT_NE(dropped, std::string::npos) << batch.out;
  EXPECT_GT(std::atoi(batch.out.c_str() + dropped + 24), 0) << batch.out;
  for (const char *prompt : {"ab", "bcd"}) {
    std::string solo = generatedTokens(artifact, std::string("-n 28 --ignore-eos -p ") + prompt);
    ASSERT_FALSE(solo.empty());
    EXPECT_NE(batch.out.find("\"tokens\":[" + solo + "]"), std::string::npos)
        << prompt << ": " << solo << "\n"
        << batch.out;
  }
}

TEST(FamilySlidingWindow, TheProfileCountsOnlyThePositionsInTheWindow) {
  // Decode steps from position 0 past a window of 6: step p reads
  // min(p + 1, 6) cached positions, and attention's scores and weighted sum
  // are 2 * heads * head_dim FLOPs each per position read, in every layer.
  Family f = mistral();
  TensorMap values = familyTensors(f.config, 37);
  std::string artifact = compileArtifact(writeFamily(f, true, values),
                                         syntheticTokenizer(f.config.vocabSize), "window-profile");
  ASSERT_FALSE(artifact.empty());
  const std::string dir = tempDir() + "/window-profile-report";
  fs::remove_all(dir);
  CommandResult r =
      run(quote(tool("quill-run")) + " " + quote(artifact) +
          " -n 20 --temp 0 --ignore-eos --threads 1 --profile --report " + quote(dir));
  ASSERT_EQ(r.exitCode, 0) << r.err;
  auto table = nlohmann::json::parse(readFile(dir + "/kernels.json"), nullptr,
                                     /*allow_exceptions=*/false);
  ASSERT_TRUE(table.is_object());
  double steps = 0, attention = 0;
  for (const auto &row : table["kernels"]) {
    EXPECT_EQ(row["step"], "step") << row; // No prompt: decode steps only.
    if (row["op"] == "logits")
      steps = row["launches"];
    if (row["op"] == "attention" || row["op"] == "attention_partial")
      attention += row["flops"].get<double>();
  }
  ASSERT_GT(steps, 6) << "the run must pass the window";
  double positions = 0;
  for (double p = 0; p < steps; ++p)
    positions += std::min(p + 1, 6.0);
  const ModelConfig &c = f.config;
  EXPECT_DOUBLE_EQ(attention, c.nLayers * 4.0 * c.nHeads * c.headDim() * positions);
}

TEST(FamilyEncodings, QuantizedQwenGgufMatchesTheReferenceOnItsStoredValues) {
  // Qwen files as people download them are quantized: Q8_0 matrices with
  // F32 biases and q/k norms beside them. The oracle runs on the values the
  // blocks stand for (the test writers' own dequantization).
  for (Family f : {qwen2(), qwen3()}) {
    f.name = f.name == std::string("Qwen2") ? "Qwen2Q8" : "Qwen3Q8";
    TensorMap values = familyTensors(f.config, 41), stored;
    std::string model = tempDir() + "/" + f.name + ".gguf";
    writeBytes(model,
               familyGgufBytes(f.ggufArch, f.config, values, "Q8_0", 3, &stored, f.ggufExtra));
    std::string artifact = compileArtifact(model, syntheticTokenizer(f.config.vocabSize), f.name,
                                           "--prefill-chunk 8 --batch-rows 4 --kv-block-size 4");
    ASSERT_FALSE(artifact.empty()) << f.name;
    CommandResult info = run(quote(tool("quill-compile")) + " --info " + quote(model));
    EXPECT_NE(info.out.find("Q8_0"), std::string::npos) << info.out;
    // Every matrix Q8_0: every product takes Q8_0-rounded inputs.
    auto oracle = familyOracle(f, stored, matrixNames(f.config));
    checkDecodeAndPrefill(artifact, oracle, f.config, f.name, kQ8InputTolerance);
    checkBatch(artifact, oracle, f.config, f.name, kQ8InputTolerance);
  }
}

/// Splits "5,7,9" into ids.
std::vector<int> parseIds(const std::string &list) {
  std::vector<int> ids;
  for (size_t at = 0; at < list.size();) {
    size_t comma = list.find(',', at);
    ids.push_back(std::stoi(list.substr(at, comma - at)));
    at = comma == std::string::npos ? list.size() : comma + 1;
  }
  return ids;
}

TEST(FamilyEndTokens, GreedyDecodingStopsAtEveryDeclaredEndToken) {
  // Greedy tokens with no end token in reach, then each later token
  // declared an end in turn: GGUF's eos, eot and eom ids, an entry of
  // config.json's eos_token_id list, and of generation_config.json's.
  // Generation stops right before it.
  Family f = llama3();
  f.name = "Llama3Ends"; // Its own files: this test adds generation_config.json.
  f.config.eosId = 299;
  f.config.bosId = 298;
  TensorMap values = familyTensors(f.config, 31);
  std::string tok = syntheticTokenizer(f.config.vocabSize);
  std::string base = compileArtifact(writeFamily(f, true, values), tok, "ends-base");
  ASSERT_FALSE(base.empty());
  std::vector<int> greedy = parseIds(generatedTokens(base, "-n 16 --ignore-eos"));
  ASSERT_EQ(greedy.size(), 16u);
  // Stops at the first occurrence of each chosen token.
  auto firstAt = [&](size_t i) {
    return size_t(std::find(greedy.begin(), greedy.end(), greedy[i]) - greedy.begin());
  };
  struct Case {
    const char *name;
    size_t index;
    bool gguf;
  };
  int n = 0;
  for (Case c : {Case{"eot", 3, true}, Case{"eom", 6, true}, Case{"eos", 9, true},
                 Case{"list2", 4, false}, Case{"list3", 8, false}}) {
    const int end = greedy[c.index];
    const size_t stop = firstAt(c.index);
    std::string model;
    if (c.gguf) {
      Family g = f;
      if (std::string(c.name) == "eos")
        g.config.eosId = end;
      model = writeFamily(g, true, values, "", [&](GgufWriter &w) {
        if (std::string(c.name) != "eos")
          w.addU32(std::string("tokenizer.ggml.") + c.name + "_token_id", uint32_t(end));
      });
    } else {
      // config.json's eos_token_id as a list (the writer's own id, then the
      // chosen one), or generation_config.json's beside a single id.
      if (c.index == 8) {
        model = writeFamily(f, false, values);
        writeText(model + "/generation_config.json",
                  "{\"eos_token_id\": [299, 297, " + std::to_string(end) + "]}");
      } else {
        model = writeFamily(f, false, values,
                            "  \"eos_token_id\": [299, " + std::to_string(end) + "],\n");
      }
    }
    std::string artifact = compileArtifact(model, tok, "ends-" + std::to_string(n++));
    ASSERT_FALSE(artifact.empty()) << c.name;
    std::vector<int> got = parseIds(generatedTokens(artifact, "-n 16"));
    std::vector<int> expected(greedy.begin(), greedy.begin() + long(stop));
    EXPECT_EQ(got, expected) << c.name << " (token " << end << ")";
  }
}

/// The ids of quill-run --json's "prompt_tokens" for prompt "ab".
std::string promptTokens(const std::string &artifact) {
  CommandResult r = run(quote(tool("quill-run")) + " " + quote(artifact) + " --json -n 1 -p ab");
  EXPECT_EQ(r.exitCode, 0) << r.err;
  size_t at = r.out.find("\"prompt_tokens\":[");
  return at == std::string::npos ? "" : r.out.substr(at + 17, r.out.find(']', at) - at - 17);
}

TEST(FamilyBos, BosStartsPromptsOnlyWhereTheModelSaysSo) {
  // Llama adds BOS (id 1) unless tokenizer_config.json's add_bos_token is
  // false; Qwen never does, from HF or GGUF.
  std::string tok = syntheticTokenizer(300);
  Family llama = llama3();
  llama.name = "Llama3Bos";
  TensorMap values = familyTensors(llama.config, 3);
  std::string dir = writeFamily(llama, false, values);
  std::string withBos = compileArtifact(dir, tok, "bos-llama");
  writeText(dir + "/tokenizer_config.json", "{\"add_bos_token\": false}");
  std::string withoutBos = compileArtifact(dir, tok, "bos-llama-off");
  Family qwen = qwen2();
  TensorMap qwenValues = familyTensors(qwen.config, 3);
  std::string qwenHf = compileArtifact(writeFamily(qwen, false, qwenValues), tok, "bos-qwen-hf");
  std::string qwenGguf = compileArtifact(writeFamily(qwen, true, qwenValues), tok, "bos-qwen-gguf");
  ASSERT_FALSE(withBos.empty() || withoutBos.empty() || qwenHf.empty() || qwenGguf.empty());
  std::string plain = promptTokens(withoutBos);
  ASSERT_FALSE(plain.empty());
  EXPECT_EQ(promptTokens(withBos), "1," + plain);
  EXPECT_EQ(promptTokens(qwenHf), plain);
  EXPECT_EQ(promptTokens(qwenGguf), plain);
}

TEST(FamilyBadInput, UnsupportedFeaturesAreOneLine) {
  Family f = qwen3();
  TensorMap values = familyTensors(f.config, 5);
  struct Case {
    const char *hfExtra;
    const char *phrase;
  };
  for (Case c : {Case{"  \"rope_scaling\": {\"rope_type\": \"longrope\", \"factor\": 2.0},\n",
                      "RoPE scaling type 'longrope' is not supported"},
                 Case{"  \"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 0.5, "
                      "\"original_max_position_embeddings\": 64},\n",
                      "factor"},
                 Case{"  \"mlp_bias\": true,\n", "mlp_bias"}}) {
    std::string model = writeFamily(f, false, values, c.hfExtra);
    CommandResult r = run(quote(tool("quill-compile")) + " " + quote(model) + " -o " +
                          quote(tempDir() + "/bad.qm") + " --tokenizer " +
                          quote(syntheticTokenizer(f.config.vocabSize)));
    expectCleanFailure(r, c.phrase);
  }
  // Architectures outside the family are named.
  std::string gemma = tempDir() + "/gemma-hf";
  fs::create_directories(gemma);
  writeText(gemma + "/config.json", hfFamilyConfigJson("gemma", "GemmaForCausalLM", f.config));
  CommandResult r = run(quote(tool("quill-compile")) + " --info " + quote(gemma));
  expectCleanFailure(r, "GemmaForCausalLM");
  std::string moe = tempDir() + "/moe.gguf";
  ModelConfig c = shape(64, 96, 4, 4, 0, true);
  writeBytes(moe, familyGgufBytes("llama", c, familyTensors(c, 3), "F32", 3, nullptr,
                                  [](GgufWriter &w) { w.addU32("llama.expert_count", 8); }));
  r = run(quote(tool("quill-compile")) + " --info " + quote(moe));
  expectCleanFailure(r, "mixture-of-experts");
}

} // namespace
} // namespace quill::test
