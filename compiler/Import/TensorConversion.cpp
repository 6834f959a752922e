// Exact F16 / BF16 widening and ggml block dequantization (Q8_0, Q4_0,
// Q4_K, Q6_K) to fp32, in ggml's order of fp32 operations. The file is
// built with -ffp-contract=off (CMakeLists.txt) so `a * b - c` is never
// fused into one rounding, as in ggml's reference build.
#include "compiler/Import/TensorConversion.h"

#include "runtime/artifact/WeightTable.h"

#include <cctype>
#include <cstring>
#include <iterator>

namespace quill {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "model files are little-endian and read in place");

namespace {

struct DTypeInfo {
  SourceDType dtype;
  const char *name;
  int64_t blockElements, blockBytes;
};

constexpr DTypeInfo kDTypes[] = {
    {SourceDType::F32, "F32", 1, 4},
    {SourceDType::F16, "F16", 1, 2},
    {SourceDType::BF16, "BF16", 1, 2},
    {SourceDType::Q8_0, "Q8_0", kQ8_0BlockElements, kQ8_0BlockBytes},
    {SourceDType::Q4_0, "Q4_0", kQ4_0BlockElements, kQ4_0BlockBytes},
    {SourceDType::Q4_K, "Q4_K", kQ4_KBlockElements, kQ4_KBlockBytes},
    {SourceDType::Q6_K, "Q6_K", kQ6_KBlockElements, kQ6_KBlockBytes},
};

// The artifact's weight table states encodings with the runtime's enum,
// converted from SourceDType by value: one order, one geometry.
constexpr bool agreesWithArtifactEncodings() {
  for (size_t i = 0; i < kWeightEncodingCount; ++i) {
    const WeightEncodingInfo &e = weightEncodingInfo(static_cast<WeightEncoding>(i));
    if (static_cast<size_t>(kDTypes[i].dtype) != i || kDTypes[i].blockElements != e.blockElements ||
        kDTypes[i].blockBytes != e.blockBytes)
      return false;
  }
  return std::size(kDTypes) == kWeightEncodingCount;
}
static_assert(agreesWithArtifactEncodings());

const DTypeInfo &info(SourceDType dtype) {
  for (const DTypeInfo &i : kDTypes)
    if (i.dtype == dtype)
      return i;
  return kDTypes[0]; // Unreachable for a valid enumerator.
}

uint16_t loadU16(const uint8_t *p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}

/// dequantize_row_q8_0: d * q.
void dequantizeQ8_0(const uint8_t *src, int64_t blocks, float *dst) {
  for (int64_t b = 0; b < blocks; ++b, src += kQ8_0BlockBytes, dst += 32) {
    const float d = halfToFloat(loadU16(src));
    for (int i = 0; i < 32; ++i)
      dst[i] = float(static_cast<int8_t>(src[2 + i])) * d;
  }
}

/// dequantize_row_q4_0: (q - 8) * d; byte j holds weights j and j + 16.
void dequantizeQ4_0(const uint8_t *src, int64_t blocks, float *dst) {
  for (int64_t b = 0; b < blocks; ++b, src += kQ4_0BlockBytes, dst += 32) {
    const float d = halfToFloat(loadU16(src));
    const uint8_t *qs = src + 2;
    for (int j = 0; j < 16; ++j) {
      dst[j] = float((qs[j] & 0x0F) - 8) * d;
      dst[j + 16] = float((qs[j] >> 4) - 8) * d;
    }
  }
}

/// dequantize_row_q4_K: 4 chunks of 64 weights; byte l of chunk c holds
/// weight l of sub-block 2c (low nibble) and of sub-block 2c + 1 (high).
void dequantizeQ4_K(const uint8_t *src, int64_t blocks, float *dst) {
  for (int64_t b = 0; b < blocks; ++b, src += kQ4_KBlockBytes) {
    const float d = halfToFloat(loadU16(src));
    const float dmin = halfToFloat(loadU16(src + 2));
    const uint8_t *packed = src + 4, *qs = src + 16;
    for (int chunk = 0; chunk < 4; ++chunk, qs += 32) {
      uint8_t sc, m;
      q4KScaleMin(2 * chunk, packed, sc, m);
      const float d1 = d * float(sc), m1 = dmin * float(m);
      q4KScaleMin(2 * chunk + 1, packed, sc, m);
      const float d2 = d * float(sc), m2 = dmin * float(m);
      for (int l = 0; l < 32; ++l)
        *dst++ = d1 * float(qs[l] & 0x0F) - m1;
      for (int l = 0; l < 32; ++l)
        *dst++ = d2 * float(qs[l] >> 4) - m2;
    }
  }
}

/// dequantize_row_q6_K: 2 halves of 128 weights. In a half, weight
/// 32k + l (k = 0..3) takes its low 4 bits from ql[l] (k = 0, 2) or
/// ql[l + 32] (k = 1, 3), low nibble for k < 2, and bits 2k, 2k+1 of
/// qh[l] as its high 2 bits; its scale is scales[8h + 2k + l / 16].
void dequantizeQ6_K(const uint8_t *src, int64_t blocks, float *dst) {
  for (int64_t b = 0; b < blocks; ++b, src += kQ6_KBlockBytes) {
    const float d = halfToFloat(loadU16(src + 208));
    const uint8_t *ql = src, *qh = src + 128;
    const auto *sc = reinterpret_cast<const int8_t *>(src + 192);
    for (int half = 0; half < 2; ++half, ql += 64, qh += 32, sc += 8, dst += 128) {
      for (int l = 0; l < 32; ++l) {
        const int is = l / 16;
        const int q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        dst[l] = d * float(sc[is]) * float(q1);
        dst[l + 32] = d * float(sc[is + 2]) * float(q2);
        dst[l + 64] = d * float(sc[is + 4]) * float(q3);
        dst[l + 96] = d * float(sc[is + 6]) * float(q4);
      }
    }
  }
}

} // namespace

const char *dtypeName(SourceDType dtype) { return info(dtype).name; }

std::optional<SourceDType> dtypeFromName(std::string_view name) {
  for (const DTypeInfo &i : kDTypes) {
    std::string_view candidate = i.name;
    if (candidate.size() != name.size())
      continue;
    bool same = true;
    for (size_t c = 0; c < name.size() && same; ++c)
      same = std::toupper(static_cast<unsigned char>(name[c])) == candidate[c];
    if (same)
      return i.dtype;
  }
  return std::nullopt;
}

int64_t blockElements(SourceDType dtype) { return info(dtype).blockElements; }

int64_t blockBytes(SourceDType dtype) { return info(dtype).blockBytes; }

std::optional<uint64_t> dtypeBytes(SourceDType dtype, uint64_t count) {
  const DTypeInfo &i = info(dtype);
  if (count % uint64_t(i.blockElements) != 0)
    return std::nullopt;
  uint64_t bytes;
  if (__builtin_mul_overflow(count / uint64_t(i.blockElements), uint64_t(i.blockBytes), &bytes))
    return std::nullopt;
  return bytes;
}

void q4KScaleMin(int j, const uint8_t *packed, uint8_t &scale, uint8_t &min) {
  if (j < 4) {
    scale = packed[j] & 63;
    min = packed[j + 4] & 63;
  } else {
    scale = uint8_t((packed[j + 4] & 0x0F) | ((packed[j - 4] >> 6) << 4));
    min = uint8_t((packed[j + 4] >> 4) | ((packed[j] >> 6) << 4));
  }
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
  const int64_t blocks = count / blockElements(dtype);
  switch (dtype) {
  case SourceDType::F32:
    std::memcpy(dst, src, size_t(count) * 4);
    return;
  case SourceDType::F16:
    for (int64_t i = 0; i < count; ++i)
      dst[i] = halfToFloat(loadU16(src + 2 * i));
    return;
  case SourceDType::BF16:
    for (int64_t i = 0; i < count; ++i)
      dst[i] = bfloat16ToFloat(loadU16(src + 2 * i));
    return;
  case SourceDType::Q8_0:
    return dequantizeQ8_0(src, blocks, dst);
  case SourceDType::Q4_0:
    return dequantizeQ4_0(src, blocks, dst);
  case SourceDType::Q4_K:
    return dequantizeQ4_K(src, blocks, dst);
  case SourceDType::Q6_K:
    return dequantizeQ6_K(src, blocks, dst);
  }
}

} // namespace quill
