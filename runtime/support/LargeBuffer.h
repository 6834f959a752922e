// Zeroed memory for the buffers kernels read and write (KV caches, scratch,
// step inputs, a copy of the weights): anonymous mappings, the large ones
// backed by transparent huge pages where the kernel allows them.
#pragma once

#include <cstddef>
#include <cstdint>

namespace quill {

/// An anonymous private mapping of at least `size` bytes, page aligned and
/// zero. Its pages are zeroed by the kernel on first touch, not up front: a
/// KV cache sized for the whole context costs nothing for the positions a
/// short run never reaches. From 2 MiB on it is aligned to 2 MiB and the
/// kernel is asked for huge pages (madvise; a kernel that gives none leaves
/// 4 KiB pages): a stream over it then crosses no 4 KiB page boundary, at
/// each of which the hardware prefetcher stops, and needs no TLB walk per
/// page.
class LargeBuffer {
public:
  LargeBuffer() = default;
  /// An empty buffer (operator bool false) when the memory cannot be had.
  static LargeBuffer allocate(size_t size);

  LargeBuffer(LargeBuffer &&other) noexcept;
  LargeBuffer &operator=(LargeBuffer &&other) noexcept;
  LargeBuffer(const LargeBuffer &) = delete;
  LargeBuffer &operator=(const LargeBuffer &) = delete;
  ~LargeBuffer();

  uint8_t *data() const { return data_; }
  size_t size() const { return size_; }
  /// Bytes of the buffer the kernel backs with huge pages now (smaps'
  /// AnonHugePages of the mapping that holds it, at most size(); should the
  /// kernel merge it with an adjacent buffer of the same flags, their huge
  /// pages count together): 0 for a small buffer, with THP off, or before
  /// the pages are touched.
  size_t hugePageBytes() const;
  explicit operator bool() const { return data_ != nullptr; }

private:
  void release();

  uint8_t *data_ = nullptr;
  size_t size_ = 0; ///< The mapped length, a whole number of pages.
};

} // namespace quill
