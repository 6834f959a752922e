// Hugging Face checkpoints of the Llama family (Llama, Mistral, Qwen2,
// Qwen3) as ModelSources: config.json, single or sharded safetensors, and
// tokenizer.json.
//
// Rotary layout: Hugging Face's Llama converter permutes each head's Q and
// K rows so that rotate-half RoPE (pairing x[i] with x[i + headDim/2]) gives
// Meta's results; stored row j * headDim/2 + i holds Meta's row 2i + j.
// Quill's quill.rope pairs (x[2i], x[2i+1]) as llama2.c and Meta do, so
// q_proj and k_proj are read with RowOrder::RotateHalfToInterleaved, which
// undoes the permutation row by row.
#include "compiler/Import/HfLlamaModel.h"

#include "compiler/Import/ChatTemplateImport.h"
#include "compiler/Import/HfTokenizer.h"
#include "compiler/Import/JsonValue.h"
#include "compiler/Import/Llama2cCheckpoint.h"
#include "compiler/Import/RopeScaling.h"
#include "compiler/Import/SafetensorsFile.h"

#include <algorithm>
#include <filesystem>
#include <map>

namespace fs = std::filesystem;

namespace quill {

namespace {

/// Hugging Face's per-layer tensor names -> Quill's.
const std::pair<const char *, const char *> kLayerTensors[] = {
    {"self_attn.q_proj.weight", "wq"},
    {"self_attn.k_proj.weight", "wk"},
    {"self_attn.v_proj.weight", "wv"},
    {"self_attn.o_proj.weight", "wo"},
    {"mlp.gate_proj.weight", "w1"},
    {"mlp.down_proj.weight", "w2"},
    {"mlp.up_proj.weight", "w3"},
    {"input_layernorm.weight", "attention_norm"},
    {"post_attention_layernorm.weight", "ffn_norm"},
    {"self_attn.q_proj.bias", "bq"},
    {"self_attn.k_proj.bias", "bk"},
    {"self_attn.v_proj.bias", "bv"},
    {"self_attn.q_norm.weight", "q_norm"},
    {"self_attn.k_norm.weight", "k_norm"}};

/// The model types Quill imports and their classes.
const std::pair<const char *, const char *> kArchitectures[] = {{"llama", "LlamaForCausalLM"},
                                                                {"mistral", "MistralForCausalLM"},
                                                                {"qwen2", "Qwen2ForCausalLM"},
                                                                {"qwen3", "Qwen3ForCausalLM"}};

/// Quill's tensors whose rows (or elements) rotate-half RoPE pairs.
bool isRotated(const std::string &kind) {
  return kind == "wq" || kind == "wk" || kind == "bq" || kind == "bk" || kind == "q_norm" ||
         kind == "k_norm";
}

/// Reads config.json fields with the defaults of transformers' LlamaConfig.
class ConfigReader {
public:
  ConfigReader(const JsonValue &json, const std::string &path) : json_(json), path_(path) {}

  Status error(const std::string &what) const { return Status::error(path_ + ": " + what); }
  const std::string &path() const { return path_; }
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
    auto ids = tokenIds(key, fallback);
    if (!ids)
      return ids.status();
    return ids->front();
  }
  /// A token id or a list of them; [fallback] when absent.
  ErrorOr<std::vector<int32_t>> tokenIds(const char *key, int32_t fallback) {
    const JsonValue *v = json_.find(key);
    if (v && v->asArray() && !v->asArray()->empty()) {
      std::vector<int32_t> ids;
      for (const JsonValue &e : *v->asArray()) {
        std::optional<int64_t> i = e.asInteger();
        if (!i || *i < 0 || *i > INT32_MAX)
          return error(std::string("\"") + key + "\" is not a token id");
        ids.push_back(int32_t(*i));
      }
      return ids;
    }
    auto id = integer(key, fallback);
    if (!id)
      return id.status();
    return std::vector<int32_t>{*id};
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
  ErrorOr<std::optional<ImportedChatTemplate>> chatTemplate() const override {
    return chatTemplateFromHfDirectory(directory_);
  }

private:
  HfLlamaModel() = default;
  Status load(const std::string &weightsFile);
  Status readConfig(const JsonValue &json, const std::string &path);
  /// generation_config.json's eos_token_id (one id or a list), when the
  /// file is there: more end tokens.
  Status readGenerationConfig();
  /// The JSON object in file `name` of the directory, or none when there
  /// is no such file.
  ErrorOr<std::optional<JsonValue>> optionalJsonObject(const char *name) const;
  /// tokenizer_config.json's add_bos_token, when it says: whether prompts
  /// start with BOS (otherwise: yes, but never for Qwen).
  Status readAddBos();
  /// rope_scaling into the config's frequency table.
  Status readRopeScaling(const JsonValue &json, ConfigReader &r);
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
  std::string declared, known;
  std::string classType; // The model type of a known class declared.
  if (architectures && architectures->asArray())
    for (const JsonValue &a : *architectures->asArray())
      if (const std::string *name = a.asString()) {
        declared += (declared.empty() ? "" : ", ") + *name;
        for (auto [model, cls] : kArchitectures)
          if (*name == cls)
            classType = model;
      }
  for (auto [model, cls] : kArchitectures)
    known += std::string(known.empty() ? "" : ", ") + cls;
  bool typeKnown = false;
  for (auto [model, cls] : kArchitectures)
    typeKnown |= type == model;
  bool accepted =
      type.empty() ? !classType.empty() : typeKnown && (declared.empty() || classType == type);
  if (!accepted)
    return r.error("unsupported architecture '" + (declared.empty() ? type : declared) + "'" +
                   (type.empty() ? "" : " (model_type '" + type + "')") + "; Quill imports " +
                   known);
  architecture_ = type.empty() ? classType : type;
  const bool qwen = architecture_ == "qwen2" || architecture_ == "qwen3";
  if (const JsonValue *act = json.find("hidden_act"))
    if (!act->asString() || *act->asString() != "silu")
      return r.error("hidden_act must be \"silu\" (SwiGLU)");
  auto mlpBias = r.boolean("mlp_bias", false);
  if (!mlpBias)
    return mlpBias.status();
  if (*mlpBias)
    return r.error("\"mlp_bias\": feed-forward biases are not supported");
  // Qwen2 always has Q, K and V biases; Llama and Qwen3 when attention_bias.
  auto attentionBias = r.boolean("attention_bias", architecture_ == "qwen2");
  if (!attentionBias)
    return attentionBias.status();
  config_.qkvBias = *attentionBias;
  config_.qkNorm = architecture_ == "qwen3";
  // Qwen2's optional window applies to some layers only.
  auto useWindow = r.boolean("use_sliding_window", architecture_ == "mistral");
  if (!useWindow)
    return useWindow.status();
  if (*useWindow) {
    auto window = r.integer("sliding_window", 0);
    if (!window)
      return window.status();
    config_.slidingWindow = *window < 0 ? 0 : *window;
    if (qwen && config_.slidingWindow > 0)
      return r.error("use_sliding_window: Qwen's per-layer sliding window is not supported");
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
  auto eos = r.tokenIds("eos_token_id", 2);
  for (Status s : {kvHeads.status(), context.status(), vocab.status(), eps.status(), theta.status(),
                   tied.status(), bos.status(), eos.status()})
    if (!s)
      return s;
  c.eosId = eos->front();
  for (int32_t id : *eos)
    if (id != c.eosId)
      c.extraEosIds.push_back(id);
  c.nKvHeads = *kvHeads;
  c.seqLen = *context;
  c.vocabSize = *vocab;
  c.normEps = *eps;
  c.ropeTheta = *theta;
  c.sharedClassifier = *tied;
  c.bosId = *bos;
  c.addBos = !qwen;
  if (!(c.ropeTheta > 0) || !(c.normEps > 0))
    return r.error("rope_theta and rms_norm_eps must be positive");
  // Qwen3's heads are wider than hidden_size / num_attention_heads.
  auto headDim = r.integer("head_dim", 0);
  if (!headDim)
    return headDim.status();
  if (*headDim > 0 && (c.nHeads <= 0 || c.dim % c.nHeads != 0 || *headDim != c.dim / c.nHeads))
    c.headDimension = *headDim;
  if (Status s = validateLlama2cConfig(c); !s)
    return r.error(architecture_ + " hyperparameters: " + s.message());
  if (Status s = readRopeScaling(json, r); !s)
    return s;
  return validateLlama2cConfig(c);
}

ErrorOr<std::optional<JsonValue>> HfLlamaModel::optionalJsonObject(const char *name) const {
  const std::string path = (fs::path(directory_) / name).string();
  std::error_code ignored;
  if (!fs::exists(path, ignored))
    return std::optional<JsonValue>();
  auto json = parseJsonFile(path);
  if (!json)
    return json.status();
  if (!json->isObject())
    return Status::error(path + ": not a JSON object");
  return std::optional<JsonValue>(json.take());
}

Status HfLlamaModel::readGenerationConfig() {
  auto json = optionalJsonObject("generation_config.json");
  if (!json)
    return json.status();
  if (!*json || !(*json)->find("eos_token_id"))
    return Status::ok();
  const std::string path = (fs::path(directory_) / "generation_config.json").string();
  ConfigReader r(**json, path);
  auto ids = r.tokenIds("eos_token_id", config_.eosId);
  if (!ids)
    return ids.status();
  for (int32_t id : *ids) {
    if (id >= config_.vocabSize)
      return r.error("eos_token_id " + std::to_string(id) + " is outside the vocabulary of " +
                     std::to_string(config_.vocabSize));
    if (id != config_.eosId && std::find(config_.extraEosIds.begin(), config_.extraEosIds.end(),
                                         id) == config_.extraEosIds.end())
      config_.extraEosIds.push_back(id);
  }
  return Status::ok();
}

Status HfLlamaModel::readAddBos() {
  auto json = optionalJsonObject("tokenizer_config.json");
  if (!json)
    return json.status();
  if (!*json)
    return Status::ok();
  const std::string path = (fs::path(directory_) / "tokenizer_config.json").string();
  ConfigReader r(**json, path);
  auto addBos = r.boolean("add_bos_token", config_.addBos);
  if (!addBos)
    return addBos.status();
  config_.addBos = *addBos;
  return Status::ok();
}

Status HfLlamaModel::readRopeScaling(const JsonValue &json, ConfigReader &r) {
  const JsonValue *scaling = json.find("rope_scaling");
  if (!scaling || scaling->isNull())
    return Status::ok();
  if (!scaling->isObject())
    return r.error("\"rope_scaling\" is not an object");
  ConfigReader fields(*scaling, r.path());
  RopeScaling s;
  const JsonValue *type = scaling->find("rope_type");
  if (!type)
    type = scaling->find("type");
  if (!type || !type->asString())
    return r.error("\"rope_scaling\" has no \"rope_type\"");
  s.type = *type->asString();
  auto number = [&](const char *key, double fallback) -> ErrorOr<double> {
    const JsonValue *v = scaling->find(key);
    if (!v || v->isNull())
      return fallback;
    if (!v->asNumber())
      return r.error(std::string("rope_scaling \"") + key + "\" is not a number");
    return v->asNumber()->value;
  };
  struct Field {
    const char *key;
    double *value;
    double fallback;
  };
  double original = double(config_.seqLen);
  for (Field f :
       {Field{"factor", &s.factor, 1.0}, Field{"low_freq_factor", &s.lowFreqFactor, 1.0},
        Field{"high_freq_factor", &s.highFreqFactor, 4.0}, Field{"beta_fast", &s.betaFast, 32.0},
        Field{"beta_slow", &s.betaSlow, 1.0}, Field{"attention_factor", &s.attentionFactor, 0.0},
        Field{"mscale", &s.mscale, 0.0}, Field{"mscale_all_dim", &s.mscaleAllDim, 0.0},
        Field{"original_max_position_embeddings", &original, original}}) {
    auto v = number(f.key, f.fallback);
    if (!v)
      return v.status();
    *f.value = *v;
  }
  if (!(original >= 1.0 && original <= double(INT32_MAX)))
    return r.error("rope_scaling \"original_max_position_embeddings\" is out of range");
  s.originalContext = int64_t(original);
  auto truncate = fields.boolean("truncate", true);
  if (!truncate)
    return truncate.status();
  s.truncate = *truncate;
  auto table = ropeTable(s, config_.ropeTheta, config_.headDim());
  if (!table)
    return r.error(table.message());
  config_.ropeFrequencies = std::move(table->frequencies);
  config_.ropeAttentionFactor = table->attentionFactor;
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
        return "model.layers." + canonical.substr(7, dot - 7) + "." + hf;
  return canonical;
}

Status HfLlamaModel::load(const std::string &weightsFile) {
  const std::string configPath = (fs::path(directory_) / "config.json").string();
  auto json = parseJsonFile(configPath);
  if (!json)
    return json.status();
  if (Status s = readConfig(*json, configPath); !s)
    return s;
  if (Status s = readGenerationConfig(); !s)
    return s;
  if (Status s = readAddBos(); !s)
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
          if (rest == hf) {
            canonical = "layers." + layer + "." + quill;
            if (isRotated(quill))
              order = RowOrder::RotateHalfToInterleaved;
          }
      }
    }
    if (canonical.empty())
      return Status::error(files_[f].path() + ": unexpected tensor '" + name + "': Quill's " +
                           architecture_ + " has no place for it");
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
