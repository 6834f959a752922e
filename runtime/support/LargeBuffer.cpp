#include "runtime/support/LargeBuffer.h"

#include "runtime/support/ProcessMappings.h"

#include <algorithm>
#include <cstdint>
#include <sys/mman.h>
#include <unistd.h>
#include <utility>

namespace quill {

namespace {
constexpr size_t kHugePage = size_t(2) << 20;
} // namespace

LargeBuffer LargeBuffer::allocate(size_t size) {
  const size_t page = size_t(sysconf(_SC_PAGESIZE));
  const size_t alignment = size >= kHugePage ? kHugePage : page;
  if (size > SIZE_MAX - 2 * alignment)
    return {};
  const size_t length = (std::max<size_t>(size, 1) + alignment - 1) / alignment * alignment;
  // Over-map by one alignment and trim both ends, so that the start is aligned.
  const size_t mapped = alignment == page ? length : length + alignment;
  void *memory = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED)
    return {};
  auto *start = static_cast<uint8_t *>(memory);
  if (alignment != page) {
    auto *aligned = reinterpret_cast<uint8_t *>(
        (reinterpret_cast<uintptr_t>(start) + alignment - 1) / alignment * alignment);
    if (aligned != start)
      munmap(start, size_t(aligned - start));
    if (size_t tail = size_t(start + mapped - (aligned + length)))
      munmap(aligned + length, tail);
    start = aligned;
    // Asked before the first touch, so that the pages come huge. A refusal
    // (no THP in this kernel) only keeps the small pages.
    (void)madvise(start, length, MADV_HUGEPAGE);
  }
  LargeBuffer buffer;
  buffer.data_ = start;
  buffer.size_ = length;
  return buffer;
}

size_t LargeBuffer::hugePageBytes() const {
  if (!data_)
    return 0;
  return std::min(mappingOf(data_).kibField("AnonHugePages:"), size_);
}

LargeBuffer::LargeBuffer(LargeBuffer &&other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

LargeBuffer &LargeBuffer::operator=(LargeBuffer &&other) noexcept {
  if (this != &other) {
    release();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

LargeBuffer::~LargeBuffer() { release(); }

void LargeBuffer::release() {
  if (data_)
    munmap(data_, size_);
  data_ = nullptr;
  size_ = 0;
}

} // namespace quill
