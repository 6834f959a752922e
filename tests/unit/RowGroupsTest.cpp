// Row groups (RowGroups.h): a reader written here from the layout that
// #quill.row_groups documents (QuillAttrs.td) must find every element of
// the rearranged weight equal to the file's block dequantized by the GGUF
// formulas (convertToFloat), for Q8_0, Q4_0, Q4_K and Q6_K and groups of
// 8 and 16. The K-quants' rules are written here from the GGUF format.
#include "compiler/Import/RowGroups.h"
#include "compiler/Import/Quantize.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

using namespace quill;

namespace {

constexpr int64_t kBlock = 32;  // Elements per Q8_0 / Q4_0 block.
constexpr int64_t kSuper = 256; // Elements per Q4_K / Q6_K super-block.

std::vector<uint8_t> quantizedRows(SourceDType type, int64_t rows, int64_t cols, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const uint64_t rowBytes = dtypeBytes(type, uint64_t(cols)).value();
  std::vector<uint8_t> bytes(rowBytes * uint64_t(rows));
  std::vector<float> row(static_cast<size_t>(cols));
  for (int64_t r = 0; r < rows; ++r) {
    for (float &x : row)
      x = normal(rng) * float(r + 1); // Scales differ from row to row.
    quantizeRow(type, row.data(), cols, bytes.data() + uint64_t(r) * rowBytes);
  }
  return bytes;
}

float halfToFloat(uint16_t h) {
  float f;
  convertToFloat(SourceDType::F16, reinterpret_cast<const uint8_t *>(&h), 1, &f);
  return f;
}

/// Element (row, col) of a grouped weight, read as the attribute's
/// documentation lays it out.
float groupedElement(const std::vector<uint8_t> &grouped, SourceDType type, int64_t cols,
                     int64_t lanes, int64_t row, int64_t col) {
  const bool kQuant = type == SourceDType::Q4_K || type == SourceDType::Q6_K;
  const int64_t elements = kQuant ? kSuper : kBlock;
  const int64_t block = type == SourceDType::Q8_0   ? 34
                        : type == SourceDType::Q4_0 ? 18
                        : type == SourceDType::Q4_K ? 144
                                                    : 210;
  const int64_t halves = type == SourceDType::Q4_K ? 0 : 2; // Bytes of the f16 scale.
  const int64_t rowBytes = cols / elements * block;
  const int64_t group = row / lanes, lane = row % lanes, b = col / elements, i = col % elements;
  const uint8_t *base = grouped.data() + group * lanes * rowBytes + b * lanes * block;
  // Byte m of the block's words: word m / 4 of row `lane`, byte m % 4.
  auto byte = [&](int64_t m) {
    return base[halves * lanes + ((m / 4) * lanes + lane) * 4 + m % 4];
  };
  auto half = [&](uint8_t low, uint8_t high) { return halfToFloat(uint16_t(low | (high << 8))); };
  if (type == SourceDType::Q8_0 || type == SourceDType::Q4_0) {
    const float d = half(base[2 * lane], base[2 * lane + 1]);
    int q;
    if (type == SourceDType::Q8_0)
      q = int(int8_t(byte(i) ^ 0x80));
    else
      q = (i < 16 ? (byte(i) & 0x0F) : (byte(i - 16) >> 4)) - 8;
    return d * float(q);
  }
  if (type == SourceDType::Q4_K) {
    // d, dmin, 12 bytes of 6-bit scales and mins, 128 bytes of nibbles:
    // sub-block s (32 weights) is the low (s even) or high nibbles of
    // bytes 32 * (s / 2) ...
    const float d = half(byte(0), byte(1)), dmin = half(byte(2), byte(3));
    auto q = [&](int64_t k) { return byte(4 + k); }; // The scale bytes.
    const int64_t s = i / 32, l = i % 32;
    int sc, m;
    if (s < 4) {
      sc = q(s) & 63;
      m = q(s + 4) & 63;
    } else {
      sc = (q(s + 4) & 0x0F) | ((q(s - 4) >> 6) << 4);
      m = (q(s + 4) >> 4) | ((q(s) >> 6) << 4);
    }
    const uint8_t packed = byte(16 + 32 * (s / 2) + l);
    const int nibble = s % 2 ? packed >> 4 : packed & 0x0F;
    return d * float(sc) * float(nibble) - dmin * float(m);
  }
  // Q6_K: ql[128], qh[64], 16 int8 scales, then d (stored first here);
  // the words in the attribute's order: the 4 scale words, then per half
  // h and j < 8 ql word 16h + j, ql word 16h + 8 + j, qh word 32 + 8h + j.
  std::vector<int64_t> storedOrder = {48, 49, 50, 51}; // File words, as stored.
  for (int64_t h = 0; h < 2; ++h)
    for (int64_t j = 0; j < 8; ++j)
      storedOrder.insert(storedOrder.end(), {16 * h + j, 16 * h + 8 + j, 32 + 8 * h + j});
  auto fileByte = [&](int64_t m) {
    const int64_t stored =
        std::find(storedOrder.begin(), storedOrder.end(), m / 4) - storedOrder.begin();
    return byte(4 * stored + m % 4);
  };
  const float d = half(base[2 * lane], base[2 * lane + 1]);
  const int64_t h = i / 128, quarter = (i % 128) / 32, l = i % 32;
  const uint8_t low = fileByte(64 * h + 32 * (quarter % 2) + l);
  const int nibble = quarter / 2 ? low >> 4 : low & 0x0F;
  const int top = (fileByte(128 + 32 * h + l) >> (2 * quarter)) & 3;
  const int scale = int(int8_t(fileByte(192 + 8 * h + l / 16 + 2 * quarter)));
  return d * float(scale) * float((nibble | (top << 4)) - 32);
}

void expectSameWeight(SourceDType type, int64_t rows, int64_t cols, int64_t lanes) {
  const std::vector<uint8_t> file = quantizedRows(type, rows, cols, 7);
  std::vector<uint8_t> grouped = file;
  ASSERT_TRUE(groupWeightRows(grouped, type, uint64_t(rows), lanes).isOk());
  ASSERT_EQ(grouped.size(), file.size());
  const uint64_t rowBytes = file.size() / uint64_t(rows);
  std::vector<float> expected(static_cast<size_t>(cols));
  for (int64_t r = 0; r < rows; ++r) {
    convertToFloat(type, file.data() + uint64_t(r) * rowBytes, cols, expected.data());
    for (int64_t c = 0; c < cols; ++c)
      ASSERT_EQ(groupedElement(grouped, type, cols, lanes, r, c), expected[size_t(c)])
          << dtypeName(type) << " lanes " << lanes << " row " << r << " col " << c;
  }
}

} // namespace

TEST(RowGroups, EveryTypeReadsBackAsTheFileDequantizes) {
  struct Case {
    SourceDType type;
    int64_t rows, cols, lanes;
  };
  for (const Case &c : {Case{SourceDType::Q8_0, 48, 96, 16}, Case{SourceDType::Q8_0, 48, 96, 8},
                        Case{SourceDType::Q4_0, 32, 128, 16}, Case{SourceDType::Q4_0, 24, 64, 8},
                        Case{SourceDType::Q4_K, 32, 512, 16}, Case{SourceDType::Q4_K, 16, 256, 8},
                        Case{SourceDType::Q6_K, 32, 512, 16}, Case{SourceDType::Q6_K, 16, 256, 8}})
    expectSameWeight(c.type, c.rows, c.cols, c.lanes);
}

TEST(RowGroups, ScalesOfAGroupComeFirstInEachBlock) {
  // Two Q8_0 rows of one block each: the group's block starts with both
  // scales, then word 0 of row 0, word 0 of row 1, ...
  std::vector<uint8_t> bytes(2 * 34);
  for (int r = 0; r < 2; ++r) {
    bytes[size_t(r * 34)] = uint8_t(0x10 + r);
    bytes[size_t(r * 34 + 1)] = 0x3C;
    for (int i = 0; i < 32; ++i)
      bytes[size_t(r * 34 + 2 + i)] = uint8_t(r * 32 + i);
  }
  ASSERT_TRUE(groupWeightRows(bytes, SourceDType::Q8_0, 2, 2).isOk());
  EXPECT_EQ(bytes[0], 0x10);
  EXPECT_EQ(bytes[2], 0x11);
  // Word 0 of row 0 is quants 0..3 with the sign bit flipped, then row 1's.
  EXPECT_EQ(bytes[4], 0x80);
  EXPECT_EQ(bytes[7], 0x83);
  EXPECT_EQ(bytes[8], uint8_t(32 ^ 0x80));
  EXPECT_EQ(bytes[12], uint8_t(4 ^ 0x80));
}

TEST(RowGroups, Q6KWordOrderIsAPermutationAndItsInverse) {
  std::vector<int> seen(52, 0);
  for (int64_t stored = 0; stored < 52; ++stored) {
    const int64_t file = q6kFileWord(stored);
    ASSERT_GE(file, 0);
    ASSERT_LT(file, 52);
    ++seen[size_t(file)];
    EXPECT_EQ(q6kStoredWord(file), stored);
  }
  for (int n : seen)
    EXPECT_EQ(n, 1);
}

TEST(RowGroups, RefusesWhatItCannotGroup) {
  std::vector<uint8_t> bytes(3 * 34);
  EXPECT_FALSE(groupWeightRows(bytes, SourceDType::Q8_0, 3, 2).isOk()); // 3 rows, groups of 2.
  EXPECT_FALSE(groupWeightRows(bytes, SourceDType::F16, 3, 1).isOk());  // Not a block type.
  std::vector<uint8_t> ragged(2 * 35);
  EXPECT_FALSE(groupWeightRows(ragged, SourceDType::Q8_0, 2, 2).isOk()); // Not whole blocks.
}
