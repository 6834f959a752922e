// Test-only model file writers and value encoders (see ModelWriters.h).
#include "ModelWriters.h"

#include "compiler/Import/Llama2cCheckpoint.h"
#include "compiler/Import/ModelSource.h"
#include "compiler/Import/Quantize.h"
#include "compiler/Import/SyntheticModel.h"
#include "compiler/Import/TensorConversion.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdlib.h>

namespace quill::test {

uint16_t toF16Bits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  const uint32_t sign = (bits >> 16) & 0x8000;
  float magnitude = std::fabs(value);
  if (magnitude >= 65520.0f)
    return uint16_t(sign | 0x7C00); // Rounds to infinity.
  if (magnitude < std::ldexp(1.0f, -14)) {
    // Subnormal: a multiple of 2^-24, rounded to nearest even.
    float units = std::nearbyint(magnitude * std::ldexp(1.0f, 24));
    return uint16_t(sign | uint32_t(units));
  }
  int exponent;
  float fraction = std::frexp(magnitude, &exponent); // [0.5, 1)
  // magnitude = (1 + m/1024) * 2^(exponent-1); m rounded to nearest even.
  float m = std::nearbyint((fraction * 2.0f - 1.0f) * 1024.0f);
  if (m == 1024.0f) {
    m = 0;
    ++exponent;
  }
  return uint16_t(sign | uint32_t(exponent - 1 + 15) << 10 | uint32_t(m));
}

uint16_t toBf16Bits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  uint32_t lower = bits & 0xFFFF, upper = bits >> 16;
  if (lower > 0x8000 || (lower == 0x8000 && (upper & 1)))
    ++upper;
  return uint16_t(upper);
}

float fromF16Bits(uint16_t bits) {
  int exponent = (bits >> 10) & 0x1F;
  int mantissa = bits & 0x3FF;
  float magnitude = exponent == 0 ? std::ldexp(float(mantissa), -24)
                                  : std::ldexp(float(1024 + mantissa), exponent - 25);
  return (bits & 0x8000) ? -magnitude : magnitude;
}

float fromBf16Bits(uint16_t bits) {
  uint32_t wide = uint32_t(bits) << 16;
  float f;
  std::memcpy(&f, &wide, 4);
  return f;
}

std::vector<uint8_t> quantizeQ8_0(const std::vector<float> &values,
                                  std::vector<float> *dequantized) {
  ByteBuilder out;
  if (dequantized)
    dequantized->clear();
  for (size_t block = 0; block < values.size() / 32; ++block) {
    const float *x = values.data() + block * 32;
    float amax = 0;
    for (int i = 0; i < 32; ++i)
      amax = std::max(amax, std::fabs(x[i]));
    const float scale = amax / 127.0f;
    const float inverse = scale != 0 ? 1.0f / scale : 0.0f;
    const uint16_t scaleBits = toF16Bits(scale);
    out.put<uint16_t>(scaleBits);
    for (int i = 0; i < 32; ++i) {
      int8_t q = int8_t(std::lround(x[i] * inverse));
      out.put<int8_t>(q);
      if (dequantized)
        dequantized->push_back(fromF16Bits(scaleBits) * float(q));
    }
  }
  return out.bytes;
}

std::vector<uint8_t> quantizeQ4_0(const std::vector<float> &values,
                                  std::vector<float> *dequantized) {
  ByteBuilder out;
  if (dequantized)
    dequantized->clear();
  for (size_t block = 0; block < values.size() / 32; ++block) {
    const float *x = values.data() + block * 32;
    float max = 0; // The first value of largest magnitude, signed.
    for (int i = 0; i < 32; ++i)
      if (std::fabs(x[i]) > std::fabs(max))
        max = x[i];
    const float scale = max / -8.0f;
    const float inverse = scale != 0 ? 1.0f / scale : 0.0f;
    const uint16_t scaleBits = toF16Bits(scale);
    out.put<uint16_t>(scaleBits);
    int q[32];
    for (int i = 0; i < 32; ++i) {
      const float scaled = x[i] * inverse;
      q[i] = std::min(15, int(std::trunc(scaled + 8.5f)));
    }
    for (int j = 0; j < 16; ++j)
      out.put<uint8_t>(uint8_t(q[j] | (q[j + 16] << 4)));
    if (dequantized)
      for (int i = 0; i < 32; ++i)
        dequantized->push_back(fromF16Bits(scaleBits) * float(q[i] - 8));
  }
  return out.bytes;
}

uint32_t ggmlTypeOf(const std::string &dtype) {
  static const std::map<std::string, uint32_t> types = {
      {"F32", kGgmlF32},   {"F16", kGgmlF16},   {"BF16", kGgmlBF16}, {"Q8_0", kGgmlQ8_0},
      {"Q4_0", kGgmlQ4_0}, {"Q4_K", kGgmlQ4_K}, {"Q6_K", kGgmlQ6_K}};
  auto it = types.find(dtype);
  return it == types.end() ? kGgmlF32 : it->second;
}

void GgufWriter::setAlignment(uint32_t alignment) {
  alignment_ = alignment;
  addU32("general.alignment", alignment);
}

static void putString(ByteBuilder &b, const std::string &s) { b.put<uint64_t>(s.size()).append(s); }

void GgufWriter::addRaw(const std::string &key, uint32_t type,
                        const std::vector<uint8_t> &payload) {
  putString(kv_, key);
  kv_.put<uint32_t>(type).append(payload);
  ++kvCount_;
}

void GgufWriter::addString(const std::string &key, const std::string &value) {
  ByteBuilder p;
  putString(p, value);
  addRaw(key, kString, p.bytes);
}

void GgufWriter::addU32(const std::string &key, uint32_t value) {
  addRaw(key, kU32, ByteBuilder().put(value).bytes);
}

void GgufWriter::addF32(const std::string &key, float value) {
  addRaw(key, kF32, ByteBuilder().put(value).bytes);
}

void GgufWriter::addBool(const std::string &key, bool value) {
  addRaw(key, kBool, ByteBuilder().put<uint8_t>(value).bytes);
}

void GgufWriter::addStrings(const std::string &key, const std::vector<std::string> &v) {
  ByteBuilder p;
  p.put<uint32_t>(kString).put<uint64_t>(v.size());
  for (const std::string &s : v)
    putString(p, s);
  addRaw(key, kArray, p.bytes);
}

void GgufWriter::addF32s(const std::string &key, const std::vector<float> &v) {
  ByteBuilder p;
  p.put<uint32_t>(kF32).put<uint64_t>(v.size());
  for (float f : v)
    p.put(f);
  addRaw(key, kArray, p.bytes);
}

void GgufWriter::addI32s(const std::string &key, const std::vector<int32_t> &v) {
  ByteBuilder p;
  p.put<uint32_t>(kI32).put<uint64_t>(v.size());
  for (int32_t i : v)
    p.put(i);
  addRaw(key, kArray, p.bytes);
}

void GgufWriter::addTensor(const std::string &name, std::vector<uint64_t> dims, uint32_t ggmlType,
                           std::vector<uint8_t> data) {
  tensors_.push_back({name, std::move(dims), ggmlType, std::move(data)});
}

std::vector<uint8_t> GgufWriter::bytes() const {
  ByteBuilder out;
  out.append(std::string("GGUF"));
  out.put<uint32_t>(version_);
  out.put<uint64_t>(tensors_.size()).put<uint64_t>(kvCount_);
  out.append(kv_.bytes);
  auto align = [&](uint64_t n) { return (n + alignment_ - 1) / alignment_ * alignment_; };
  uint64_t offset = 0;
  for (const Tensor &t : tensors_) {
    putString(out, t.name);
    out.put<uint32_t>(uint32_t(t.dims.size()));
    for (uint64_t d : t.dims)
      out.put<uint64_t>(d);
    out.put<uint32_t>(t.type).put<uint64_t>(offset);
    offset = align(offset + t.data.size());
  }
  out.bytes.resize(align(out.bytes.size()), 0);
  for (const Tensor &t : tensors_) {
    out.append(t.data);
    out.bytes.resize(align(out.bytes.size()), 0);
  }
  return out.bytes;
}

std::vector<uint8_t> safetensorsBytes(const std::string &header, const std::vector<uint8_t> &data) {
  ByteBuilder out;
  out.put<uint64_t>(header.size()).append(header).append(data);
  return out.bytes;
}

std::vector<uint8_t> safetensorsBytes(const std::vector<SafetensorSpec> &tensors) {
  std::string header = "{\"__metadata__\":{\"format\":\"pt\"}";
  std::vector<uint8_t> data;
  for (const SafetensorSpec &t : tensors) {
    header += ",\"" + t.name + "\":{\"dtype\":\"" + t.dtype + "\",\"shape\":[";
    for (size_t i = 0; i < t.shape.size(); ++i)
      header += (i ? "," : "") + std::to_string(t.shape[i]);
    header += "],\"data_offsets\":[" + std::to_string(data.size()) + "," +
              std::to_string(data.size() + t.data.size()) + "]}";
    data.insert(data.end(), t.data.begin(), t.data.end());
  }
  header += "}";
  // Like the reference writer, pad the header with spaces to 8 bytes.
  header.resize((header.size() + 7) / 8 * 8, ' ');
  return safetensorsBytes(header, data);
}

TensorMap syntheticTensors(const ModelConfig &config, uint64_t seed, float (*round)(float)) {
  TensorMap tensors;
  for (const Llama2cBlock &block : llama2cFileLayout(config, 1)) {
    int64_t count = 1;
    for (int64_t d : block.shape)
      count *= d;
    std::vector<float> values(static_cast<size_t>(count));
    fillSyntheticTensor(block.name, block.shape, seed, 0, values.data(), count);
    for (float &v : values)
      v = round(v);
    tensors[block.name] = std::move(values);
  }
  return tensors;
}

void writeLlama2cV1(const std::string &path, const ModelConfig &c, const TensorMap &tensors) {
  ByteBuilder out;
  out.put<uint32_t>(kLlama2cV1Magic).put<int32_t>(1);
  for (int32_t field : {c.dim, c.hiddenDim, c.nLayers, c.nHeads, c.nKvHeads, c.vocabSize, c.seqLen})
    out.put(field);
  out.put<uint8_t>(c.sharedClassifier ? 1 : 0);
  out.bytes.resize(kLlama2cV1HeaderBytes, 0);
  for (const Llama2cBlock &block : llama2cFileLayout(c, 1))
    out.append(f32Bytes(tensors.at(block.name)));
  writeBytes(path, out.bytes);
}

std::vector<float> permuteToRotateHalf(const std::vector<float> &values, int64_t rows, int64_t cols,
                                       int64_t headDim) {
  std::vector<float> out(values.size());
  const int64_t half = headDim / 2;
  for (int64_t h = 0; h < rows / headDim; ++h)
    for (int64_t i = 0; i < half; ++i)
      for (int64_t j = 0; j < 2; ++j)
        std::copy_n(values.begin() + (h * headDim + 2 * i + j) * cols, cols,
                    out.begin() + (h * headDim + j * half + i) * cols);
  return out;
}

SmallByteLevelVocab smallByteLevelVocab() {
  SmallByteLevelVocab v;
  for (int b = 0; b < 256; ++b)
    v.pieces.push_back(std::string(1, char(b)));
  for (const char *p : {"he", "ll", "hell", "hello", " w", "or", " wor", "ld", " world", "<|end|>",
                        "<|bos|>", "el", "hlo"})
    v.pieces.push_back(p);
  v.merges = {{"h", "e"}, {"l", "l"},   {"he", "ll"}, {"hell", "o"},  {" ", "w"},
              {"o", "r"}, {" w", "or"}, {"l", "d"},   {" wor", "ld"}, {"e", "l"}};
  v.controlIds = {265, 266};
  return v;
}

namespace {

struct LayerName {
  const char *quill, *gguf, *hf;
};
const LayerName kLayerNames[] = {{"attention_norm", "attn_norm.weight", "input_layernorm.weight"},
                                 {"wq", "attn_q.weight", "self_attn.q_proj.weight"},
                                 {"wk", "attn_k.weight", "self_attn.k_proj.weight"},
                                 {"wv", "attn_v.weight", "self_attn.v_proj.weight"},
                                 {"wo", "attn_output.weight", "self_attn.o_proj.weight"},
                                 {"ffn_norm", "ffn_norm.weight", "post_attention_layernorm.weight"},
                                 {"w1", "ffn_gate.weight", "mlp.gate_proj.weight"},
                                 {"w2", "ffn_down.weight", "mlp.down_proj.weight"},
                                 {"w3", "ffn_up.weight", "mlp.up_proj.weight"},
                                 {"bq", "attn_q.bias", "self_attn.q_proj.bias"},
                                 {"bk", "attn_k.bias", "self_attn.k_proj.bias"},
                                 {"bv", "attn_v.bias", "self_attn.v_proj.bias"},
                                 {"q_norm", "attn_q_norm.weight", "self_attn.q_norm.weight"},
                                 {"k_norm", "attn_k_norm.weight", "self_attn.k_norm.weight"}};

/// (layer, index into kLayerNames) of a per-layer canonical name.
bool splitLayerName(const std::string &canonical, std::string &layer, size_t &kind) {
  size_t dot = canonical.find('.', 7);
  if (canonical.compare(0, 7, "layers.") != 0 || dot == std::string::npos)
    return false;
  layer = canonical.substr(7, dot - 7);
  for (kind = 0; kind < std::size(kLayerNames); ++kind)
    if (canonical.substr(dot + 1) == kLayerNames[kind].quill)
      return true;
  return false;
}

/// Whether rotate-half RoPE pairs the rows (or elements) of `canonical`.
bool isRotated(const std::string &canonical) {
  for (const char *suffix : {".wq", ".wk", ".bq", ".bk", ".q_norm", ".k_norm"}) {
    size_t n = std::strlen(suffix);
    if (canonical.size() > n && canonical.compare(canonical.size() - n, n, suffix) == 0)
      return true;
  }
  return false;
}

/// `values` of `canonical` in rotate-half order (matrices by rows, vectors
/// by elements), or as they are when RoPE does not pair them.
std::vector<float> inRotateHalfOrder(const ModelConfig &c, const std::string &canonical,
                                     const std::vector<float> &values) {
  if (!isRotated(canonical))
    return values;
  std::vector<int64_t> shape = canonicalShape(c, canonical);
  int64_t cols = shape.size() == 2 ? shape[1] : 1;
  return permuteToRotateHalf(values, shape[0], cols, c.headDim());
}

} // namespace

std::string ggufTensorName(const std::string &canonical) {
  if (canonical == "tok_embeddings")
    return "token_embd.weight";
  if (canonical == "norm")
    return "output_norm.weight";
  if (canonical == "output")
    return "output.weight";
  std::string layer;
  size_t kind;
  if (!splitLayerName(canonical, layer, kind))
    return canonical;
  return "blk." + layer + "." + kLayerNames[kind].gguf;
}

std::string hfTensorName(const std::string &canonical) {
  if (canonical == "tok_embeddings")
    return "model.embed_tokens.weight";
  if (canonical == "norm")
    return "model.norm.weight";
  if (canonical == "output")
    return "lm_head.weight";
  std::string layer;
  size_t kind;
  if (!splitLayerName(canonical, layer, kind))
    return canonical;
  return "model.layers." + layer + "." + kLayerNames[kind].hf;
}

EncodedTensor encodeTensor(const std::vector<float> &values, const std::string &dtype) {
  EncodedTensor t;
  if (dtype == "Q8_0") {
    t.bytes = quantizeQ8_0(values, &t.stored);
  } else if (dtype == "Q4_0") {
    t.bytes = quantizeQ4_0(values, &t.stored);
  } else if (dtype == "Q4_K" || dtype == "Q6_K") {
    const SourceDType type = dtype == "Q4_K" ? SourceDType::Q4_K : SourceDType::Q6_K;
    const auto count = int64_t(values.size());
    t.bytes.resize(size_t(dtypeBytes(type, uint64_t(count)).value()));
    quantizeRow(type, values.data(), count, t.bytes.data());
    t.stored.resize(values.size());
    convertToFloat(type, t.bytes.data(), count, t.stored.data());
  } else if (dtype == "F16") {
    t.bytes = f16Bytes(values);
    for (float x : values)
      t.stored.push_back(fromF16Bits(toF16Bits(x)));
  } else if (dtype == "BF16") {
    t.bytes = bf16Bytes(values);
    for (float x : values)
      t.stored.push_back(fromBf16Bits(toBf16Bits(x)));
  } else {
    t.bytes = f32Bytes(values);
    t.stored = values;
  }
  return t;
}

// llama.cpp's Q4_K_M type mix, written here from llama-quant.cpp so that
// the test files do not take the compiler's own rule
// (quill-quantize-weights).

bool q4KMUsesMoreBits(int layer, int nLayers) {
  return layer < nLayers / 8 || layer >= 7 * nLayers / 8 || (layer - nLayers / 8) % 3 == 2;
}

namespace {

/// llama.cpp's tensor_type_fallback for rows of `columns` elements: a type
/// whose blocks do not tile a row falls back to one of 32-element blocks,
/// and to F16 when even those do not tile it. llama.cpp maps Q4_K -> Q5_0
/// and Q6_K -> Q8_0; Quill has no Q5_0 and uses Q4_0 (the same block size,
/// one bit fewer). llama.cpp has no fallback for a Q8_0 / Q4_0 target (it
/// throws) and uses F16 only after a K-type fallback; Quill uses F16 for
/// those too (only `output` can meet it: typed Q8_0 when columns % 256 != 0).
SourceDType fallback(SourceDType type, int64_t columns) {
  if (columns % blockElements(type) == 0)
    return type;
  if (type == SourceDType::Q4_K)
    type = SourceDType::Q4_0;
  else if (type == SourceDType::Q6_K)
    type = SourceDType::Q8_0;
  return columns % blockElements(type) == 0 ? type : SourceDType::F16;
}

bool endsWith(const std::string &s, const char *suffix) {
  const size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

} // namespace

SourceDType q4KMixType(const std::string &canonicalName, int layer, int nLayers, int64_t columns,
                       bool sharedClassifier) {
  // 1-D norms are never quantized (tensor_allows_quantization: fewer than 2
  // dimensions, or a name with "_norm.weight"); llama.cpp keeps their F32.
  if (endsWith(canonicalName, "norm"))
    return SourceDType::F32;
  // The classifier, and a tied embedding in its place: Q6_K, or Q8_0 when
  // the row is not whole 256-element blocks (the output branch of
  // llama_tensor_get_type_impl).
  if (canonicalName == "output" || (sharedClassifier && canonicalName == "tok_embeddings"))
    return fallback(columns % kQ6_KBlockElements == 0 ? SourceDType::Q6_K : SourceDType::Q8_0,
                    columns);
  // attn_v and ffn_down: Q6_K on use_more_bits layers (llama.cpp counts
  // these tensors in layer order, so its counter is the layer index).
  const bool moreBitsKind = endsWith(canonicalName, ".wv") || endsWith(canonicalName, ".w2");
  if (moreBitsKind && q4KMUsesMoreBits(layer, nLayers))
    return fallback(SourceDType::Q6_K, columns);
  // Everything else, the embedding included: the mix's default, Q4_K.
  return fallback(SourceDType::Q4_K, columns);
}

std::vector<uint8_t> llamaGgufBytes(const ModelConfig &c, const TensorMap &values,
                                    const std::string &matrixType, uint32_t version,
                                    TensorMap *stored,
                                    const std::function<void(GgufWriter &)> &extra) {
  return familyGgufBytes("llama", c, values, matrixType, version, stored, extra);
}

std::vector<uint8_t> familyGgufBytes(const std::string &arch, const ModelConfig &c,
                                     const TensorMap &values, const std::string &matrixType,
                                     uint32_t version, TensorMap *stored,
                                     const std::function<void(GgufWriter &)> &extra) {
  GgufWriter w(version);
  const std::string k = arch + ".";
  w.addString("general.architecture", arch);
  w.addU32(k + "embedding_length", uint32_t(c.dim));
  w.addU32(k + "block_count", uint32_t(c.nLayers));
  w.addU32(k + "feed_forward_length", uint32_t(c.hiddenDim));
  w.addU32(k + "attention.head_count", uint32_t(c.nHeads));
  w.addU32(k + "attention.head_count_kv", uint32_t(c.nKvHeads));
  w.addU32(k + "context_length", uint32_t(c.seqLen));
  w.addF32(k + "rope.freq_base", c.ropeTheta);
  w.addF32(k + "attention.layer_norm_rms_epsilon", c.normEps);
  w.addU32(k + "rope.dimension_count", uint32_t(c.headDim()));
  if (c.headDimension > 0) {
    w.addU32(k + "attention.key_length", uint32_t(c.headDim()));
    w.addU32(k + "attention.value_length", uint32_t(c.headDim()));
  }
  if (extra)
    extra(w);
  // llama.cpp runs Qwen with NeoX RoPE: their Q/K rows stay rotate-half.
  const bool rotateHalf = arch == "qwen2" || arch == "qwen3";
  for (const std::string &name : llama2cCanonicalNames(c)) {
    std::vector<int64_t> shape = canonicalShape(c, name);
    std::string dtype = shape.size() == 1 ? "F32" : matrixType;
    if (dtype == "Q4_K_M") {
      const int layer = name.compare(0, 7, "layers.") == 0 ? std::atoi(name.c_str() + 7) : -1;
      dtype = dtypeName(q4KMixType(name, layer, c.nLayers, shape.back(), c.sharedClassifier));
    }
    EncodedTensor t = encodeTensor(values.at(name), dtype);
    if (rotateHalf && isRotated(name)) // Per element: permuting then encoding permutes the bytes.
      t.bytes = encodeTensor(inRotateHalfOrder(c, name, values.at(name)), dtype).bytes;
    w.addTensor(ggufTensorName(name), std::vector<uint64_t>(shape.rbegin(), shape.rend()),
                ggmlTypeOf(dtype), std::move(t.bytes));
    if (stored)
      (*stored)[name] = std::move(t.stored);
  }
  return w.bytes();
}

std::string hfConfigJson(const ModelConfig &c, const std::string &extra) {
  return hfFamilyConfigJson("llama", "LlamaForCausalLM", c, extra);
}

std::string hfFamilyConfigJson(const std::string &modelType, const std::string &architecture,
                               const ModelConfig &c, const std::string &extra) {
  std::string s = "{\n  \"architectures\": [\"" + architecture + "\"],\n" + "  \"model_type\": \"" +
                  modelType + "\",\n";
  auto field = [&](const char *key, const std::string &value) {
    s += std::string("  \"") + key + "\": " + value + ",\n";
  };
  char number[64];
  field("hidden_size", std::to_string(c.dim));
  field("intermediate_size", std::to_string(c.hiddenDim));
  field("num_hidden_layers", std::to_string(c.nLayers));
  field("num_attention_heads", std::to_string(c.nHeads));
  field("num_key_value_heads", std::to_string(c.nKvHeads));
  field("vocab_size", std::to_string(c.vocabSize));
  field("max_position_embeddings", std::to_string(c.seqLen));
  std::snprintf(number, sizeof number, "%.9g", double(c.normEps));
  field("rms_norm_eps", number);
  std::snprintf(number, sizeof number, "%.9g", double(c.ropeTheta));
  field("rope_theta", number);
  if (c.headDimension > 0)
    field("head_dim", std::to_string(c.headDimension));
  field("hidden_act", "\"silu\"");
  field("rope_scaling", "null");
  field("bos_token_id", std::to_string(c.bosId));
  field("eos_token_id", std::to_string(c.eosId));
  s += extra;
  s += "  \"tie_word_embeddings\": " + std::string(c.sharedClassifier ? "true" : "false") + "\n}\n";
  return s;
}

std::vector<SafetensorSpec> hfTensorSpecs(const ModelConfig &c, const TensorMap &values,
                                          const std::string &dtype, TensorMap *stored) {
  std::vector<SafetensorSpec> specs;
  for (const std::string &name : llama2cCanonicalNames(c)) {
    std::vector<int64_t> shape = canonicalShape(c, name);
    EncodedTensor t = encodeTensor(values.at(name), dtype);
    if (isRotated(name)) // Stored rotate-half; the encoding is per element, so
                         // permuting the values and re-encoding permutes the bytes.
      t.bytes = encodeTensor(inRotateHalfOrder(c, name, values.at(name)), dtype).bytes;
    specs.push_back({hfTensorName(name), dtype, shape, std::move(t.bytes)});
    if (stored)
      (*stored)[name] = std::move(t.stored);
  }
  return specs;
}

void writeHfCheckpoint(const std::string &dir, const ModelConfig &c,
                       const std::vector<SafetensorSpec> &specs, int shards,
                       const std::string &extraConfig) {
  writeText(dir + "/config.json", hfConfigJson(c, extraConfig));
  if (shards <= 1) {
    writeBytes(dir + "/model.safetensors", safetensorsBytes(specs));
    return;
  }
  std::string index = "{\"metadata\": {\"total_size\": 0}, \"weight_map\": {";
  bool first = true;
  for (int s = 0; s < shards; ++s) {
    std::vector<SafetensorSpec> part;
    char file[64];
    std::snprintf(file, sizeof file, "model-%05d-of-%05d.safetensors", s + 1, shards);
    for (size_t i = size_t(s); i < specs.size(); i += size_t(shards)) {
      part.push_back(specs[i]);
      index += std::string(first ? "" : ", ") + "\"" + specs[i].name + "\": \"" + file + "\"";
      first = false;
    }
    writeBytes(dir + "/" + file, safetensorsBytes(part));
  }
  writeText(dir + "/model.safetensors.index.json", index + "}}");
}

std::string gpt2Printable(const std::string &bytes) {
  static const std::vector<uint32_t> table = [] {
    std::vector<int> printable;
    for (int b = '!'; b <= '~'; ++b)
      printable.push_back(b);
    for (int b = 0xA1; b <= 0xAC; ++b)
      printable.push_back(b);
    for (int b = 0xAE; b <= 0xFF; ++b)
      printable.push_back(b);
    std::vector<uint32_t> t(256);
    for (int b : printable)
      t[b] = uint32_t(b);
    uint32_t n = 0;
    for (int b = 0; b < 256; ++b)
      if (std::find(printable.begin(), printable.end(), b) == printable.end())
        t[b] = 256 + n++;
    return t;
  }();
  std::string out;
  for (unsigned char b : bytes) {
    uint32_t cp = table[b];
    if (cp < 0x80) {
      out += char(cp);
    } else {
      out += char(0xC0 | (cp >> 6));
      out += char(0x80 | (cp & 0x3F));
    }
  }
  return out;
}

std::vector<uint8_t> f32Bytes(const std::vector<float> &values) {
  ByteBuilder b;
  for (float v : values)
    b.put(v);
  return b.bytes;
}

std::vector<uint8_t> f16Bytes(const std::vector<float> &values) {
  ByteBuilder b;
  for (float v : values)
    b.put(toF16Bits(v));
  return b.bytes;
}

std::vector<uint8_t> bf16Bytes(const std::vector<float> &values) {
  ByteBuilder b;
  for (float v : values)
    b.put(toBf16Bits(v));
  return b.bytes;
}

const std::string &scratchRoot() {
  struct Root {
    std::string path;
    Root() {
      std::string pattern =
          (std::filesystem::temp_directory_path() / "quill-formats-XXXXXX").string();
      path = ::mkdtemp(pattern.data());
    }
    ~Root() {
      std::error_code ignored;
      std::filesystem::remove_all(path, ignored);
    }
  };
  static const Root root;
  return root.path;
}

std::vector<uint8_t> readBytes(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

void writeBytes(const std::string &path, const std::vector<uint8_t> &bytes) {
  // A fresh file rather than a truncated one: ext4 flushes a file rewritten
  // after truncation on close, which makes loops over thousands of variants
  // wait on the disk.
  std::remove(path.c_str());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char *>(bytes.data()), std::streamsize(bytes.size()));
}

void writeText(const std::string &path, const std::string &text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

} // namespace quill::test
