// Row groups: the file's blocks rearranged for the CPU's int8 kernels.
#include "compiler/Import/RowGroups.h"

#include <cstring>
#include <string>

namespace quill {

Status groupWeightRows(std::vector<uint8_t> &bytes, SourceDType encoding, uint64_t rows,
                       int64_t lanes) {
  if (encoding != SourceDType::Q8_0 && encoding != SourceDType::Q4_0)
    return Status::error(std::string("row groups hold Q8_0 or Q4_0 blocks, not ") +
                         dtypeName(encoding));
  const uint64_t group = uint64_t(lanes);
  if (lanes <= 0 || rows == 0 || rows % group != 0 || bytes.size() % rows != 0)
    return Status::error("row groups of " + std::to_string(lanes) + " do not divide " +
                         std::to_string(rows) + " rows");
  const uint64_t rowBytes = bytes.size() / rows;
  const uint64_t block = uint64_t(blockBytes(encoding)); // 2 scale bytes, then the quants.
  if (rowBytes % block != 0)
    return Status::error("a row of " + std::to_string(rowBytes) + " bytes is not whole blocks");
  const uint64_t blocks = rowBytes / block, words = (block - 2) / 4;
  const uint8_t flip = encoding == SourceDType::Q8_0 ? 0x80 : 0x00;
  std::vector<uint8_t> out(group * rowBytes);
  for (uint64_t first = 0; first < rows; first += group) {
    const uint8_t *in = bytes.data() + first * rowBytes;
    for (uint64_t b = 0; b < blocks; ++b) {
      uint8_t *to = out.data() + b * group * block;
      for (uint64_t r = 0; r < group; ++r) {
        const uint8_t *from = in + r * rowBytes + b * block;
        std::memcpy(to + 2 * r, from, 2);
        for (uint64_t j = 0; j < words; ++j)
          for (uint64_t k = 0; k < 4; ++k)
            to[2 * group + (j * group + r) * 4 + k] = from[2 + 4 * j + k] ^ flip;
      }
    }
    std::memcpy(bytes.data() + first * rowBytes, out.data(), out.size());
  }
  return Status::ok();
}

} // namespace quill
