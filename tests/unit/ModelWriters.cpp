// Test-only model file writers and value encoders (see ModelWriters.h).
#include "ModelWriters.h"

#include "compiler/Import/Llama2cCheckpoint.h"
#include "compiler/Import/SyntheticModel.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>

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
  float magnitude = exponent == 0
                        ? std::ldexp(float(mantissa), -24)
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

void GgufWriter::setAlignment(uint32_t alignment) {
  alignment_ = alignment;
  addU32("general.alignment", alignment);
}

static void putString(ByteBuilder &b, const std::string &s) {
  b.put<uint64_t>(s.size()).append(s);
}

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

void GgufWriter::addStrings(const std::string &key,
                            const std::vector<std::string> &v) {
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

void GgufWriter::addI32s(const std::string &key,
                         const std::vector<int32_t> &v) {
  ByteBuilder p;
  p.put<uint32_t>(kI32).put<uint64_t>(v.size());
  for (int32_t i : v)
    p.put(i);
  addRaw(key, kArray, p.bytes);
}

void GgufWriter::addTensor(const std::string &name, std::vector<uint64_t> dims,
                           uint32_t ggmlType, std::vector<uint8_t> data) {
  tensors_.push_back({name, std::move(dims), ggmlType, std::move(data)});
}

std::vector<uint8_t> GgufWriter::bytes() const {
  ByteBuilder out;
  out.append(std::string("GGUF"));
  out.put<uint32_t>(version_);
  out.put<uint64_t>(tensors_.size()).put<uint64_t>(kvCount_);
  out.append(kv_.bytes);
  auto align = [&](uint64_t n) {
    return (n + alignment_ - 1) / alignment_ * alignment_;
  };
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

std::vector<uint8_t> safetensorsBytes(const std::string &header,
                                      const std::vector<uint8_t> &data) {
  ByteBuilder out;
  out.put<uint64_t>(header.size()).append(header).append(data);
  return out.bytes;
}

std::vector<uint8_t>
safetensorsBytes(const std::vector<SafetensorSpec> &tensors) {
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

TensorMap syntheticTensors(const ModelConfig &config, uint64_t seed,
                           float (*round)(float)) {
  TensorMap tensors;
  for (const Llama2cBlock &block : llama2cFileLayout(config, 1)) {
    int64_t count = 1;
    for (int64_t d : block.shape)
      count *= d;
    std::vector<float> values(size_t(count));
    fillSyntheticTensor(block.name, block.shape, seed, 0, values.data(),
                        count);
    for (float &v : values)
      v = round(v);
    tensors[block.name] = std::move(values);
  }
  return tensors;
}

void writeLlama2cV1(const std::string &path, const ModelConfig &c,
                    const TensorMap &tensors) {
  ByteBuilder out;
  out.put<uint32_t>(kLlama2cV1Magic).put<int32_t>(1);
  for (int32_t field : {c.dim, c.hiddenDim, c.nLayers, c.nHeads, c.nKvHeads,
                        c.vocabSize, c.seqLen})
    out.put(field);
  out.put<uint8_t>(c.sharedClassifier ? 1 : 0);
  out.bytes.resize(kLlama2cV1HeaderBytes, 0);
  for (const Llama2cBlock &block : llama2cFileLayout(c, 1))
    out.append(f32Bytes(tensors.at(block.name)));
  writeBytes(path, out.bytes);
}

std::vector<float> permuteToRotateHalf(const std::vector<float> &values,
                                       int64_t rows, int64_t cols,
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

std::vector<uint8_t> readBytes(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

void writeBytes(const std::string &path, const std::vector<uint8_t> &bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char *>(bytes.data()),
            std::streamsize(bytes.size()));
}

void writeText(const std::string &path, const std::string &text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

} // namespace quill::test
