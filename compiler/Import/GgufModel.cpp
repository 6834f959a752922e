// GGUF models of the Llama family as ModelSources: hyperparameters from the
// <arch>.* metadata (llama, qwen2, qwen3), tensors renamed to Quill's
// canonical names.
//
// Rotary layout: llama.cpp runs llama models with its "normal" RoPE, which
// rotates adjacent pairs (x[2i], x[2i+1]) exactly like llama2.c and Meta's
// original checkpoints. Its converter from Hugging Face therefore permutes
// HF's rotate-half Q/K rows back to that interleaved order, and its
// llama2.c converter copies rows as they are. So GGUF's attn_q/attn_k rows
// already are Quill's rows, and import reads them as stored (checked
// against stories260K.bin in the tests, tensor for tensor). Qwen models run
// with llama.cpp's NeoX RoPE instead (rotate-half, HF's order, unpermuted):
// their Q/K rows, biases and q/k norm weights are reordered at import.
#include "compiler/Import/GgufModel.h"

#include "compiler/Import/ChatTemplateImport.h"
#include "compiler/Import/GgufFile.h"
#include "compiler/Import/GgufTokenizer.h"
#include "compiler/Import/Llama2cCheckpoint.h"
#include "compiler/Import/RopeScaling.h"

#include <cmath>

#include <cstring>
#include <tuple>

namespace quill {

namespace {

/// GGUF's per-layer tensor names -> Quill's.
const std::pair<const char *, const char *> kLayerTensors[] = {
    {"attn_norm.weight", "attention_norm"},
    {"attn_q.weight", "wq"},
    {"attn_k.weight", "wk"},
    {"attn_v.weight", "wv"},
    {"attn_output.weight", "wo"},
    {"ffn_norm.weight", "ffn_norm"},
    {"ffn_gate.weight", "w1"},
    {"ffn_down.weight", "w2"},
    {"ffn_up.weight", "w3"},
    {"attn_q.bias", "bq"},
    {"attn_k.bias", "bk"},
    {"attn_v.bias", "bv"},
    {"attn_q_norm.weight", "q_norm"},
    {"attn_k_norm.weight", "k_norm"}};

/// The architectures Quill imports: the Llama family's.
bool isSupportedArchitecture(const std::string &arch) {
  return arch == "llama" || arch == "qwen2" || arch == "qwen3";
}

/// Whether the architecture's Q/K rows are in rotate-half order (NeoX RoPE).
bool usesRotateHalf(const std::string &arch) { return arch == "qwen2" || arch == "qwen3"; }

class GgufModel : public ModelSource {
public:
  static ErrorOr<std::unique_ptr<ModelSource>> open(const std::string &path) {
    auto file = GgufFile::open(path);
    if (!file)
      return file.status();
    std::unique_ptr<GgufModel> model(new GgufModel(file.take()));
    if (Status s = model->load(); !s)
      return s;
    return std::unique_ptr<ModelSource>(std::move(model));
  }

  ErrorOr<TokenizerData> tokenizer() const override { return tokenizerFromGguf(file_); }
  ErrorOr<std::optional<ImportedChatTemplate>> chatTemplate() const override {
    return chatTemplateFromGguf(file_);
  }

private:
  explicit GgufModel(GgufFile file) : file_(std::move(file)) {}

  Status load();
  Status readConfig();
  /// The integer metadata `key`, or `fallback` when absent and optional.
  ErrorOr<int32_t> intKey(const std::string &key, std::optional<int32_t> fallback) const;
  ErrorOr<float> floatKey(const std::string &key, float fallback) const;
  /// The boolean metadata `key`, or `fallback` when absent.
  ErrorOr<bool> boolKey(const std::string &key, bool fallback) const;
  /// <arch>.rope.scaling.* and rope_freqs.weight into the config's table.
  Status readRopeScaling();
  /// eos, eot and eom ids; whether prompts start with BOS.
  Status readSpecialTokens();

  std::string sourceNameOf(const std::string &canonical) const override {
    auto it = sourceNames_.find(canonical);
    return it != sourceNames_.end() ? it->second : ggufTensorName(canonical);
  }

  GgufFile file_;
  std::unordered_map<std::string, std::string> sourceNames_;
};

} // namespace

std::string ggufTensorName(const std::string &canonical) {
  if (canonical == "tok_embeddings")
    return "token_embd.weight";
  if (canonical == "norm")
    return "output_norm.weight";
  if (canonical == "output")
    return "output.weight";
  size_t dot = canonical.find('.', 7);
  if (canonical.compare(0, 7, "layers.") != 0 || dot == std::string::npos)
    return canonical;
  for (auto [gguf, quill] : kLayerTensors)
    if (canonical.compare(dot + 1, std::string::npos, quill) == 0)
      return "blk." + canonical.substr(7, dot - 7) + "." + gguf;
  return canonical;
}

namespace {

ErrorOr<bool> GgufModel::boolKey(const std::string &key, bool fallback) const {
  const GgufValue *v = file_.find(key);
  if (!v)
    return fallback;
  if (v->type != GgufType::Bool)
    return Status::error("metadata '" + key + "' is a " + ggufTypeName(v->type) +
                         ", expected a bool");
  return v->unsignedValue != 0;
}

Status GgufModel::readRopeScaling() {
  const std::string arch = architecture_ + ".";
  ModelConfig &c = config_;
  RopeScaling scaling;
  if (const GgufValue *type = file_.find(arch + "rope.scaling.type")) {
    if (!type->asString())
      return Status::error("metadata '" + arch + "rope.scaling.type' is not a string");
    scaling.type = *type->asString() == "none" ? "" : *type->asString();
  }
  auto factor = floatKey(arch + "rope.scaling.factor", 1.0f);
  if (!factor)
    return factor.status();
  // Older files: rope.scale_linear instead of a linear scaling's factor.
  auto linear = floatKey(arch + "rope.scale_linear", 1.0f);
  if (!linear)
    return linear.status();
  if (scaling.type.empty() && *linear != 1.0f) {
    scaling.type = "linear";
    scaling.factor = *linear;
  } else {
    scaling.factor = *factor;
  }
  auto original = intKey(arch + "rope.scaling.original_context_length", 0);
  if (!original)
    return original.status();
  scaling.originalContext = *original;
  if (const GgufValue *v = file_.find(arch + "rope.scaling.yarn_log_multiplier")) {
    // llama.cpp's form of mscale_all_dim: 0.1 * ln(factor) * multiplier.
    std::optional<double> m = v->asNumber();
    if (!m)
      return Status::error("metadata '" + arch +
                           "rope.scaling.yarn_log_multiplier' is not a number");
    if (*m != 0.0)
      scaling.attentionFactor = 1.0 + *m * std::log(scaling.factor);
  }
  const GgufTensorInfo *factors = file_.findTensor("rope_freqs.weight");
  if (factors && !scaling.type.empty())
    return Status::error("both rope_freqs.weight and " + arch + "rope.scaling.type '" +
                         scaling.type + "': one RoPE scaling only");
  ErrorOr<RopeTable> table = RopeTable{};
  if (factors) {
    // Llama 3.1's scaling as llama.cpp stores it: one divisor per pair.
    if (!factors->data || factors->dtype != SourceDType::F32 ||
        factors->rowMajorShape() != std::vector<int64_t>{c.headDim() / 2})
      return Status::error("tensor 'rope_freqs.weight' must be " + std::to_string(c.headDim() / 2) +
                           " float32 values");
    std::vector<float> values(size_t(c.headDim() / 2));
    std::memcpy(values.data(), factors->data, values.size() * sizeof(float));
    table = ropeTableFromFactors(values, c.ropeTheta, c.headDim());
  } else {
    table = ropeTable(scaling, c.ropeTheta, c.headDim());
  }
  if (!table)
    return table.status();
  c.ropeFrequencies = std::move(table->frequencies);
  c.ropeAttentionFactor = table->attentionFactor;
  return Status::ok();
}

Status GgufModel::readSpecialTokens() {
  ModelConfig &c = config_;
  // llama.cpp writes "no such token" as uint32 0xFFFFFFFF.
  auto tokenKey = [&](const std::string &key, int32_t fallback) -> ErrorOr<int32_t> {
    const GgufValue *v = file_.find(key);
    if (v && v->asInteger() == int64_t(0xFFFFFFFF))
      return -1;
    return intKey(key, fallback);
  };
  for (auto [key, field, fallback] : {std::tuple{"tokenizer.ggml.bos_token_id", &c.bosId, 1},
                                      std::tuple{"tokenizer.ggml.eos_token_id", &c.eosId, 2}}) {
    auto id = tokenKey(key, fallback);
    if (!id)
      return id.status();
    *field = *id;
  }
  for (const char *key : {"tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id"}) {
    auto id = tokenKey(key, -1);
    if (!id)
      return id.status();
    if (*id >= 0 && *id != c.eosId)
      c.extraEosIds.push_back(*id);
  }
  // Without the key: BOS for llama's SentencePiece vocabularies (llama.cpp's
  // default), never for Qwen's.
  const GgufValue *model = file_.find("tokenizer.ggml.model");
  bool sentencePiece = !model || (model->asString() && *model->asString() == "llama");
  auto addBos = boolKey("tokenizer.ggml.add_bos_token", sentencePiece && architecture_ == "llama");
  if (!addBos)
    return addBos.status();
  c.addBos = *addBos;
  // A model without BOS keeps an id the runtime never adds: its EOS.
  if (c.bosId < 0 && !c.addBos)
    c.bosId = c.eosId;
  return Status::ok();
}

ErrorOr<int32_t> GgufModel::intKey(const std::string &key, std::optional<int32_t> fallback) const {
  const GgufValue *v = file_.find(key);
  if (!v) {
    if (fallback)
      return *fallback;
    return Status::error("metadata '" + key + "' is missing");
  }
  std::optional<int64_t> i = v->asInteger();
  if (!i)
    return Status::error("metadata '" + key + "' is a " + ggufTypeName(v->type) +
                         ", expected an integer");
  if (*i < 0 || *i > INT32_MAX)
    return Status::error("metadata '" + key + "' is " + std::to_string(*i) + ", out of range");
  return int32_t(*i);
}

ErrorOr<float> GgufModel::floatKey(const std::string &key, float fallback) const {
  const GgufValue *v = file_.find(key);
  if (!v)
    return fallback;
  // An integer here is a writer's mistake (an int32 holding a float's bits
  // reads as 925353388), not a value.
  std::optional<double> d = v->asNumber();
  if (!d || (v->type != GgufType::Float32 && v->type != GgufType::Float64))
    return Status::error("metadata '" + key + "' is a " + ggufTypeName(v->type) +
                         ", expected a float32");
  return float(*d);
}

Status GgufModel::readConfig() {
  const GgufValue *archValue = file_.find("general.architecture");
  if (!archValue || !archValue->asString())
    return Status::error("metadata 'general.architecture' is missing");
  architecture_ = *archValue->asString();
  if (!isSupportedArchitecture(architecture_))
    return Status::error("unsupported architecture '" + architecture_ +
                         "' (Quill imports llama, qwen2 and qwen3)");
  const std::string arch = architecture_ + ".";
  // Mixtral is stored as llama with experts.
  auto experts = intKey(arch + "expert_count", 0);
  if (!experts)
    return experts.status();
  if (*experts > 0)
    return Status::error("mixture-of-experts " + architecture_ + " (" + arch + "expert_count " +
                         std::to_string(*experts) + ") is not supported");

  ModelConfig &c = config_;
  struct IntField {
    const char *key;
    int32_t *field;
  };
  for (auto [key, field] :
       {IntField{"embedding_length", &c.dim}, IntField{"block_count", &c.nLayers},
        IntField{"feed_forward_length", &c.hiddenDim}, IntField{"attention.head_count", &c.nHeads},
        IntField{"context_length", &c.seqLen}}) {
    auto v = intKey(arch + key, std::nullopt);
    if (!v)
      return v.status();
    *field = *v;
  }
  auto kvHeads = intKey(arch + "attention.head_count_kv", c.nHeads);
  if (!kvHeads)
    return kvHeads.status();
  c.nKvHeads = *kvHeads;
  // Qwen3's heads are wider than embedding_length / head_count.
  if (file_.find(arch + "attention.key_length")) {
    auto keyLength = intKey(arch + "attention.key_length", std::nullopt);
    if (!keyLength)
      return keyLength.status();
    if (c.nHeads <= 0 || *keyLength != c.dim / c.nHeads || c.dim % c.nHeads != 0)
      c.headDimension = *keyLength;
  }

  // The vocabulary: <arch>.vocab_size, else the tokenizer's token count,
  // else the embedding's rows.
  std::optional<int32_t> vocab;
  if (const GgufValue *tokens = file_.find("tokenizer.ggml.tokens"); tokens && tokens->asArray())
    vocab = int32_t(std::min<size_t>(tokens->asArray()->size(), INT32_MAX));
  else if (const GgufTensorInfo *embd = file_.findTensor("token_embd.weight");
           embd && embd->dims.size() == 2 && embd->dims[1] <= INT32_MAX)
    vocab = int32_t(embd->dims[1]);
  auto vocabSize = intKey(arch + "vocab_size", vocab);
  if (!vocabSize)
    return vocabSize.status();
  c.vocabSize = *vocabSize;

  auto theta = floatKey(arch + "rope.freq_base", 10000.0f);
  auto eps = floatKey(arch + "attention.layer_norm_rms_epsilon", 1e-5f);
  if (!theta)
    return theta.status();
  if (!eps)
    return eps.status();
  c.ropeTheta = *theta;
  c.normEps = *eps;
  if (!file_.find(arch + "attention.layer_norm_rms_epsilon"))
    notes_.push_back("no " + arch + "attention.layer_norm_rms_epsilon: using 1e-5");
  if (Status s = readSpecialTokens(); !s)
    return s;
  auto window = intKey(arch + "attention.sliding_window", 0);
  if (!window)
    return window.status();
  c.slidingWindow = *window;
  c.qkvBias = file_.findTensor("blk.0.attn_q.bias") != nullptr;
  c.qkNorm = file_.findTensor("blk.0.attn_q_norm.weight") != nullptr;
  if (!(c.ropeTheta > 0) || !(c.normEps > 0))
    return Status::error("rope.freq_base and layer_norm_rms_epsilon must be "
                         "positive");
  if (Status s = validateLlama2cConfig(c); !s)
    return Status::error(architecture_ + " hyperparameters: " + s.message());
  for (const char *key :
       {"rope.dimension_count", "attention.key_length", "attention.value_length"}) {
    auto v = intKey(arch + key, c.headDim());
    if (!v)
      return v.status();
    if (*v != c.headDim())
      return Status::error("metadata '" + arch + key + "' is " + std::to_string(*v) +
                           ", but Quill needs the head size " + std::to_string(c.headDim()) +
                           (std::string(key) == "rope.dimension_count"
                                ? " (a rotary embedding over part of each head is not supported)"
                                : ""));
  }
  if (Status s = readRopeScaling(); !s)
    return s;
  return validateLlama2cConfig(c);
}

Status GgufModel::load() {
  path_ = file_.path();
  format_ = "GGUF v" + std::to_string(file_.version());
  auto fail = [&](const std::string &what) { return Status::error(path_ + ": " + what); };
  if (Status s = readConfig(); !s)
    return fail(s.message());

  std::unordered_map<std::string, ImportedTensor> byName;
  for (const GgufTensorInfo &info : file_.tensors()) {
    std::string canonical;
    const std::string &name = info.name;
    if (name == "token_embd.weight") {
      canonical = "tok_embeddings";
    } else if (name == "output_norm.weight") {
      canonical = "norm";
    } else if (name == "output.weight") {
      canonical = "output";
    } else if (name == "rope_freqs.weight") {
      continue; // Read into the config's frequency table.
    } else if (name.compare(0, 4, "blk.") == 0) {
      size_t dot = name.find('.', 4);
      std::string layer = name.substr(4, dot - 4);
      bool numeric = !layer.empty() && layer.size() < 9 &&
                     layer.find_first_not_of("0123456789") == std::string::npos &&
                     (layer.size() == 1 || layer[0] != '0');
      if (numeric && std::stoi(layer) < config_.nLayers && dot != std::string::npos) {
        for (auto [gguf, quill] : kLayerTensors)
          if (name.compare(dot + 1, std::string::npos, gguf) == 0)
            canonical = "layers." + std::to_string(std::stoi(layer)) + "." + quill;
      }
    }
    if (canonical.empty())
      return fail("unexpected tensor '" + name + "': Quill's " + architecture_ +
                  " has no place for it");
    if (!info.dtype)
      return fail("tensor '" + name + "' has type " + ggmlTypeName(info.ggmlType) +
                  "; Quill imports F32, F16, BF16, Q8_0, Q4_0, Q4_K and Q6_K");
    ImportedTensor t;
    t.name = canonical;
    t.sourceName = name;
    t.sourceFile = path_;
    t.shape = info.rowMajorShape();
    t.dtype = *info.dtype;
    t.data = info.data;
    static const char *const kRotated[] = {".wq", ".wk", ".bq", ".bk", ".q_norm", ".k_norm"};
    if (usesRotateHalf(architecture_))
      for (const char *suffix : kRotated)
        if (canonical.size() > strlen(suffix) &&
            canonical.compare(canonical.size() - strlen(suffix), std::string::npos, suffix) == 0) {
          t.rowOrder = RowOrder::RotateHalfToInterleaved;
          t.headDim = config_.headDim();
        }
    sourceNames_[canonical] = name;
    byName.emplace(canonical, std::move(t));
  }

  // llama.cpp's llama2.c converter writes the shared classifier out as a
  // copy; a copy equal byte for byte is the embedding, so share it.
  config_.sharedClassifier = true;
  auto output = byName.find("output");
  if (output != byName.end()) {
    const GgufTensorInfo *out = file_.findTensor("output.weight");
    const GgufTensorInfo *embd = file_.findTensor("token_embd.weight");
    if (embd && embd->ggmlType == out->ggmlType && embd->dims == out->dims &&
        embd->bytes == out->bytes && std::memcmp(embd->data, out->data, out->bytes) == 0) {
      byName.erase(output);
      notes_.push_back("output.weight equals token_embd.weight byte for "
                       "byte: the classifier shares the embedding");
    } else {
      config_.sharedClassifier = false;
    }
  }
  return setTensors(std::move(byName));
}

} // namespace

ErrorOr<std::unique_ptr<ModelSource>> openGgufModel(const std::string &path) {
  return GgufModel::open(path);
}

} // namespace quill
