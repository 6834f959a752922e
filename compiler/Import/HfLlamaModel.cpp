// Hugging Face Llama checkpoints as ModelSources: config.json, single or
// sharded safetensors, and tokenizer.json.
//
// Rotary layout: Hugging Face's Llama converter permutes each head's Q and
// K rows so that rotate-half RoPE (pairing x[i] with x[i + headDim/2]) gives
// Meta's results; stored row j * headDim/2 + i holds Meta's row 2i + j.
// Quill's quill.rope pairs (x[2i], x[2i+1]) as llama2.c and Meta do, so
// q_proj and k_proj are read with RowOrder::RotateHalfToInterleaved, which
// undoes the permutation row by row.
#include "compiler/Import/HfLlamaModel.h"

#include "compiler/Import/HfTokenizer.h"
#include "compiler/Import/JsonValue.h"
#include "compiler/Import/Llama2cCheckpoint.h"
#include "compiler/Import/SafetensorsFile.h"

#include <algorithm>
#include <filesystem>
#include <map>

namespace fs = std::filesystem;

namespace quill {

namespace {

/// Hugging Face's per-layer tensor names -> Quill's.
const std::pair<const char *, const char *> kLayerTensors[] = {
    {"self_attn.q_proj", "wq"},
    {"self_attn.k_proj", "wk"},
    {"self_attn.v_proj", "wv"},
    {"self_attn.o_proj", "wo"},
    {"mlp.gate_proj", "w1"},
    {"mlp.down_proj", "w2"},
    {"mlp.up_proj", "w3"},
    {"input_layernorm", "attention_norm"},
    {"post_attention_layernorm", "ffn_norm"}};

/// Reads config.json fields with the defaults of transformers' LlamaConfig.
class ConfigReader {
public:
  ConfigReader(const JsonValue &json, const std::string &path) : json_(json), path_(path) {}

  Status error(const std::string &what) const { return Status::error(path_ + ": " + what); }
  ErrorOr<int32_t> integer(const char *key, std::optional<int32_t> fallback) {
    const JsonValue *v = json_.find(key);
    if (!v || v->isNull()) {
      if (fallback)
        return *fallback;
      return error(std::string("\"") + key + "\" is missing");
    }
    std::optional<int64_t> i = v->asInteger();
    if (!i || *i < -1 || *i > INT32_MAX)
      return error(std::string("\"") + key + "\" is not an integer in range");
    return int32_t(*i);
  }
  ErrorOr<float> number(const char *key, float fallback) {
    const JsonValue *v = json_.find(key);
    if (!v || v->isNull())
      return fallback;
    if (!v->asNumber())
      return error(std::string("\"") + key + "\" is not a number");
    return float(v->asNumber()->value);
  }
  ErrorOr<bool> boolean(const char *key, bool fallback) {
    const JsonValue *v = json_.find(key);
    if (!v || v->isNull())
      return fallback;
    if (!v->asBool())
      return error(std::string("\"") + key + "\" is not true or false");
    return *v->asBool();
  }
  /// A token id, or the first of a list (Llama 3 lists several EOS ids).
  ErrorOr<int32_t> tokenId(const char *key, int32_t fallback) {
    const JsonValue *v = json_.find(key);
    if (v && v->asArray() && !v->asArray()->empty()) {
      std::optional<int64_t> i = v->asArray()->front().asInteger();
      if (!i || *i < 0 || *i > INT32_MAX)
        return error(std::string("\"") + key + "\" is not a token id");
      return int32_t(*i);
    }
    return integer(key, fallback);
  }

private:
  const JsonValue &json_;
  const std::string &path_;
};

class HfLlamaModel : public ModelSource {
public:
  static ErrorOr<std::unique_ptr<ModelSource>>
  open(const std::string &directory, const std::string &weightsFile, const std::string &givenPath) {
    std::unique_ptr<HfLlamaModel> model(new HfLlamaModel());
    model->path_ = givenPath;
    model->directory_ = directory;
    if (Status s = model->load(weightsFile); !s)
      return s;
    return std::unique_ptr<ModelSource>(std::move(model));
  }

  ErrorOr<TokenizerData> tokenizer() const override {
    std::string path = (fs::path(directory_) / "tokenizer.json").string();
    std::error_code ignored;
    if (!fs::exists(path, ignored))
      return Status::error(directory_ + ": no tokenizer.json; give one with "
                                        "--tokenizer");
    auto json = parseJsonFile(path);
    if (!json)
      return json.status();
    return tokenizerFromHfJson(*json, path, config_.bosId, config_.eosId);
  }

private:
  HfLlamaModel() = default;
  Status load(const std::string &weightsFile);
  Status readConfig(const JsonValue &json, const std::string &path);
  /// The safetensors files and which holds each tensor.
  Status openWeights(const std::string &weightsFile);
  std::string sourceNameOf(const std::string &canonical) const override;

  std::string directory_;
  std::vector<SafetensorsFile> files_;
  std::map<std::string, size_t> fileOfTensor_;
};

Status HfLlamaModel::readConfig(const JsonValue &json, const std::string &path) {
  ConfigReader r(json, path);
  if (!json.isObject())
    return r.error("not a JSON object");
  const JsonValue *modelType = json.find("model_type");
  const JsonValue *architectures = json.find("architectures");
  std::string type = modelType && modelType->asString() ? *modelType->asString() : "";
  std::string declared;
  bool llamaClass = false;
  if (architectures && architectures->asArray())
    for (const JsonValue &a : *architectures->asArray())
      if (const std::string *name = a.asString()) {
        declared += (declared.empty() ? "" : ", ") + *name;
        llamaClass |= *name == "LlamaForCausalLM";
      }
  bool accepted = type.empty() ? llamaClass : type == "llama" && (declared.empty() || llamaClass);
  if (!accepted)
    return r.error("unsupported architecture '" + (declared.empty() ? type : declared) + "'" +
                   (type.empty() ? "" : " (model_type '" + type + "')") +
                   "; Quill imports LlamaForCausalLM");
  architecture_ = "llama";
  if (const JsonValue *act = json.find("hidden_act"))
    if (!act->asString() || *act->asString() != "silu")
      return r.error("hidden_act must be \"silu\" (SwiGLU)");
  if (const JsonValue *scaling = json.find("rope_scaling"); scaling && !scaling->isNull())
    return r.error("rope_scaling is not supported");
  for (const char *key : {"attention_bias", "mlp_bias"}) {
    auto bias = r.boolean(key, false);
    if (!bias)
      return bias.status();
    if (*bias)
      return r.error(std::string("\"") + key + "\": biases are not supported");
  }

  ModelConfig &c = config_;
  struct IntField {
    const char *key;
    int32_t *field;
  };
  for (auto [key, field] :
       {IntField{"hidden_size", &c.dim}, IntField{"intermediate_size", &c.hiddenDim},
        IntField{"num_hidden_layers", &c.nLayers}, IntField{"num_attention_heads", &c.nHeads}}) {
    auto v = r.integer(key, std::nullopt);
    if (!v)
      return v.status();
    *field = *v;
  }
  auto kvHeads = r.integer("num_key_value_heads", c.nHeads);
  auto context = r.integer("max_position_embeddings", 2048);
  auto vocab = r.integer("vocab_size", 32000);
  auto eps = r.number("rms_norm_eps", 1e-6f);
  auto theta = r.number("rope_theta", 10000.0f);
  auto tied = r.boolean("tie_word_embeddings", false);
  auto bos = r.tokenId("bos_token_id", 1);
  auto eos = r.tokenId("eos_token_id", 2);
  for (Status s : {kvHeads.status(), context.status(), vocab.status(), eps.status(), theta.status(),
                   tied.status(), bos.status(), eos.status()})
    if (!s)
      return s;
  c.nKvHeads = *kvHeads;
  c.seqLen = *context;
  c.vocabSize = *vocab;
  c.normEps = *eps;
  c.ropeTheta = *theta;
  c.sharedClassifier = *tied;
  c.bosId = *bos;
  c.eosId = *eos;
  if (!(c.ropeTheta > 0) || !(c.normEps > 0))
    return r.error("rope_theta and rms_norm_eps must be positive");
  if (Status s = validateLlama2cConfig(c); !s)
    return r.error("llama hyperparameters: " + s.message());
  auto headDim = r.integer("head_dim", c.headDim());
  if (!headDim)
    return headDim.status();
  if (*headDim != c.headDim())
    return r.error("head_dim " + std::to_string(*headDim) +
                   " differs from hidden_size / num_attention_heads");
  return Status::ok();
}

Status HfLlamaModel::openWeights(const std::string &weightsFile) {
  const fs::path dir(directory_);
  const std::string indexPath = (dir / "model.safetensors.index.json").string();
  std::error_code ignored;
  std::vector<std::string> names;
  std::map<std::string, std::string> shardOf; // tensor -> file name
  if (fs::exists(indexPath, ignored)) {
    auto index = parseJsonFile(indexPath);
    if (!index)
      return index.status();
    const JsonValue *map = index->find("weight_map");
    if (!map || !map->asObject())
      return Status::error(indexPath + ": no \"weight_map\" object");
    for (const auto &[tensor, file] : *map->asObject()) {
      const std::string *name = file.asString();
      if (!name || name->empty() || name->find_first_of("/\\") != std::string::npos ||
          *name == "." || *name == "..")
        return Status::error(indexPath + ": tensor '" + tensor +
                             "' maps to something other than a file name "
                             "in the directory");
      shardOf[tensor] = *name;
      if (std::find(names.begin(), names.end(), *name) == names.end())
        names.push_back(*name);
    }
    format_ = "Hugging Face safetensors, " + std::to_string(names.size()) +
              " shards (model.safetensors.index.json)";
  } else {
    std::string single = weightsFile.empty() ? (dir / "model.safetensors").string() : weightsFile;
    if (!fs::exists(single, ignored))
      return Status::error(directory_ + ": no model.safetensors or "
                                        "model.safetensors.index.json");
    names.push_back(fs::path(single).filename().string());
    format_ = "Hugging Face safetensors, 1 file";
  }
  for (const std::string &name : names) {
    auto file = SafetensorsFile::open((dir / name).string());
    if (!file)
      return file.status();
    files_.push_back(file.take());
  }
  for (size_t f = 0; f < files_.size(); ++f)
    for (const SafetensorsTensor &t : files_[f].tensors()) {
      auto it = shardOf.find(t.name);
      if (!shardOf.empty() && (it == shardOf.end() || it->second != names[f]))
        continue; // The index assigns this tensor to another shard.
      if (!fileOfTensor_.emplace(t.name, f).second)
        return Status::error(files_[f].path() + ": tensor '" + t.name + "' is also in " +
                             files_[fileOfTensor_[t.name]].path());
    }
  for (const auto &[tensor, file] : shardOf)
    if (!fileOfTensor_.count(tensor))
      return Status::error((dir / file).string() + ": has no tensor '" + tensor + "', which " +
                           indexPath + " places there");
  return Status::ok();
}

std::string HfLlamaModel::sourceNameOf(const std::string &canonical) const {
  if (canonical == "tok_embeddings")
    return "model.embed_tokens.weight";
  if (canonical == "norm")
    return "model.norm.weight";
  if (canonical == "output")
    return "lm_head.weight";
  size_t dot = canonical.find('.', 7);
  if (canonical.compare(0, 7, "layers.") == 0 && dot != std::string::npos)
    for (auto [hf, quill] : kLayerTensors)
      if (canonical.compare(dot + 1, std::string::npos, quill) == 0)
        return "model.layers." + canonical.substr(7, dot - 7) + "." + hf + ".weight";
  return canonical;
}

Status HfLlamaModel::load(const std::string &weightsFile) {
  const std::string configPath = (fs::path(directory_) / "config.json").string();
  auto json = parseJsonFile(configPath);
  if (!json)
    return json.status();
  if (Status s = readConfig(*json, configPath); !s)
    return s;
  if (Status s = openWeights(weightsFile); !s)
    return s;

  std::unordered_map<std::string, ImportedTensor> byName;
  for (const auto &[name, f] : fileOfTensor_) {
    const SafetensorsTensor &st = *files_[f].find(name);
    std::string canonical;
    RowOrder order = RowOrder::AsStored;
    if (name == "model.embed_tokens.weight") {
      canonical = "tok_embeddings";
    } else if (name == "model.norm.weight") {
      canonical = "norm";
    } else if (name == "lm_head.weight") {
      if (config_.sharedClassifier) {
        notes_.push_back("tie_word_embeddings: lm_head.weight is ignored, "
                         "the classifier is the embedding");
        continue;
      }
      canonical = "output";
    } else if (name.compare(0, 13, "model.layers.") == 0) {
      size_t dot = name.find('.', 13);
      std::string layer = name.substr(13, dot - 13);
      bool numeric = !layer.empty() && layer.size() < 9 &&
                     layer.find_first_not_of("0123456789") == std::string::npos &&
                     (layer.size() == 1 || layer[0] != '0');
      if (numeric && dot != std::string::npos && std::stoi(layer) < config_.nLayers) {
        std::string rest = name.substr(dot + 1);
        // Older checkpoints save RoPE's frequencies as a buffer; Quill
        // computes them from rope_theta.
        if (rest == "self_attn.rotary_emb.inv_freq")
          continue;
        for (auto [hf, quill] : kLayerTensors)
          if (rest == std::string(hf) + ".weight") {
            canonical = "layers." + layer + "." + quill;
            if (std::string(quill) == "wq" || std::string(quill) == "wk")
              order = RowOrder::RotateHalfToInterleaved;
          }
      }
    }
    if (canonical.empty())
      return Status::error(files_[f].path() + ": unexpected tensor '" + name +
                           "': Quill's llama has no place for it");
    if (!st.sourceDType)
      return Status::error(files_[f].path() + ": tensor '" + name + "' has dtype " + st.dtype +
                           "; Quill imports F32, F16 and BF16");
    ImportedTensor t;
    t.name = canonical;
    t.sourceName = name;
    t.sourceFile = files_[f].path();
    t.shape = st.shape;
    t.dtype = *st.sourceDType;
    t.data = st.data;
    t.rowOrder = order;
    t.headDim = config_.headDim();
    byName.emplace(canonical, std::move(t));
  }
  return setTensors(std::move(byName));
}

} // namespace

ErrorOr<std::unique_ptr<ModelSource>> openHfLlamaModel(const std::string &directory,
                                                       const std::string &weightsFile,
                                                       const std::string &givenPath) {
  return HfLlamaModel::open(directory, weightsFile, givenPath);
}

} // namespace quill
