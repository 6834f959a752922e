// Row groups (RowGroups.h): a reader written here from the layout that
// #quill.row_groups documents (QuillAttrs.td) must find every element of
// the rearranged weight equal to the file's block dequantized by the GGUF
// formulas (convertToFloat), for Q8_0 and Q4_0 and groups of 8 and 16.
#include "compiler/Import/RowGroups.h"
#include "compiler/Import/Quantize.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

using namespace quill;

namespace {

constexpr int64_t kBlock = 32; // Elements per Q8_0 / Q4_0 block.

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
  const bool q8 = type == SourceDType::Q8_0;
  const int64_t block = q8 ? 34 : 18, rowBytes = cols / kBlock * block;
  const int64_t group = row / lanes, lane = row % lanes, b = col / kBlock, i = col % kBlock;
  const uint8_t *base = grouped.data() + group * lanes * rowBytes + b * lanes * block;
  const uint16_t scaleBits = uint16_t(base[2 * lane] | (base[2 * lane + 1] << 8));
  // Byte m of the block's quants: word m / 4 of row `lane`, byte m % 4.
  auto quantByte = [&](int64_t m) {
    return base[2 * lanes + ((m / 4) * lanes + lane) * 4 + m % 4];
  };
  int q;
  if (q8)
    q = int(int8_t(quantByte(i) ^ 0x80));
  else
    q = (i < 16 ? (quantByte(i) & 0x0F) : (quantByte(i - 16) >> 4)) - 8;
  return halfToFloat(scaleBits) * float(q);
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

TEST(RowGroups, Q8_0ReadsBackAsTheFileDequantizes) {
  expectSameWeight(SourceDType::Q8_0, 48, 96, 16);
  expectSameWeight(SourceDType::Q8_0, 48, 96, 8);
}

TEST(RowGroups, Q4_0ReadsBackAsTheFileDequantizes) {
  expectSameWeight(SourceDType::Q4_0, 32, 128, 16);
  expectSameWeight(SourceDType::Q4_0, 24, 64, 8);
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

TEST(RowGroups, RefusesWhatItCannotGroup) {
  std::vector<uint8_t> bytes(3 * 34);
  EXPECT_FALSE(groupWeightRows(bytes, SourceDType::Q8_0, 3, 2).isOk()); // 3 rows, groups of 2.
  EXPECT_FALSE(groupWeightRows(bytes, SourceDType::Q4_K, 3, 1).isOk()); // Not Q8_0 / Q4_0.
  std::vector<uint8_t> ragged(2 * 35);
  EXPECT_FALSE(groupWeightRows(ragged, SourceDType::Q8_0, 2, 2).isOk()); // Not whole blocks.
}
