// Header checks, size arithmetic and layout of llama2.c checkpoints.
#include "compiler/Import/Llama2cCheckpoint.h"

#include <cmath>
#include <cstring>
#include <initializer_list>
#include <utility>

using namespace quill;

// Weights are read in place, so the host must share the file's byte order.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "llama2.c checkpoints are little-endian");

int64_t WeightTensor::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

namespace {

/// Unsigned 64-bit arithmetic that remembers whether any step overflowed, so
/// a header with huge fields yields an error rather than a wrapped size.
class CheckedSize {
public:
  explicit CheckedSize(uint64_t v = 0) : value_(v) {}
  static CheckedSize product(std::initializer_list<uint64_t> factors) {
    CheckedSize r(1);
    for (uint64_t f : factors)
      r.multiply(f);
    return r;
  }
  CheckedSize &add(const CheckedSize &other) {
    overflow_ |= other.overflow_;
    overflow_ |= __builtin_add_overflow(value_, other.value_, &value_);
    return *this;
  }
  CheckedSize &multiply(uint64_t f) {
    overflow_ |= __builtin_mul_overflow(value_, f, &value_);
    return *this;
  }
  bool overflowed() const { return overflow_; }
  uint64_t value() const { return value_; }

private:
  uint64_t value_;
  bool overflow_ = false;
};

/// The seven int32 fields both header kinds share, in file order.
struct RawParams {
  int32_t dim, hiddenDim, nLayers, nHeads, nKvHeads, vocabSize, seqLen;
};

Status failAt(const std::string &path, const std::string &what) {
  return Status::error(path + ": " + what);
}

} // namespace

Status quill::validateLlama2cConfig(const ModelConfig &c) {
  const std::pair<const char *, int32_t> fields[] = {
      {"dim", c.dim},        {"hidden_dim", c.hiddenDim}, {"n_layers", c.nLayers},
      {"n_heads", c.nHeads}, {"n_kv_heads", c.nKvHeads},  {"vocab_size", c.vocabSize},
      {"seq_len", c.seqLen}};
  for (const auto &[name, value] : fields) {
    if (value <= 0)
      return Status::error(std::string(name) + " is " + std::to_string(value) +
                           ", must be positive");
    if (value > kLlama2cMaxField)
      return Status::error(std::string(name) + " is " + std::to_string(value) +
                           ", implausibly large (limit " + std::to_string(kLlama2cMaxField) + ")");
  }
  if (c.headDimension < 0 || c.headDimension > 1024)
    return Status::error("head_dim " + std::to_string(c.headDimension) + " is outside 1..1024");
  if (c.headDimension == 0 && c.dim % c.nHeads != 0)
    return Status::error("dim " + std::to_string(c.dim) + " is not divisible by n_heads " +
                         std::to_string(c.nHeads));
  if (c.nKvHeads > c.nHeads)
    return Status::error("n_kv_heads " + std::to_string(c.nKvHeads) + " exceeds n_heads " +
                         std::to_string(c.nHeads));
  if (c.nHeads % c.nKvHeads != 0)
    return Status::error("n_heads " + std::to_string(c.nHeads) +
                         " is not a multiple of n_kv_heads " + std::to_string(c.nKvHeads));
  // RoPE rotates (even, odd) pairs inside each head.
  if (c.headDim() % 2 != 0)
    return Status::error("head size " + std::to_string(c.headDim()) + " is odd; RoPE needs pairs");
  if (!c.ropeFrequencies.empty() && int64_t(c.ropeFrequencies.size()) * 2 != c.headDim())
    return Status::error("the RoPE frequency table has " +
                         std::to_string(c.ropeFrequencies.size()) + " entries, expected " +
                         std::to_string(c.headDim() / 2));
  for (float f : c.ropeFrequencies)
    if (!std::isfinite(f) || !(f > 0))
      return Status::error("the RoPE frequency table holds " + std::to_string(f) +
                           ", not a positive float32");
  if (!std::isfinite(c.ropeAttentionFactor) || !(c.ropeAttentionFactor > 0))
    return Status::error("the RoPE attention factor " + std::to_string(c.ropeAttentionFactor) +
                         " is not a positive float32");
  if (c.slidingWindow < 0)
    return Status::error("sliding window " + std::to_string(c.slidingWindow) + " is negative");
  for (int32_t id : c.extraEosIds)
    if (id < 0 || id >= c.vocabSize)
      return Status::error("end token id " + std::to_string(id) + " is outside the vocabulary of " +
                           std::to_string(c.vocabSize));
  // The runtime begins every prompt with BOS and stops at EOS.
  for (auto [name, id] : {std::pair{"bos token id", c.bosId}, std::pair{"eos token id", c.eosId}})
    if (id < 0 || id >= c.vocabSize)
      return Status::error(std::string(name) + " " + std::to_string(id) +
                           " is outside the vocabulary of " + std::to_string(c.vocabSize));
  // Stored as float32: 1e308 would become infinity.
  if (!std::isfinite(c.ropeTheta) || !(c.ropeTheta > 0))
    return Status::error("rope theta " + std::to_string(c.ropeTheta) +
                         " is not a positive float32");
  if (!std::isfinite(c.normEps) || !(c.normEps > 0))
    return Status::error("rms norm epsilon " + std::to_string(c.normEps) +
                         " is not a positive float32");
  return Status::ok();
}

ErrorOr<uint64_t> quill::llama2cFileBytes(const ModelConfig &c, int formatVersion) {
  const uint64_t dim = c.dim, hidden = c.hiddenDim, layers = c.nLayers, vocab = c.vocabSize,
                 kvDim = uint64_t(c.kvDim()), seqLen = c.seqLen, headDim = uint64_t(c.headDim());
  CheckedSize perLayer(0);
  perLayer
      .add(CheckedSize::product({2, dim}))                 // two norms
      .add(CheckedSize::product({2, dim, dim}))            // wq, wo
      .add(CheckedSize::product({2, kvDim, dim}))          // wk, wv
      .add(CheckedSize::product({3, hidden, dim}));        // w1, w2, w3
  CheckedSize floats = CheckedSize::product({vocab, dim}); // tok_embeddings
  floats.add(perLayer.multiply(layers)).add(CheckedSize(dim));
  if (formatVersion == 0) // freq_cis_real and freq_cis_imag
    floats.add(CheckedSize::product({2, seqLen, headDim / 2}));
  if (!c.sharedClassifier)
    floats.add(CheckedSize::product({vocab, dim}));
  CheckedSize bytes = floats.multiply(sizeof(float));
  bytes.add(CheckedSize(formatVersion == 0 ? kLlama2cLegacyHeaderBytes : kLlama2cV1HeaderBytes));
  if (bytes.overflowed())
    return Status::error("tensor sizes overflow 64-bit arithmetic; the header "
                         "fields are too large to be a real model");
  return bytes.value();
}

std::vector<Llama2cBlock> quill::llama2cFileLayout(const ModelConfig &c, int formatVersion) {
  const int64_t dim = c.dim, hidden = c.hiddenDim, vocab = c.vocabSize, kvDim = c.kvDim();
  std::vector<Llama2cBlock> blocks;
  auto perLayer = [&](const char *kind, std::vector<int64_t> shape) {
    for (int l = 0; l < c.nLayers; ++l)
      blocks.push_back({"layers." + std::to_string(l) + "." + kind, shape, true});
  };
  auto matrices = [&] {
    perLayer("wq", {dim, dim});
    perLayer("wk", {kvDim, dim});
    perLayer("wv", {kvDim, dim});
    perLayer("wo", {dim, dim});
  };
  if (formatVersion == 0) {
    blocks.push_back({"tok_embeddings", {vocab, dim}, true});
    perLayer("attention_norm", {dim});
    matrices();
    perLayer("ffn_norm", {dim});
    perLayer("w1", {hidden, dim});
    perLayer("w2", {dim, hidden});
    perLayer("w3", {hidden, dim});
    blocks.push_back({"norm", {dim}, true});
    int64_t halfHead = c.headDim() / 2;
    blocks.push_back({"freq_cis_real", {c.seqLen, halfHead}, false});
    blocks.push_back({"freq_cis_imag", {c.seqLen, halfHead}, false});
  } else {
    // v1 puts all norms first so they can stay fp32 in quantized variants.
    perLayer("attention_norm", {dim});
    perLayer("ffn_norm", {dim});
    blocks.push_back({"norm", {dim}, true});
    blocks.push_back({"tok_embeddings", {vocab, dim}, true});
    matrices();
    perLayer("w1", {hidden, dim});
    perLayer("w2", {dim, hidden});
    perLayer("w3", {hidden, dim});
  }
  if (!c.sharedClassifier)
    blocks.push_back({"output", {vocab, dim}, true});
  return blocks;
}

std::vector<std::string> quill::llama2cCanonicalNames(const ModelConfig &c) {
  static const char *const kLayerKinds[] = {"attention_norm", "wq", "wk", "wv", "wo",
                                            "ffn_norm",       "w1", "w2", "w3"};
  std::vector<std::string> names{"tok_embeddings"};
  for (int l = 0; l < c.nLayers; ++l) {
    std::string prefix = "layers." + std::to_string(l) + ".";
    for (const char *kind : kLayerKinds)
      names.push_back(prefix + kind);
    // The other families' extras, after llama2.c's own.
    if (c.qkvBias)
      for (const char *kind : {"bq", "bk", "bv"})
        names.push_back(prefix + kind);
    if (c.qkNorm)
      for (const char *kind : {"q_norm", "k_norm"})
        names.push_back(prefix + kind);
  }
  names.push_back("norm");
  if (!c.ropeFrequencies.empty())
    names.push_back("rope_freqs");
  if (!c.sharedClassifier)
    names.push_back("output");
  return names;
}

ErrorOr<Llama2cCheckpoint> Llama2cCheckpoint::open(const std::string &path) {
  auto mapped = MappedFile::open(path);
  if (!mapped)
    return mapped.status();
  Llama2cCheckpoint ckpt;
  ckpt.file_ = mapped.take();
  const uint8_t *bytes = ckpt.file_.data();
  const uint64_t fileBytes = ckpt.file_.size();

  // The format is told apart by the v1 magic; anything else is read as legacy.
  uint32_t magic = 0;
  int version = 0;
  if (fileBytes >= 4)
    std::memcpy(&magic, bytes, 4);
  if (fileBytes >= 4 && magic == kLlama2cV1Magic)
    version = 1;
  const uint64_t headerBytes = version == 1 ? kLlama2cV1HeaderBytes : kLlama2cLegacyHeaderBytes;
  const char *kind = version == 1 ? "v1" : "legacy";
  if (fileBytes < headerBytes)
    return failAt(path, "file has " + std::to_string(fileBytes) + " bytes, shorter than the " +
                            std::to_string(headerBytes) + "-byte " + kind + " llama2.c header");

  const uint8_t *header = bytes;
  RawParams raw;
  size_t paramsOffset = 0;
  bool shared = true;
  if (version == 1) {
    int32_t fileVersion;
    std::memcpy(&fileVersion, header + 4, 4);
    if (fileVersion != 1)
      return failAt(path, "v1 header: unsupported version " + std::to_string(fileVersion) +
                              " (only version 1 is fp32 llama2.c)");
    paramsOffset = 8;
    uint8_t sharedByte = header[8 + sizeof(RawParams)];
    if (sharedByte > 1)
      return failAt(path, "v1 header: shared_classifier byte is " + std::to_string(sharedByte) +
                              ", must be 0 or 1");
    shared = sharedByte == 1;
  }
  std::memcpy(&raw, header + paramsOffset, sizeof(RawParams));
  if (version == 0 && raw.vocabSize < 0 && raw.vocabSize != INT32_MIN) {
    // Legacy files mark a separate classifier with a negative vocab size.
    shared = false;
    raw.vocabSize = -raw.vocabSize;
  }

  ModelConfig config;
  config.dim = raw.dim;
  config.hiddenDim = raw.hiddenDim;
  config.nLayers = raw.nLayers;
  config.nHeads = raw.nHeads;
  config.nKvHeads = raw.nKvHeads;
  config.vocabSize = raw.vocabSize;
  config.seqLen = raw.seqLen;
  config.sharedClassifier = shared;
  config.ropeTheta = 10000.0f;
  config.normEps = 1e-5f;
  config.bosId = 1;
  config.eosId = 2;
  if (Status s = validateLlama2cConfig(config); !s)
    return failAt(path, std::string(kind) + " header: " + s.message());
  ErrorOr<uint64_t> expected = llama2cFileBytes(config, version);
  if (!expected)
    return failAt(path, std::string(kind) + " header: " + expected.message());
  if (*expected != fileBytes)
    return failAt(path, std::string(kind) + " checkpoint: expected " + std::to_string(*expected) +
                            " bytes from the header, file has " + std::to_string(fileBytes));

  ckpt.config_ = config;
  ckpt.formatVersion_ = version;

  // Walk the file order once, then list tensors in canonical order.
  std::unordered_map<std::string, WeightTensor> byName;
  const auto *cursor = reinterpret_cast<const float *>(bytes + headerBytes);
  for (Llama2cBlock &block : llama2cFileLayout(config, version)) {
    WeightTensor t{block.name, std::move(block.shape), cursor};
    cursor += t.numElements();
    if (block.isWeight)
      byName.emplace(t.name, std::move(t));
  }
  for (const std::string &name : llama2cCanonicalNames(config)) {
    ckpt.indexByName_.emplace(name, ckpt.weights_.size());
    ckpt.weights_.push_back(std::move(byName.at(name)));
  }
  return ErrorOr<Llama2cCheckpoint>(std::move(ckpt));
}

const WeightTensor *Llama2cCheckpoint::find(const std::string &name) const {
  auto it = indexByName_.find(name);
  return it == indexByName_.end() ? nullptr : &weights_[it->second];
}
