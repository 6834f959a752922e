// fp32 -> F16 / BF16 / Q8_0 / Q4_0 / Q4_K / Q6_K (Quantize.h) against
// hand-worked bit patterns and the test writers' own encoders (ModelWriters,
// the published formulas of ggml's quantize_row_*_ref); Q4_K and Q6_K by
// their error on Gaussian data, the validity of their blocks, and their
// round trip.
#include "ModelWriters.h"

#include "compiler/Import/Quantize.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>

using namespace quill;
using namespace quill::test;

namespace {

float fromBits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint32_t bitsOf(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  return bits;
}

std::vector<uint8_t> quantized(SourceDType type, const std::vector<float> &values) {
  std::vector<uint8_t> bytes(size_t(dtypeBytes(type, values.size()).value()));
  quantizeRow(type, values.data(), int64_t(values.size()), bytes.data());
  return bytes;
}

std::vector<float> dequantized(SourceDType type, const std::vector<uint8_t> &bytes, size_t count) {
  std::vector<float> out(count);
  convertToFloat(type, bytes.data(), int64_t(count), out.data());
  return out;
}

std::vector<float> gaussian(size_t count, float sigma, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, sigma);
  std::vector<float> v(count);
  for (float &x : v)
    x = normal(rng);
  return v;
}

/// sqrt(sum (a - b)^2 / sum a^2).
double relativeRms(const std::vector<float> &a, const std::vector<float> &b) {
  double error = 0, norm = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    error += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    norm += double(a[i]) * a[i];
  }
  return std::sqrt(error / norm);
}

/// Blocks of 32 that probe the Q8_0 / Q4_0 rules: Gaussian data at several
/// scales, zeros, all-equal values, exact rounding ties (values n + 1/2 under
/// a power-of-two scale), the largest magnitude repeated with both signs,
/// tiny (F16-subnormal) scales, and mixed magnitudes.
std::vector<float> probeBlocks(uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<float> v;
  auto add = [&](auto value) {
    for (int i = 0; i < 32; ++i)
      v.push_back(value(i));
  };
  for (float sigma : {1e-6f, 0.02f, 1.0f, 300.0f}) {
    std::vector<float> g = gaussian(32 * 16, sigma, rng());
    v.insert(v.end(), g.begin(), g.end());
  }
  add([](int) { return 0.0f; });
  add([](int) { return -0.75f; });
  add([](int) { return 3.0f; });
  // Q8_0 ties: amax 127 gives d = 1, so x * id = x: n + 0.5 rounds away
  // from zero. Q4_0 ties: max -8 gives d = 1, x + 8.5 an integer.
  add([](int i) { return i == 0 ? 127.0f : float(i % 9 - 4) + 0.5f; });
  add([](int i) { return i == 0 ? -127.0f : -float(i % 9 - 4) - 0.5f; });
  add([](int i) { return i == 3 ? -8.0f : float(i % 15 - 7) + 0.5f; });
  add([](int i) { return i == 3 ? -8.0f : float(i % 15 - 7); });
  add([](int i) { return i == 0 ? 8.0f : i == 1 ? -8.0f : float(i % 5) - 2.0f; });
  add([](int i) { return i == 0 ? -8.0f : i == 1 ? 8.0f : float(i % 5) - 2.0f; });
  add([](int i) { return i % 2 ? 5.0f : -5.0f; });
  add([&](int i) { return float(i % 7 - 3) * 1e-9f; });
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  add([&](int i) { return unit(rng) * (i % 4 == 0 ? 100.0f : 0.01f); });
  return v;
}

} // namespace

TEST(Quantize, HalfKnownBitPatterns) {
  EXPECT_EQ(floatToHalf(1.0f), 0x3C00);
  EXPECT_EQ(floatToHalf(-2.0f), 0xC000);
  EXPECT_EQ(floatToHalf(0.0f), 0x0000);
  EXPECT_EQ(floatToHalf(-0.0f), 0x8000);
  EXPECT_EQ(floatToHalf(65504.0f), 0x7BFF);
  EXPECT_EQ(floatToHalf(65519.996f), 0x7BFF); // Just under the midpoint.
  EXPECT_EQ(floatToHalf(65520.0f), 0x7C00);   // The tie rounds to even: inf.
  EXPECT_EQ(floatToHalf(1e9f), 0x7C00);
  EXPECT_EQ(floatToHalf(-1e9f), 0xFC00);
  EXPECT_EQ(floatToHalf(std::numeric_limits<float>::infinity()), 0x7C00);
  EXPECT_EQ(floatToHalf(-std::numeric_limits<float>::infinity()), 0xFC00);
  // Ties to even: 1 + 2^-11 is halfway between 1 and 1 + 2^-10.
  EXPECT_EQ(floatToHalf(1.0f + std::ldexp(1.0f, -11)), 0x3C00);
  EXPECT_EQ(floatToHalf(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02);
  EXPECT_EQ(floatToHalf(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20)), 0x3C01);
  // Subnormals: multiples of 2^-24.
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -25)), 0x0000);     // Tie to even 0.
  EXPECT_EQ(floatToHalf(3 * std::ldexp(1.0f, -25)), 0x0002); // Tie to even 2.
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -25) * 1.0001f), 0x0001);
  EXPECT_EQ(floatToHalf(std::ldexp(1023.0f, -24)), 0x03FF);
  EXPECT_EQ(floatToHalf(std::ldexp(1023.5f, -24)), 0x0400); // Up to the normal.
  EXPECT_EQ(floatToHalf(-std::ldexp(5.0f, -24)), 0x8005);
  EXPECT_EQ(floatToHalf(1e-45f), 0x0000); // A float subnormal.
  // NaN: ggml's quiet NaN, sign kept.
  EXPECT_EQ(floatToHalf(std::numeric_limits<float>::quiet_NaN()), 0x7E00);
  EXPECT_EQ(floatToHalf(fromBits(0xFFC00000)), 0xFE00);
  EXPECT_EQ(floatToHalf(fromBits(0x7F800001)), 0x7E00); // Signalling.
}

TEST(Quantize, HalfMatchesAnIndependentConversion) {
  // Every sign and exponent, every high mantissa, and low bits around the
  // rounding point (below, at and above the half-ulp, and the extremes).
  const uint32_t lows[] = {0x0000, 0x0001, 0x0FFF, 0x1000, 0x1001, 0x1FFF, 0x2000, 0x3000};
  for (uint32_t high = 0; high < 0x10000; ++high) {
    for (uint32_t low : lows) {
      const uint32_t bits = high << 16 | low;
      if ((bits & 0x7FFFFFFF) > 0x7F800000)
        continue; // NaN is checked above.
      const float f = fromBits(bits);
#ifdef __FLT16_MAX__
      const _Float16 h = static_cast<_Float16>(f); // The compiler's IEEE rounding.
      uint16_t want;
      std::memcpy(&want, &h, 2);
#else
      const uint16_t want =
          std::fabs(f) >= 65520.0f ? uint16_t(((bits >> 16) & 0x8000) | 0x7C00) : toF16Bits(f);
#endif
      ASSERT_EQ(floatToHalf(f), want) << std::hex << bits;
    }
  }
}

TEST(Quantize, Bfloat16Rounding) {
  EXPECT_EQ(floatToBfloat16(1.0f), 0x3F80);
  EXPECT_EQ(floatToBfloat16(3.14159265f), 0x4049);
  EXPECT_EQ(floatToBfloat16(fromBits(0x3F808000)), 0x3F80); // Tie: to even.
  EXPECT_EQ(floatToBfloat16(fromBits(0x3F818000)), 0x3F82); // Tie: to even.
  EXPECT_EQ(floatToBfloat16(fromBits(0x3F808001)), 0x3F81);
  EXPECT_EQ(floatToBfloat16(fromBits(0x3F807FFF)), 0x3F80);
  EXPECT_EQ(floatToBfloat16(fromBits(0x7F7FFFFF)), 0x7F80); // Max float: inf.
  EXPECT_EQ(floatToBfloat16(fromBits(0x00018000)), 0x0002); // Subnormal tie.
  EXPECT_EQ(floatToBfloat16(-std::numeric_limits<float>::infinity()), 0xFF80);
  EXPECT_EQ(floatToBfloat16(-0.0f), 0x8000);
  // NaN: the high 16 bits with the quiet bit (0x40) set, sign kept.
  EXPECT_EQ(floatToBfloat16(fromBits(0x7FC00000)), 0x7FC0);
  EXPECT_EQ(floatToBfloat16(fromBits(0x7F800001)), 0x7FC0);
  EXPECT_EQ(floatToBfloat16(fromBits(0xFF800001)), 0xFFC0);
  EXPECT_EQ(floatToBfloat16(fromBits(0x7FA12345)), 0x7FE1);
  std::mt19937 rng(3);
  for (int i = 0; i < 1000000; ++i) {
    const uint32_t bits = rng() & (i % 2 ? 0xFFFFFFFF : 0xFFFF8000); // Even i: ties.
    if ((bits & 0x7FFFFFFF) > 0x7F800000)
      continue;
    ASSERT_EQ(floatToBfloat16(fromBits(bits)), toBf16Bits(fromBits(bits))) << std::hex << bits;
  }
}

TEST(Quantize, RowsOfF16AndBf16) {
  const std::vector<float> v = {1.0f, -0.5f, 65520.0f, 1e-8f, 3.14159265f};
  std::vector<uint8_t> f16 = quantized(SourceDType::F16, v);
  std::vector<uint8_t> bf16 = quantized(SourceDType::BF16, v);
  std::vector<uint8_t> f32 = quantized(SourceDType::F32, v);
  for (size_t i = 0; i < v.size(); ++i) {
    EXPECT_EQ(f16[2 * i] | f16[2 * i + 1] << 8, floatToHalf(v[i])) << i;
    EXPECT_EQ(bf16[2 * i] | bf16[2 * i + 1] << 8, floatToBfloat16(v[i])) << i;
  }
  EXPECT_EQ(f32, f32Bytes(v));
}

TEST(Quantize, Q8_0HandWorked) {
  // amax 127: d = 1 (F16 0x3C00), id = 1, q = roundf(x): ties away from 0.
  std::vector<float> v(32, 0.0f);
  v[0] = 127.0f, v[1] = 2.5f, v[2] = -3.5f, v[3] = 0.5f, v[4] = -0.5f, v[5] = -127.0f;
  std::vector<uint8_t> b = quantized(SourceDType::Q8_0, v);
  ASSERT_EQ(b.size(), 34u);
  EXPECT_EQ(b[0], 0x00);
  EXPECT_EQ(b[1], 0x3C);
  const int8_t want[6] = {127, 3, -4, 1, -1, -127};
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(int8_t(b[2 + i]), want[i]) << i;
  // All zero: d = 0, id = 0, q = 0.
  std::vector<uint8_t> zero = quantized(SourceDType::Q8_0, std::vector<float>(32, 0.0f));
  EXPECT_EQ(zero, std::vector<uint8_t>(34, 0));
}

TEST(Quantize, Q4_0HandWorked) {
  // max -8 (first of largest magnitude) gives d = 1, id = 1: q = min(15,
  // trunc(x + 8.5)); the +8 that follows lands on 16 and is clamped to 15.
  std::vector<float> v(32, 0.0f);
  v[0] = -8.0f, v[1] = 8.0f, v[2] = 0.5f, v[3] = -0.5f, v[4] = 6.5f, v[17] = 7.4f, v[18] = -7.6f;
  std::vector<uint8_t> b = quantized(SourceDType::Q4_0, v);
  ASSERT_EQ(b.size(), 18u);
  EXPECT_EQ(b[0] | b[1] << 8, 0x3C00);
  // Byte j: q[j] | q[j + 16] << 4; zeros are q = 8.
  EXPECT_EQ(b[2 + 0], 0 | 8 << 4);
  EXPECT_EQ(b[2 + 1], 15 | 15 << 4); // 8 -> 16 -> 15; 7.4 -> 15.9 -> 15.
  EXPECT_EQ(b[2 + 2], 9 | 0 << 4);   // 0.5 -> 9; -7.6 -> 0.9 -> 0.
  EXPECT_EQ(b[2 + 3], 8 | 8 << 4);   // -0.5 -> 8.0 -> 8.
  EXPECT_EQ(b[2 + 4], 15 | 8 << 4);  // 6.5 -> 15.
  // +8 first: d = -1, so +8 -> q 0 and -8 -> 16.5 -> 15 (it reads back -7).
  std::swap(v[0], v[1]);
  b = quantized(SourceDType::Q4_0, v);
  EXPECT_EQ(b[0] | b[1] << 8, 0xBC00);
  EXPECT_EQ(b[2] & 15, 0);
  EXPECT_EQ(b[3] & 15, 15);
  std::vector<float> back = dequantized(SourceDType::Q4_0, b, 32);
  EXPECT_EQ(back[0], 8.0f);
  EXPECT_EQ(back[1], -7.0f);
}

TEST(Quantize, Q8_0AndQ4_0MatchTheFormulasByteForByte) {
  for (uint32_t seed : {1u, 2u, 3u}) {
    const std::vector<float> v = probeBlocks(seed);
    std::vector<float> stored8, stored4;
    EXPECT_EQ(quantized(SourceDType::Q8_0, v), quantizeQ8_0(v, &stored8)) << seed;
    EXPECT_EQ(quantized(SourceDType::Q4_0, v), quantizeQ4_0(v, &stored4)) << seed;
    EXPECT_EQ(dequantized(SourceDType::Q8_0, quantized(SourceDType::Q8_0, v), v.size()), stored8);
    EXPECT_EQ(dequantized(SourceDType::Q4_0, quantized(SourceDType::Q4_0, v), v.size()), stored4);
  }
}

TEST(Quantize, ErrorOnGaussianData) {
  // 64 K-blocks of N(0, 0.02^2) (a weight's typical spread); the error is
  // scale-free. Bounds, with margin over what the quantizers measure:
  //  Q8_0 (0.0054): d = max|x| / 127 over 32 values (max ~2.1 sigma), the
  //    rounding error d / sqrt(12) ~ 0.005 sigma.
  //  Q4_0 (0.086): 16 levels, d = max / 8: ~0.26 sigma / sqrt(12) ~ 0.075
  //    sigma, plus the unused 16th level on the side of `max`.
  //  Q4_K (0.071): 16 levels across [min, max] of 32 values (~4.2 sigma),
  //    0.28 sigma / sqrt(12) ~ 0.081 sigma before the scale search, which must
  //    beat it; 6-bit scales cost little.
  //  Q6_K (0.0167): 64 levels over 2 max|x| of 16 values (~1.8 sigma), ~0.056
  //    sigma / sqrt(12) ~ 0.016 sigma.
  const std::pair<SourceDType, double> bounds[] = {{SourceDType::Q8_0, 0.0065},
                                                   {SourceDType::Q4_0, 0.095},
                                                   {SourceDType::Q4_K, 0.08},
                                                   {SourceDType::Q6_K, 0.02}};
  const std::vector<float> v = gaussian(256 * 64, 0.02f, 11);
  for (auto [type, bound] : bounds) {
    const double error = relativeRms(v, dequantized(type, quantized(type, v), v.size()));
    EXPECT_LT(error, bound) << dtypeName(type);
    EXPECT_GT(error, bound / 4) << dtypeName(type) << ": too good to be quantized";
  }
}

TEST(Quantize, KBlocksAreValid) {
  std::vector<float> v = gaussian(256 * 8, 1.0f, 5);
  for (size_t i = 256; i < 512; ++i)
    v[i] = std::fabs(v[i]) + 2.0f; // All positive: the min is 0.
  for (size_t i = 512; i < 768; ++i)
    v[i] = -std::fabs(v[i]) - 2.0f; // All negative.
  v[900] = 40.0f;                   // A spike.
  std::vector<uint8_t> q4 = quantized(SourceDType::Q4_K, v);
  std::vector<uint8_t> q6 = quantized(SourceDType::Q6_K, v);
  for (size_t b = 0; b < 8; ++b) {
    const uint8_t *block4 = q4.data() + 144 * b, *block6 = q6.data() + 210 * b;
    const float d = halfToFloat(uint16_t(block4[0] | block4[1] << 8));
    const float dmin = halfToFloat(uint16_t(block4[2] | block4[3] << 8));
    EXPECT_TRUE(std::isfinite(d) && d >= 0) << b;
    EXPECT_TRUE(std::isfinite(dmin) && dmin >= 0) << b;
    EXPECT_TRUE(std::isfinite(halfToFloat(uint16_t(block6[208] | block6[209] << 8)))) << b;
  }
  // Every weight within one grid step of its value (rounding alone gives
  // half a step): Q4_K's step spans [min(x, 0), max(x)] of its 32-weight
  // sub-block in 15, Q6_K's max|x| of its 16 in 32.
  const std::vector<float> back4 = dequantized(SourceDType::Q4_K, q4, v.size());
  const std::vector<float> back6 = dequantized(SourceDType::Q6_K, q6, v.size());
  for (size_t sub = 0; sub < v.size() / 32; ++sub) {
    const auto first = v.begin() + ptrdiff_t(32 * sub), last = first + 32;
    const float lo = std::min(0.0f, *std::min_element(first, last)),
                hi = *std::max_element(first, last);
    for (size_t i = 32 * sub; i < 32 * sub + 32; ++i)
      EXPECT_LE(std::fabs(back4[i] - v[i]), (hi - lo) / 15) << "Q4_K " << i;
  }
  for (size_t sub = 0; sub < v.size() / 16; ++sub) {
    float amax = 0;
    for (size_t i = 16 * sub; i < 16 * sub + 16; ++i)
      amax = std::max(amax, std::fabs(v[i]));
    for (size_t i = 16 * sub; i < 16 * sub + 16; ++i)
      EXPECT_LE(std::fabs(back6[i] - v[i]), amax / 32) << "Q6_K " << i;
  }
  EXPECT_NEAR(back4[900], 40.0f, 1.5f);
  EXPECT_NEAR(back6[900], 40.0f, 0.4f);
}

TEST(Quantize, KBlocksOfZerosAndConstants) {
  for (SourceDType type : {SourceDType::Q4_K, SourceDType::Q6_K}) {
    for (float c : {0.0f, 1.0f, -0.37f, 1000.0f}) {
      const std::vector<float> v(512, c);
      const std::vector<float> back = dequantized(type, quantized(type, v), v.size());
      for (float x : back)
        ASSERT_NEAR(x, c, std::fabs(c) * 2e-3) << dtypeName(type) << " " << c;
    }
  }
}

TEST(Quantize, RequantizingDequantizedValuesReproducesThem) {
  // The values a block stands for are on its grid; quantizing them again
  // finds that grid (exactly, for every type, on this data).
  for (float sigma : {1e-3f, 0.02f, 1.0f, 100.0f}) {
    const std::vector<float> v = gaussian(256 * 32, sigma, uint32_t(sigma * 1000) + 1);
    for (SourceDType type :
         {SourceDType::Q8_0, SourceDType::Q4_0, SourceDType::Q4_K, SourceDType::Q6_K}) {
      const std::vector<float> once = dequantized(type, quantized(type, v), v.size());
      const std::vector<float> twice = dequantized(type, quantized(type, once), v.size());
      for (size_t i = 0; i < v.size(); ++i)
        ASSERT_EQ(bitsOf(twice[i]) & 0x7FFFFFFF, bitsOf(once[i]) & 0x7FFFFFFF)
            << dtypeName(type) << " sigma " << sigma << " element " << i;
    }
  }
}
