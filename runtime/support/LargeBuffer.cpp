#include "runtime/support/LargeBuffer.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <sys/mman.h>

namespace quill {

void *allocateLargeBuffer(size_t bytes) {
  constexpr size_t kHugePage = size_t(2) << 20;
  const size_t alignment = bytes >= kHugePage ? kHugePage : 64;
  if (bytes > SIZE_MAX - alignment)
    return nullptr;
  const size_t rounded = (std::max<size_t>(bytes, 64) + alignment - 1) / alignment * alignment;
  void *memory = std::aligned_alloc(alignment, rounded);
  if (!memory)
    return nullptr;
  // Asked before the first touch, so that the pages come huge. A refusal
  // (no THP in this kernel) only keeps the small pages.
  if (alignment == kHugePage)
    (void)madvise(memory, rounded, MADV_HUGEPAGE);
  std::memset(memory, 0, rounded);
  return memory;
}

} // namespace quill
