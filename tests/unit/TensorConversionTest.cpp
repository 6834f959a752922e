// F16, BF16 and ggml's Q8_0, Q4_0, Q4_K, Q6_K blocks to fp32 against known
// bit patterns, hand-worked blocks, and the layouts of ggml-common.h
// re-implemented plainly below (no code shared with the importer).
#include "ModelWriters.h"

#include "compiler/Import/TensorConversion.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

using namespace quill;
using namespace quill::test;

TEST(TensorConversion, HalfKnownBitPatterns) {
  EXPECT_EQ(halfToFloat(0x3C00), 1.0f);
  EXPECT_EQ(halfToFloat(0xC000), -2.0f);
  EXPECT_EQ(halfToFloat(0x3800), 0.5f);
  EXPECT_EQ(halfToFloat(0x3555), 0.333251953125f);
  EXPECT_EQ(halfToFloat(0x7BFF), 65504.0f);
  EXPECT_EQ(halfToFloat(0x0400), 6.103515625e-05f);        // Smallest normal.
  EXPECT_EQ(halfToFloat(0x0001), 5.9604644775390625e-08f); // Subnormal 2^-24.
  EXPECT_EQ(halfToFloat(0x03FF), 6.097555160522461e-05f);
  EXPECT_EQ(halfToFloat(0x0000), 0.0f);
  EXPECT_TRUE(std::signbit(halfToFloat(0x8000)));
  EXPECT_EQ(halfToFloat(0x7C00), std::numeric_limits<float>::infinity());
  EXPECT_EQ(halfToFloat(0xFC00), -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(halfToFloat(0x7E00)));
}

TEST(TensorConversion, EveryHalfMatchesTheTestsOwnDecoder) {
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    if (((bits >> 10) & 0x1F) == 0x1F)
      continue; // Inf / NaN checked above.
    ASSERT_EQ(halfToFloat(uint16_t(bits)), fromF16Bits(uint16_t(bits))) << std::hex << bits;
  }
}

TEST(TensorConversion, BFloat16KnownBitPatterns) {
  EXPECT_EQ(bfloat16ToFloat(0x3F80), 1.0f);
  EXPECT_EQ(bfloat16ToFloat(0xC040), -3.0f);
  EXPECT_EQ(bfloat16ToFloat(0x3E80), 0.25f);
  EXPECT_EQ(bfloat16ToFloat(0x4049), 3.140625f);
  EXPECT_EQ(toBf16Bits(3.14159265f), 0x4049);
  EXPECT_EQ(toF16Bits(1.0f), 0x3C00);
  EXPECT_EQ(toF16Bits(-2.0f), 0xC000);
  EXPECT_EQ(toF16Bits(1.0f / 3.0f), 0x3555);
}

TEST(TensorConversion, ConvertRowsOfEachType) {
  std::vector<uint8_t> f16 =
      ByteBuilder().put<uint16_t>(0x3C00).put<uint16_t>(0xB800).put<uint16_t>(0x4200).bytes;
  float out[3];
  convertToFloat(SourceDType::F16, f16.data(), 3, out);
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_EQ(out[1], -0.5f);
  EXPECT_EQ(out[2], 3.0f);
  std::vector<uint8_t> bf16 = ByteBuilder().put<uint16_t>(0x3F80).put<uint16_t>(0xC2F6).bytes;
  convertToFloat(SourceDType::BF16, bf16.data(), 2, out);
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_EQ(out[1], -123.0f);

  // One Q8_0 block: scale 0.5 (F16 0x3800), q = i - 16.
  ByteBuilder q8;
  q8.put<uint16_t>(0x3800);
  for (int i = 0; i < 32; ++i)
    q8.put<int8_t>(int8_t(i - 16));
  float block[32];
  convertToFloat(SourceDType::Q8_0, q8.bytes.data(), 32, block);
  for (int i = 0; i < 32; ++i)
    EXPECT_EQ(block[i], 0.5f * float(i - 16)) << i;

  // Unaligned source bytes are fine.
  std::vector<uint8_t> shifted(1 + 8);
  float values[2] = {1.5f, -7.25f};
  std::memcpy(shifted.data() + 1, values, 8);
  convertToFloat(SourceDType::F32, shifted.data() + 1, 2, out);
  EXPECT_EQ(out[0], 1.5f);
  EXPECT_EQ(out[1], -7.25f);
}

TEST(TensorConversion, StorageBytes) {
  EXPECT_EQ(dtypeBytes(SourceDType::F32, 10), 40u);
  EXPECT_EQ(dtypeBytes(SourceDType::BF16, 10), 20u);
  EXPECT_EQ(dtypeBytes(SourceDType::Q8_0, 64), 68u);
  EXPECT_FALSE(dtypeBytes(SourceDType::Q8_0, 33).has_value());
  EXPECT_FALSE(dtypeBytes(SourceDType::F32, UINT64_MAX / 2).has_value());
  // ggml-common.h: sizeof(block_q4_0) = 2 + 16, block_q4_K = 2 + 2 + 12 +
  // 128, block_q6_K = 128 + 64 + 16 + 2.
  EXPECT_EQ(dtypeBytes(SourceDType::F16, 7), 14u);
  EXPECT_EQ(dtypeBytes(SourceDType::Q4_0, 96), 3u * 18);
  EXPECT_EQ(dtypeBytes(SourceDType::Q4_K, 4096), 16u * 144);
  EXPECT_EQ(dtypeBytes(SourceDType::Q6_K, 512), 2u * 210);
  EXPECT_EQ(dtypeBytes(SourceDType::Q6_K, 0), 0u);
  for (SourceDType t : {SourceDType::Q4_0, SourceDType::Q8_0})
    for (uint64_t n : {1, 16, 31, 33, 48, 4095})
      EXPECT_FALSE(dtypeBytes(t, n).has_value()) << dtypeName(t) << " " << n;
  for (SourceDType t : {SourceDType::Q4_K, SourceDType::Q6_K})
    for (uint64_t n : {32, 128, 255, 257, 4096 + 32})
      EXPECT_FALSE(dtypeBytes(t, n).has_value()) << dtypeName(t) << " " << n;
  // Blocks take fewer bytes than their elements, so only the plain types
  // can overflow: 2^64 - 256 elements are 2^56 - 1 Q6_K blocks.
  EXPECT_EQ(dtypeBytes(SourceDType::Q6_K, UINT64_MAX - 255), ((uint64_t(1) << 56) - 1) * 210);
  EXPECT_EQ(dtypeBytes(SourceDType::Q4_0, UINT64_MAX - 31), ((uint64_t(1) << 59) - 1) * 18);
  EXPECT_FALSE(dtypeBytes(SourceDType::F16, UINT64_MAX / 2 + 1).has_value());
  EXPECT_EQ(dtypeBytes(SourceDType::F16, UINT64_MAX / 2), UINT64_MAX - 1);
}

TEST(TensorConversion, NamesAndBlocks) {
  const std::pair<SourceDType, const char *> names[] = {
      {SourceDType::F32, "F32"},   {SourceDType::F16, "F16"},   {SourceDType::BF16, "BF16"},
      {SourceDType::Q8_0, "Q8_0"}, {SourceDType::Q4_0, "Q4_0"}, {SourceDType::Q4_K, "Q4_K"},
      {SourceDType::Q6_K, "Q6_K"}};
  for (auto [type, name] : names) {
    EXPECT_STREQ(dtypeName(type), name);
    EXPECT_EQ(dtypeFromName(name), type);
  }
  EXPECT_EQ(dtypeFromName("q4_k"), SourceDType::Q4_K);
  EXPECT_EQ(dtypeFromName("Bf16"), SourceDType::BF16);
  EXPECT_EQ(dtypeFromName("q6_K"), SourceDType::Q6_K);
  EXPECT_FALSE(dtypeFromName("Q5_0").has_value());
  EXPECT_FALSE(dtypeFromName("Q4_K_M").has_value());
  EXPECT_FALSE(dtypeFromName("").has_value());
  EXPECT_FALSE(dtypeFromName("F3").has_value());
  const int64_t elements[] = {1, 1, 1, 32, 32, 256, 256};
  const int64_t bytes[] = {4, 2, 2, 34, 18, 144, 210};
  for (size_t i = 0; i < std::size(names); ++i) {
    EXPECT_EQ(blockElements(names[i].first), elements[i]) << names[i].second;
    EXPECT_EQ(blockBytes(names[i].first), bytes[i]) << names[i].second;
  }
}

namespace {

/// a * b - c with each step rounded to fp32 (volatile stops a fused
/// multiply-add), the order of ggml's dequantize_row_q4_K.
float mulSub(float a, float b, float c) {
  volatile float product = a * b;
  volatile float subtrahend = c;
  return product - subtrahend;
}

uint16_t u16At(const uint8_t *p) { return uint16_t(p[0] | p[1] << 8); }

/// ggml-common.h's block_q4_K read plainly: d, dmin, scales[12], qs[128].
/// Weight e is in sub-block j = e / 32, whose 6-bit scale and min are bytes
/// j and j + 4 (low 6 bits) for j < 4, and for j >= 4 the nibbles of byte
/// j + 4 (scale low, min high) under the top 2 bits of bytes j - 4 (scale)
/// and j (min). Its 4-bit q is nibble (j even: low, odd: high) of byte
/// 32 * (j / 2) + e % 32.
std::vector<float> referenceQ4K(const uint8_t *block) {
  const float d = fromF16Bits(u16At(block)), dmin = fromF16Bits(u16At(block + 2));
  const uint8_t *sc = block + 4, *qs = block + 16;
  std::vector<float> out(256);
  for (int e = 0; e < 256; ++e) {
    const int j = e / 32;
    const uint8_t byte = qs[32 * (j / 2) + e % 32];
    const int q = j % 2 == 0 ? byte & 15 : byte >> 4;
    const int scale = j < 4 ? sc[j] & 63 : (sc[j + 4] & 15) | ((sc[j - 4] >> 6) << 4);
    const int min = j < 4 ? sc[j + 4] & 63 : (sc[j + 4] >> 4) | ((sc[j] >> 6) << 4);
    volatile float step = d * float(scale), offset = dmin * float(min);
    out[size_t(e)] = mulSub(step, float(q), offset);
  }
  return out;
}

/// block_q6_K read plainly: ql[128], qh[64], int8 scales[16], d. Weight e
/// is in half h = e / 128 at r = e % 128, k = r / 32, l = r % 32: low 4 bits
/// from byte 64h + 32 * (k % 2) + l of ql (low nibble for k < 2), high 2
/// bits from bits 2k, 2k + 1 of qh[32h + l]; value d * scales[e / 16] *
/// (q - 32).
std::vector<float> referenceQ6K(const uint8_t *block) {
  const uint8_t *ql = block, *qh = block + 128;
  const auto *scales = reinterpret_cast<const int8_t *>(block + 192);
  const float d = fromF16Bits(u16At(block + 208));
  std::vector<float> out(256);
  for (int e = 0; e < 256; ++e) {
    const int h = e / 128, k = e % 128 / 32, l = e % 32;
    const uint8_t low = ql[64 * h + 32 * (k % 2) + l];
    const int q = (k < 2 ? low & 15 : low >> 4) | ((qh[32 * h + l] >> (2 * k)) & 3) << 4;
    volatile float step = d * float(scales[e / 16]);
    out[size_t(e)] = step * float(q - 32);
  }
  return out;
}

/// Random finite F16 bits (any sign, exponent below 31).
uint16_t randomFiniteHalf(std::mt19937 &rng) {
  uint16_t bits;
  do
    bits = uint16_t(rng());
  while (((bits >> 10) & 0x1F) == 0x1F);
  return bits;
}

void expectSameBits(const std::vector<float> &got, const std::vector<float> &want,
                    const char *what) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_EQ(std::memcmp(&got[i], &want[i], 4), 0)
        << what << " element " << i << ": " << got[i] << " vs " << want[i];
}

} // namespace

TEST(TensorConversion, Q8_0NegativeScale) {
  ByteBuilder q8;
  q8.put<uint16_t>(0xC000); // -2.
  for (int i = 0; i < 32; ++i)
    q8.put<int8_t>(int8_t(i * 8 - 128));
  float out[32];
  convertToFloat(SourceDType::Q8_0, q8.bytes.data(), 32, out);
  for (int i = 0; i < 32; ++i)
    EXPECT_EQ(out[i], -2.0f * float(i * 8 - 128)) << i;
}

TEST(TensorConversion, Q4_0NibbleOrderAndNegativeScale) {
  // d = -0.5; byte j = j | (15 - j) << 4: weight j has q = j, weight j + 16
  // has q = 15 - j, each -0.5 * (q - 8).
  ByteBuilder b;
  b.put<uint16_t>(0xB800);
  for (int j = 0; j < 16; ++j)
    b.put<uint8_t>(uint8_t(j | (15 - j) << 4));
  float out[32];
  convertToFloat(SourceDType::Q4_0, b.bytes.data(), 32, out);
  EXPECT_EQ(out[0], 4.0f);   // q 0.
  EXPECT_EQ(out[8], -0.0f);  // q 8.
  EXPECT_EQ(out[15], -3.5f); // q 15.
  EXPECT_EQ(out[16], -3.5f); // High nibble of byte 0: q 15.
  EXPECT_EQ(out[31], 4.0f);  // High nibble of byte 15: q 0.
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(out[j], -0.5f * float(j - 8)) << j;
    EXPECT_EQ(out[j + 16], -0.5f * float(7 - j)) << j;
  }
}

TEST(TensorConversion, Q4_KScalesAndMinsUnpack) {
  // Hand-packed: scales 1, 2, 3, 4, 17, 33, 49, 63 and mins 5, 6, 7, 8, 20,
  // 36, 52, 62. Bytes 0-3 hold scales 0-3 under the top 2 bits of scales
  // 4-7 (1, 2, 3, 3); bytes 4-7 mins 0-3 under those of mins 4-7 (1, 2, 3,
  // 3); bytes 8-11 the low nibbles of scale (low) and min (high) 4-7.
  const uint8_t packed[12] = {0x41, 0x82, 0xC3, 0xC4, 0x45, 0x86,
                              0xC7, 0xC8, 0x41, 0x41, 0x41, 0xEF};
  const int scales[8] = {1, 2, 3, 4, 17, 33, 49, 63}, mins[8] = {5, 6, 7, 8, 20, 36, 52, 62};
  for (int j = 0; j < 8; ++j) {
    uint8_t scale, min;
    q4KScaleMin(j, packed, scale, min);
    EXPECT_EQ(scale, scales[j]) << j;
    EXPECT_EQ(min, mins[j]) << j;
  }
}

TEST(TensorConversion, Q4_KHandBuiltBlock) {
  const uint8_t packed[12] = {0x41, 0x82, 0xC3, 0xC4, 0x45, 0x86,
                              0xC7, 0xC8, 0x41, 0x41, 0x41, 0xEF};
  const int scales[8] = {1, 2, 3, 4, 17, 33, 49, 63}, mins[8] = {5, 6, 7, 8, 20, 36, 52, 62};
  auto q = [](int e) { return (7 * e + 3) % 16; };
  // (d, dmin) = (0.5, 0.25), then negative (-0.5, -0.25): every value is
  // exact in fp32, so the expectation needs no rounding.
  for (auto [dBits, dminBits, d, dmin] :
       {std::tuple<uint16_t, uint16_t, double, double>{0x3800, 0x3400, 0.5, 0.25},
        {0xB800, 0xB400, -0.5, -0.25}}) {
    ByteBuilder b;
    b.put<uint16_t>(dBits).put<uint16_t>(dminBits);
    b.bytes.insert(b.bytes.end(), packed, packed + 12);
    for (int c = 0; c < 4; ++c) // Chunk c: sub-blocks 2c (low) and 2c + 1.
      for (int l = 0; l < 32; ++l)
        b.put<uint8_t>(uint8_t(q(64 * c + l) | q(64 * c + 32 + l) << 4));
    ASSERT_EQ(b.bytes.size(), 144u);
    std::vector<float> out(256);
    convertToFloat(SourceDType::Q4_K, b.bytes.data(), 256, out.data());
    for (int e = 0; e < 256; ++e)
      ASSERT_EQ(out[e], float(d * scales[e / 32] * q(e) - dmin * mins[e / 32])) << e;
  }
}

TEST(TensorConversion, Q6_KHighBitPositions) {
  // All low bits 0, scales 1, d 1: weights are q - 32 = -32, except where a
  // qh bit pair is set: qh[5] bits 6-7 (k = 3: weight 96 + 5) and qh[32 +
  // 7] bits 2-3 (second half, k = 1: weight 128 + 32 + 7), each q = 16.
  std::vector<uint8_t> block(210, 0);
  block[128 + 5] = 0x40;
  block[128 + 32 + 7] = 0x04;
  for (int s = 0; s < 16; ++s)
    block[192 + s] = 1;
  block[208] = 0x00, block[209] = 0x3C; // d = 1.
  std::vector<float> out(256);
  convertToFloat(SourceDType::Q6_K, block.data(), 256, out.data());
  for (int e = 0; e < 256; ++e)
    EXPECT_EQ(out[e], e == 101 || e == 167 ? -16.0f : -32.0f) << e;
  // A low nibble: ql[32 + 2] high nibble is k = 3 of l = 2 (weight 98).
  block[128 + 5] = block[128 + 32 + 7] = 0;
  block[32 + 2] = 0x50;
  convertToFloat(SourceDType::Q6_K, block.data(), 256, out.data());
  for (int e = 0; e < 256; ++e)
    EXPECT_EQ(out[e], e == 98 ? -27.0f : -32.0f) << e;
}

TEST(TensorConversion, Q6_KHandBuiltBlock) {
  const int8_t scales[16] = {-128, 127, -3, 5, 1, -1, 64, -64, 2, 7, -9, 11, 100, -100, 0, 42};
  auto q = [](int e) { return (5 * e + 1) % 64; };
  std::vector<uint8_t> block(210, 0);
  for (int e = 0; e < 256; ++e) { // The layout as ggml-common.h describes it.
    const int h = e / 128, k = e % 128 / 32, l = e % 32;
    block[size_t(64 * h + 32 * (k % 2) + l)] |= uint8_t((q(e) & 15) << (k < 2 ? 0 : 4));
    block[size_t(128 + 32 * h + l)] |= uint8_t((q(e) >> 4) << (2 * k));
  }
  std::memcpy(block.data() + 192, scales, 16);
  block[208] = 0x00, block[209] = 0xB4; // d = -0.25.
  std::vector<float> out(256);
  convertToFloat(SourceDType::Q6_K, block.data(), 256, out.data());
  for (int e = 0; e < 256; ++e)
    ASSERT_EQ(out[e], float(-0.25 * scales[e / 16] * (q(e) - 32))) << e;
}

TEST(TensorConversion, RandomBlocksMatchThePlainLayout) {
  std::mt19937 rng(20240611);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<uint8_t> q4k(2 * 144), q6k(2 * 210);
    for (uint8_t &b : q4k)
      b = uint8_t(rng());
    for (uint8_t &b : q6k)
      b = uint8_t(rng());
    for (int block = 0; block < 2; ++block) {
      const uint16_t d = randomFiniteHalf(rng), dmin = randomFiniteHalf(rng);
      std::memcpy(&q4k[size_t(144 * block)], &d, 2);
      std::memcpy(&q4k[size_t(144 * block + 2)], &dmin, 2);
      const uint16_t d6 = randomFiniteHalf(rng);
      std::memcpy(&q6k[size_t(210 * block + 208)], &d6, 2);
    }
    std::vector<float> got(512), want;
    convertToFloat(SourceDType::Q4_K, q4k.data(), 512, got.data());
    want = referenceQ4K(q4k.data());
    std::vector<float> second = referenceQ4K(q4k.data() + 144);
    want.insert(want.end(), second.begin(), second.end());
    expectSameBits(got, want, "Q4_K");
    convertToFloat(SourceDType::Q6_K, q6k.data(), 512, got.data());
    want = referenceQ6K(q6k.data());
    second = referenceQ6K(q6k.data() + 210);
    want.insert(want.end(), second.begin(), second.end());
    expectSameBits(got, want, "Q6_K");
  }
}

TEST(TensorConversion, RandomQ4_0BlocksMatchThePlainLayout) {
  std::mt19937 rng(7);
  std::vector<uint8_t> blocks(8 * 18);
  for (uint8_t &b : blocks)
    b = uint8_t(rng());
  for (int block = 0; block < 8; ++block) {
    const uint16_t d = randomFiniteHalf(rng);
    std::memcpy(&blocks[size_t(18 * block)], &d, 2);
  }
  std::vector<float> got(256);
  convertToFloat(SourceDType::Q4_0, blocks.data(), 256, got.data());
  for (int e = 0; e < 256; ++e) {
    const uint8_t *block = blocks.data() + 18 * (e / 32);
    const int i = e % 32;
    const int q = i < 16 ? block[2 + i] & 15 : block[2 + i - 16] >> 4;
    const float want = float(q - 8) * fromF16Bits(u16At(block));
    ASSERT_EQ(std::memcmp(&got[e], &want, 4), 0) << e;
  }
}

TEST(TensorConversion, TestQuantizerRoundTrips) {
  std::vector<float> values(64);
  for (int i = 0; i < 64; ++i)
    values[i] = std::sin(float(i)) * (i < 32 ? 1.0f : 0.01f);
  std::vector<float> expected;
  std::vector<uint8_t> blocks = quantizeQ8_0(values, &expected);
  ASSERT_EQ(blocks.size(), 68u);
  std::vector<float> got(64);
  convertToFloat(SourceDType::Q8_0, blocks.data(), 64, got.data());
  EXPECT_EQ(got, expected);
  for (int i = 0; i < 64; ++i)
    EXPECT_NEAR(got[i], values[i], i < 32 ? 0.005 : 0.00005) << i;
}
