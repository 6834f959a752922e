// F16, BF16 and Q8_0 to fp32 against known bit patterns and against the
// test's own encoders (ModelWriters.h), which share no code with the
// importer.
#include "ModelWriters.h"

#include "compiler/Import/TensorConversion.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

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
