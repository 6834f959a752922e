// Exact F16 / BF16 widening and Q8_0 dequantization to fp32.
#include "compiler/Import/TensorConversion.h"

#include <cstring>

namespace quill {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "model files are little-endian and read in place");

const char *dtypeName(SourceDType dtype) {
  switch (dtype) {
  case SourceDType::F32:
    return "F32";
  case SourceDType::F16:
    return "F16";
  case SourceDType::BF16:
    return "BF16";
  case SourceDType::Q8_0:
    return "Q8_0";
  }
  return "?";
}

std::optional<uint64_t> dtypeBytes(SourceDType dtype, uint64_t count) {
  uint64_t bytes;
  switch (dtype) {
  case SourceDType::F32:
    if (__builtin_mul_overflow(count, uint64_t(4), &bytes))
      return std::nullopt;
    return bytes;
  case SourceDType::F16:
  case SourceDType::BF16:
    if (__builtin_mul_overflow(count, uint64_t(2), &bytes))
      return std::nullopt;
    return bytes;
  case SourceDType::Q8_0:
    if (count % kQ8_0BlockElements != 0)
      return std::nullopt;
    return count / kQ8_0BlockElements * kQ8_0BlockBytes;
  }
  return std::nullopt;
}

float halfToFloat(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000) << 16;
  const uint32_t exponent = (h >> 10) & 0x1F;
  uint32_t mantissa = h & 0x3FF;
  uint32_t bits;
  if (exponent == 0x1F) {
    bits = sign | 0x7F800000 | (mantissa << 13); // Inf or NaN.
  } else if (exponent != 0) {
    bits = sign | ((exponent + 127 - 15) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    bits = sign; // Signed zero.
  } else {
    // Subnormal: mantissa * 2^-24, normalized for binary32.
    int shift = 0;
    while (!(mantissa & 0x400)) {
      mantissa <<= 1;
      ++shift;
    }
    mantissa &= 0x3FF;
    bits = sign | (uint32_t(127 - 15 + 1 - shift) << 23) | (mantissa << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

float bfloat16ToFloat(uint16_t b) {
  uint32_t bits = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

void convertToFloat(SourceDType dtype, const uint8_t *src, int64_t count, float *dst) {
  auto half = [&](int64_t i) {
    uint16_t v;
    std::memcpy(&v, src + 2 * i, 2);
    return v;
  };
  switch (dtype) {
  case SourceDType::F32:
    std::memcpy(dst, src, size_t(count) * 4);
    return;
  case SourceDType::F16:
    for (int64_t i = 0; i < count; ++i)
      dst[i] = halfToFloat(half(i));
    return;
  case SourceDType::BF16:
    for (int64_t i = 0; i < count; ++i)
      dst[i] = bfloat16ToFloat(half(i));
    return;
  case SourceDType::Q8_0:
    for (int64_t block = 0; block < count / kQ8_0BlockElements; ++block) {
      const uint8_t *b = src + block * kQ8_0BlockBytes;
      uint16_t scaleBits;
      std::memcpy(&scaleBits, b, 2);
      const float scale = halfToFloat(scaleBits);
      for (int64_t i = 0; i < kQ8_0BlockElements; ++i)
        dst[block * kQ8_0BlockElements + i] = scale * float(static_cast<int8_t>(b[2 + i]));
    }
    return;
  }
}

} // namespace quill
