// Row groups: the file's blocks rearranged for the CPU's int8 kernels.
#include "compiler/Import/RowGroups.h"

#include <cstring>
#include <string>

namespace quill {

namespace {

/// Where a block of `encoding` keeps the f16 scale that sits outside its
/// 4-byte words: Q8_0's and Q4_0's first two bytes, Q6_K's last two; a
/// Q4_K block is whole words (d and dmin are its word 0). -1: none.
int64_t halfScaleAt(SourceDType encoding) {
  switch (encoding) {
  case SourceDType::Q8_0:
  case SourceDType::Q4_0:
    return 0;
  case SourceDType::Q6_K:
    return 208;
  default:
    return -1;
  }
}

} // namespace

Status groupWeightRows(std::vector<uint8_t> &bytes, SourceDType encoding, uint64_t rows,
                       int64_t lanes) {
  if (encoding != SourceDType::Q8_0 && encoding != SourceDType::Q4_0 &&
      encoding != SourceDType::Q4_K && encoding != SourceDType::Q6_K)
    return Status::error(std::string("row groups hold Q8_0, Q4_0, Q4_K or Q6_K blocks, not ") +
                         dtypeName(encoding));
  const uint64_t group = uint64_t(lanes);
  if (lanes <= 0 || rows == 0 || rows % group != 0 || bytes.size() % rows != 0)
    return Status::error("row groups of " + std::to_string(lanes) + " do not divide " +
                         std::to_string(rows) + " rows");
  const uint64_t rowBytes = bytes.size() / rows;
  const uint64_t block = uint64_t(blockBytes(encoding));
  if (rowBytes % block != 0)
    return Status::error("a row of " + std::to_string(rowBytes) + " bytes is not whole blocks");
  const int64_t halfAt = halfScaleAt(encoding);
  const uint64_t halfBytes = halfAt < 0 ? 0 : 2;
  // The block's words: the bytes around its f16 scale.
  const uint64_t wordsFrom = halfAt == 0 ? 2 : 0;
  const uint64_t blocks = rowBytes / block, words = (block - halfBytes) / 4;
  const uint8_t flip = encoding == SourceDType::Q8_0 ? 0x80 : 0x00;
  std::vector<uint8_t> out(group * rowBytes);
  for (uint64_t first = 0; first < rows; first += group) {
    const uint8_t *in = bytes.data() + first * rowBytes;
    for (uint64_t b = 0; b < blocks; ++b) {
      uint8_t *to = out.data() + b * group * block;
      for (uint64_t r = 0; r < group; ++r) {
        const uint8_t *from = in + r * rowBytes + b * block;
        if (halfBytes)
          std::memcpy(to + 2 * r, from + halfAt, 2);
        for (uint64_t j = 0; j < words; ++j) {
          const uint64_t fileWord =
              encoding == SourceDType::Q6_K ? uint64_t(q6kFileWord(int64_t(j))) : j;
          for (uint64_t k = 0; k < 4; ++k)
            to[halfBytes * group + (j * group + r) * 4 + k] =
                from[wordsFrom + 4 * fileWord + k] ^ flip;
        }
      }
    }
    std::memcpy(bytes.data() + first * rowBytes, out.data(), out.size());
  }
  return Status::ok();
}

} // namespace quill
