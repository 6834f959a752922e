// The word order of a block in #quill.row_groups (QuillAttrs.td), shared
// by the artifact's writer (compiler/Import/RowGroups.cpp) and the CPU's
// int8 kernels (compiler/Target/CPU/Int8RowGroups.cpp). Plain C++: the
// writer links no MLIR.
#pragma once

#include <cstdint>

namespace quill {

/// The file word (0-51 of the block after d: ql 0-31, qh 32-47, scales
/// 48-51) that a Q6_K row group stores as its word `stored`: the four
/// scale words first, then per half h and j < 8 the three words whose
/// products decode takes together, ql j and ql 8 + j of the half (its
/// quarters 0 and 2, and 1 and 3) and its qh word j, so that decode reads
/// a block's bytes in address order (interleaved streams 1-2 KiB apart
/// ran at 40% of a sequential read from DRAM).
inline int64_t q6kFileWord(int64_t stored) {
  if (stored < 4)
    return 48 + stored;
  const int64_t m = stored - 4, half = m / 24, j = m % 24 / 3, k = m % 3;
  return k == 2 ? 32 + 8 * half + j : 16 * half + 8 * k + j;
}

/// The inverse: where a Q6_K row group stores file word `file`.
inline int64_t q6kStoredWord(int64_t file) {
  if (file >= 48)
    return file - 48;
  if (file >= 32)
    return 4 + 24 * ((file - 32) / 8) + 3 * ((file - 32) % 8) + 2;
  return 4 + 24 * (file / 16) + 3 * (file % 8) + file % 16 / 8;
}

} // namespace quill
