// GGUF models of the llama architecture as ModelSources: hyperparameters
// from the llama.* metadata, tensors renamed to Quill's canonical names.
//
// Rotary layout: llama.cpp runs llama models with its "normal" RoPE, which
// rotates adjacent pairs (x[2i], x[2i+1]) exactly like llama2.c and Meta's
// original checkpoints. Its converter from Hugging Face therefore permutes
// HF's rotate-half Q/K rows back to that interleaved order, and its
// llama2.c converter copies rows as they are. So GGUF's attn_q/attn_k rows
// already are Quill's rows, and import reads them as stored (checked
// against stories260K.bin in the tests, tensor for tensor).
#include "compiler/Import/GgufModel.h"

#include "compiler/Import/GgufFile.h"
#include "compiler/Import/GgufTokenizer.h"
#include "compiler/Import/Llama2cCheckpoint.h"

#include <cstring>
#include <tuple>

namespace quill {

namespace {

/// GGUF's per-layer tensor names -> Quill's.
const std::pair<const char *, const char *> kLayerTensors[] = {{"attn_norm", "attention_norm"},
                                                               {"attn_q", "wq"},
                                                               {"attn_k", "wk"},
                                                               {"attn_v", "wv"},
                                                               {"attn_output", "wo"},
                                                               {"ffn_norm", "ffn_norm"},
                                                               {"ffn_gate", "w1"},
                                                               {"ffn_down", "w2"},
                                                               {"ffn_up", "w3"}};

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

private:
  explicit GgufModel(GgufFile file) : file_(std::move(file)) {}

  Status load();
  Status readConfig();
  /// The integer metadata `key`, or `fallback` when absent and optional.
  ErrorOr<int32_t> intKey(const std::string &key, std::optional<int32_t> fallback) const;
  ErrorOr<float> floatKey(const std::string &key, float fallback) const;

  std::string sourceNameOf(const std::string &canonical) const override {
    auto it = sourceNames_.find(canonical);
    return it != sourceNames_.end() ? it->second : ggufNameOf(canonical);
  }
  static std::string ggufNameOf(const std::string &canonical);

  GgufFile file_;
  std::unordered_map<std::string, std::string> sourceNames_;
};

std::string GgufModel::ggufNameOf(const std::string &canonical) {
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
      return "blk." + canonical.substr(7, dot - 7) + "." + gguf + ".weight";
  return canonical;
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
  const GgufValue *arch = file_.find("general.architecture");
  if (!arch || !arch->asString())
    return Status::error("metadata 'general.architecture' is missing");
  architecture_ = *arch->asString();
  if (architecture_ != "llama")
    return Status::error("unsupported architecture '" + architecture_ + "' (Quill imports llama)");
  // Mixtral is stored as llama with experts.
  auto experts = intKey("llama.expert_count", 0);
  if (!experts)
    return experts.status();
  if (*experts > 0)
    return Status::error("mixture-of-experts llama (llama.expert_count " +
                         std::to_string(*experts) + ") is not supported");
  if (const GgufValue *scaling = file_.find("llama.rope.scaling.type"))
    if (!scaling->asString() || *scaling->asString() != "none")
      return Status::error("RoPE scaling (llama.rope.scaling.type) is not "
                           "supported");

  ModelConfig &c = config_;
  struct IntField {
    const char *key;
    int32_t *field;
  };
  for (auto [key, field] :
       {IntField{"llama.embedding_length", &c.dim}, IntField{"llama.block_count", &c.nLayers},
        IntField{"llama.feed_forward_length", &c.hiddenDim},
        IntField{"llama.attention.head_count", &c.nHeads},
        IntField{"llama.context_length", &c.seqLen}}) {
    auto v = intKey(key, std::nullopt);
    if (!v)
      return v.status();
    *field = *v;
  }
  auto kvHeads = intKey("llama.attention.head_count_kv", c.nHeads);
  if (!kvHeads)
    return kvHeads.status();
  c.nKvHeads = *kvHeads;

  // The vocabulary: llama.vocab_size, else the tokenizer's token count, else
  // the embedding's rows.
  std::optional<int32_t> vocab;
  if (const GgufValue *tokens = file_.find("tokenizer.ggml.tokens"); tokens && tokens->asArray())
    vocab = int32_t(std::min<size_t>(tokens->asArray()->size(), INT32_MAX));
  else if (const GgufTensorInfo *embd = file_.findTensor("token_embd.weight");
           embd && embd->dims.size() == 2 && embd->dims[1] <= INT32_MAX)
    vocab = int32_t(embd->dims[1]);
  auto vocabSize = intKey("llama.vocab_size", vocab);
  if (!vocabSize)
    return vocabSize.status();
  c.vocabSize = *vocabSize;

  auto theta = floatKey("llama.rope.freq_base", 10000.0f);
  auto eps = floatKey("llama.attention.layer_norm_rms_epsilon", 1e-5f);
  if (!theta)
    return theta.status();
  if (!eps)
    return eps.status();
  c.ropeTheta = *theta;
  c.normEps = *eps;
  if (!file_.find("llama.attention.layer_norm_rms_epsilon"))
    notes_.push_back("no llama.attention.layer_norm_rms_epsilon: using 1e-5");
  // llama.cpp writes "no such token" as uint32 0xFFFFFFFF.
  for (auto [key, field, fallback] : {std::tuple{"tokenizer.ggml.bos_token_id", &c.bosId, 1},
                                      std::tuple{"tokenizer.ggml.eos_token_id", &c.eosId, 2}}) {
    const GgufValue *v = file_.find(key);
    if (v && v->asInteger() == int64_t(0xFFFFFFFF)) {
      *field = -1;
      continue;
    }
    auto id = intKey(key, fallback);
    if (!id)
      return id.status();
    *field = *id;
  }
  if (!(c.ropeTheta > 0) || !(c.normEps > 0))
    return Status::error("rope.freq_base and layer_norm_rms_epsilon must be "
                         "positive");
  if (Status s = validateLlama2cConfig(c); !s)
    return Status::error("llama hyperparameters: " + s.message());
  for (const char *key : {"llama.rope.dimension_count", "llama.attention.key_length",
                          "llama.attention.value_length"}) {
    auto v = intKey(key, c.headDim());
    if (!v)
      return v.status();
    if (*v != c.headDim())
      return Status::error(std::string("metadata '") + key + "' is " + std::to_string(*v) +
                           ", but Quill's llama needs "
                           "the head size " +
                           std::to_string(c.headDim()));
  }
  return Status::ok();
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
    } else if (name.compare(0, 4, "blk.") == 0) {
      size_t dot = name.find('.', 4);
      std::string layer = name.substr(4, dot - 4);
      bool numeric = !layer.empty() && layer.size() < 9 &&
                     layer.find_first_not_of("0123456789") == std::string::npos &&
                     (layer.size() == 1 || layer[0] != '0');
      if (numeric && std::stoi(layer) < config_.nLayers && dot != std::string::npos) {
        for (auto [gguf, quill] : kLayerTensors)
          if (name.compare(dot + 1, std::string::npos, std::string(gguf) + ".weight") == 0)
            canonical = "layers." + std::to_string(std::stoi(layer)) + "." + quill;
      }
    }
    if (canonical.empty())
      return fail("unexpected tensor '" + name + "': Quill's llama has no place for it");
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
