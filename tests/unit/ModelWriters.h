// Test-only writers of model files (GGUF, safetensors, llama2.c v1) and
// value encoders (fp32 -> F16 / BF16 / Q8_0), written from the formats'
// specifications independently of the importers they exercise.
#pragma once

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
  kGgmlQ8_0 = 8,
  kGgmlQ4_K = 12,
  kGgmlBF16 = 30
};

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

/// `values` encoded as `dtype` ("F32", "F16", "BF16", "Q8_0"), and the fp32
/// values the encoding stands for (what an importer must give back).
struct EncodedTensor {
  std::vector<uint8_t> bytes;
  std::vector<float> stored;
};
EncodedTensor encodeTensor(const std::vector<float> &values, const std::string &dtype);

/// A llama GGUF of `values`: hyperparameters from `c`, matrices and the
/// embedding as `matrixType`, norms F32 (as llama.cpp stores them), and
/// `extra` metadata (a tokenizer, overrides). `stored` receives the values
/// import must return, by canonical name.
std::vector<uint8_t> llamaGgufBytes(const ModelConfig &c, const TensorMap &values,
                                    const std::string &matrixType, uint32_t version,
                                    TensorMap *stored,
                                    const std::function<void(GgufWriter &)> &extra = {});

/// config.json for `c` (LlamaForCausalLM), with `extra` raw JSON members
/// inserted before the last one (a repeated key overrides: the reader keeps
/// the last).
std::string hfConfigJson(const ModelConfig &c, const std::string &extra = "");
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
