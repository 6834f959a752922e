// Test-only writers of model files (GGUF, safetensors, llama2.c v1) and
// value encoders (fp32 -> F16 / BF16 / Q8_0 / Q4_0), written from the
// formats' specifications independently of the importers they exercise.
// Q4_K and Q6_K, whose quantizer's bytes no specification fixes, are
// encoded with Quill's quantizeRow and read back with convertToFloat (both
// checked against the published layouts in TensorConversionTest and
// QuantizeTest). llama.cpp's Q4_K_M type mix is written here too, apart
// from the compiler's (quill-quantize-weights).
#pragma once

#include "compiler/Import/TensorConversion.h"
#include "runtime/artifact/ModelConfig.h"

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace quill::test {

/// A little-endian byte builder.
class ByteBuilder {
public:
  template <typename T> ByteBuilder &put(T value) {
    const auto *p = reinterpret_cast<const uint8_t *>(&value);
    bytes.insert(bytes.end(), p, p + sizeof(T));
    return *this;
  }
  ByteBuilder &append(const std::vector<uint8_t> &more) {
    bytes.insert(bytes.end(), more.begin(), more.end());
    return *this;
  }
  ByteBuilder &append(const std::string &more) {
    bytes.insert(bytes.end(), more.begin(), more.end());
    return *this;
  }
  std::vector<uint8_t> bytes;
};

/// fp32 -> IEEE binary16 bits, round to nearest even (finite inputs).
uint16_t toF16Bits(float value);
/// fp32 -> bfloat16 bits, round to nearest even.
uint16_t toBf16Bits(float value);
/// The float a F16 / BF16 bit pattern stands for, by this file's own
/// arithmetic (ldexp), not the importer's.
float fromF16Bits(uint16_t bits);
float fromBf16Bits(uint16_t bits);

/// `values` (a multiple of 32) as Q8_0 blocks, llama.cpp's way: scale =
/// max|x| / 127 stored as F16, q = round(x / scale). `dequantized` receives
/// what the blocks stand for: F16(scale) * q.
std::vector<uint8_t> quantizeQ8_0(const std::vector<float> &values,
                                  std::vector<float> *dequantized);
/// `values` (a multiple of 32) as Q4_0 blocks, ggml's quantize_row_q4_0_ref
/// way: `max` the first value of largest magnitude, scale = max / -8 stored
/// as F16, q = min(15, trunc(x / scale + 8.5)), byte j = q[j] | q[j+16] << 4.
/// `dequantized` receives F16(scale) * (q - 8).
std::vector<uint8_t> quantizeQ4_0(const std::vector<float> &values,
                                  std::vector<float> *dequantized);

/// GGUF value types and ggml tensor types used by the tests.
enum GgufValueType : uint32_t {
  kU8 = 0,
  kI8,
  kU16,
  kI16,
  kU32,
  kI32,
  kF32,
  kBool,
  kString,
  kArray,
  kU64,
  kI64,
  kF64
};
enum GgmlType : uint32_t {
  kGgmlF32 = 0,
  kGgmlF16 = 1,
  kGgmlQ4_0 = 2,
  kGgmlQ8_0 = 8,
  kGgmlQ4_K = 12,
  kGgmlQ6_K = 14,
  kGgmlBF16 = 30
};
/// The ggml type number of "F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_K" or
/// "Q6_K" (F32 for anything else).
uint32_t ggmlTypeOf(const std::string &dtype);

/// Assembles a GGUF file.
class GgufWriter {
public:
  explicit GgufWriter(uint32_t version = 3) : version_(version) {}
  void setAlignment(uint32_t alignment); ///< Also writes general.alignment.
  void addString(const std::string &key, const std::string &value);
  void addU32(const std::string &key, uint32_t value);
  void addF32(const std::string &key, float value);
  void addBool(const std::string &key, bool value);
  void addStrings(const std::string &key, const std::vector<std::string> &v);
  void addF32s(const std::string &key, const std::vector<float> &v);
  void addI32s(const std::string &key, const std::vector<int32_t> &v);
  /// A key with a hand-encoded value (type + payload bytes).
  void addRaw(const std::string &key, uint32_t type, const std::vector<uint8_t> &payload);
  /// `dims` in GGUF order (ne[0], the row length, first).
  void addTensor(const std::string &name, std::vector<uint64_t> dims, uint32_t ggmlType,
                 std::vector<uint8_t> data);
  std::vector<uint8_t> bytes() const;

private:
  uint32_t version_;
  uint32_t alignment_ = 32;
  uint64_t kvCount_ = 0;
  ByteBuilder kv_;
  struct Tensor {
    std::string name;
    std::vector<uint64_t> dims;
    uint32_t type;
    std::vector<uint8_t> data;
  };
  std::vector<Tensor> tensors_;
};

/// One tensor for a safetensors file; `data` as stored.
struct SafetensorSpec {
  std::string name, dtype;
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;
};
/// A safetensors file holding `tensors` back to back in the given order.
std::vector<uint8_t> safetensorsBytes(const std::vector<SafetensorSpec> &tensors);
/// The same with a hand-written header (for lying headers) and data.
std::vector<uint8_t> safetensorsBytes(const std::string &header, const std::vector<uint8_t> &data);

/// Canonical tensor name -> row-major fp32 values.
using TensorMap = std::map<std::string, std::vector<float>>;

/// Synthetic weights for `config` (SyntheticModel's values) under canonical
/// names, each passed through `round` (e.g. to F16 precision).
TensorMap syntheticTensors(const ModelConfig &config, uint64_t seed, float (*round)(float));

/// Writes a llama2.c version-1 checkpoint of `tensors` (the test oracle's
/// input: ReferenceModel reads it with its own reader).
void writeLlama2cV1(const std::string &path, const ModelConfig &config, const TensorMap &tensors);

/// Rows of a [rows, cols] Q or K matrix permuted into Hugging Face's
/// rotate-half order: stored row h*hd + j*hd/2 + i = row h*hd + 2i + j.
std::vector<float> permuteToRotateHalf(const std::vector<float> &values, int64_t rows, int64_t cols,
                                       int64_t headDim);

/// The byte-level vocabulary the tokenizer tests share (raw bytes): ids
/// 0-255 the single bytes, then 256 "he", 257 "ll", 258 "hell", 259 "hello",
/// 260 " w", 261 "or", 262 " wor", 263 "ld", 264 " world", 265 "<|end|>"
/// and 266 "<|bos|>" (control tokens), 267 "el", 268 "hlo"; merges by rank:
/// h+e, l+l, he+ll, hell+o, ' '+w, o+r, ' 'w+or, l+d, ' 'wor+ld, e+l.
/// Hand-worked ids: "hello world" -> 259 264; "hel" -> 256 'l'.
struct SmallByteLevelVocab {
  std::vector<std::string> pieces;
  std::vector<std::pair<std::string, std::string>> merges;
  std::vector<int> controlIds;
};
SmallByteLevelVocab smallByteLevelVocab();

/// GGUF's and Hugging Face's names for a canonical tensor name.
std::string ggufTensorName(const std::string &canonical);
std::string hfTensorName(const std::string &canonical);

/// `values` encoded as `dtype` ("F32", "F16", "BF16", "Q8_0", "Q4_0",
/// "Q4_K", "Q6_K"), and the fp32 values the encoding stands for (what an
/// importer must give back). The block types need rows whose length is a
/// multiple of their block (32, or 256 for the K types).
struct EncodedTensor {
  std::vector<uint8_t> bytes;
  std::vector<float> stored;
};
EncodedTensor encodeTensor(const std::vector<float> &values, const std::string &dtype);

/// The type llama.cpp's Q4_K_M mix (llama-quant.cpp, llama_tensor_get_type
/// with LLAMA_FTYPE_MOSTLY_Q4_K_M, llama architecture, no experts) gives the
/// tensor `canonicalName` (Quill's names: tok_embeddings, norm, output,
/// layers.N.{attention_norm, wq, wk, wv, wo, ffn_norm, w1, w2, w3}) of layer
/// `layer` of `nLayers`, whose rows have `columns` elements. With
/// `sharedClassifier` (no `output` tensor) the embedding is typed as the
/// output, as llama.cpp does for tied embeddings. Rows that blocks do not
/// tile fall back as llama.cpp's tensor_type_fallback does, with Q4_0 for
/// its Q5_0 (see Quantize.cpp). Not modelled, for want of Q5_K or of the
/// model kinds: the 70B bump of attn_v to Q5_K, the expert and Falcon rules.
SourceDType q4KMixType(const std::string &canonicalName, int layer, int nLayers, int64_t columns,
                       bool sharedClassifier = false);

/// llama.cpp's use_more_bits: the layers of attn_v and ffn_down that Q4_K_M
/// gives Q6_K: the first and last eighth, and every third one between.
bool q4KMUsesMoreBits(int layer, int nLayers);

/// A llama GGUF of `values`: hyperparameters from `c`, matrices and the
/// embedding as `matrixType` (an encodeTensor type, or "Q4_K_M" for
/// llama.cpp's mix, q4KMixType), norms F32 (as llama.cpp stores them), and
/// `extra` metadata (a tokenizer, overrides). `stored` receives the values
/// import must return, by canonical name.
std::vector<uint8_t> llamaGgufBytes(const ModelConfig &c, const TensorMap &values,
                                    const std::string &matrixType, uint32_t version,
                                    TensorMap *stored,
                                    const std::function<void(GgufWriter &)> &extra = {});

/// The same for another GGUF architecture of the Llama family ("qwen2",
/// "qwen3"): <arch>.* keys, key_length when the heads are wider than
/// dim / heads, and for Qwen the Q/K rows, biases and q/k norms in
/// rotate-half order (llama.cpp runs Qwen with NeoX RoPE).
std::vector<uint8_t> familyGgufBytes(const std::string &arch, const ModelConfig &c,
                                     const TensorMap &values, const std::string &matrixType,
                                     uint32_t version, TensorMap *stored,
                                     const std::function<void(GgufWriter &)> &extra = {});

/// config.json for `c` (LlamaForCausalLM), with `extra` raw JSON members
/// inserted before the last one (a repeated key overrides: the reader keeps
/// the last).
std::string hfConfigJson(const ModelConfig &c, const std::string &extra = "");
/// The same for another model type and class ("qwen3", "Qwen3ForCausalLM").
std::string hfFamilyConfigJson(const std::string &modelType, const std::string &architecture,
                               const ModelConfig &c, const std::string &extra = "");
/// The tensors of `values` as a Hugging Face checkpoint stores them: HF
/// names, Q/K rows in rotate-half order, values in `dtype` ("F32", "F16",
/// "BF16"). `stored` receives what import must return (Quill's layout).
std::vector<SafetensorSpec> hfTensorSpecs(const ModelConfig &c, const TensorMap &values,
                                          const std::string &dtype, TensorMap *stored);
/// Writes config.json and model.safetensors into `dir`, or `shards` files
/// named model-0000i-of-0000n.safetensors with model.safetensors.index.json.
void writeHfCheckpoint(const std::string &dir, const ModelConfig &c,
                       const std::vector<SafetensorSpec> &specs, int shards = 1,
                       const std::string &extraConfig = "");

/// Raw bytes in GPT-2's printable spelling, built as GPT-2's bytes_to_unicode
/// defines it (the printable bytes first, then 256 + n for the rest).
std::string gpt2Printable(const std::string &bytes);

/// Little-endian bytes of fp32, F16 or BF16 values.
std::vector<uint8_t> f32Bytes(const std::vector<float> &values);
std::vector<uint8_t> f16Bytes(const std::vector<float> &values);
std::vector<uint8_t> bf16Bytes(const std::vector<float> &values);

/// A directory under the system temp dir, unique to this process and removed
/// (with everything in it) when the process exits.
const std::string &scratchRoot();

std::vector<uint8_t> readBytes(const std::string &path);
void writeBytes(const std::string &path, const std::vector<uint8_t> &bytes);
void writeText(const std::string &path, const std::string &text);

} // namespace quill::test
