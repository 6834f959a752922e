// Zeroed memory for the buffers kernels read and write (KV caches, scratch,
// step inputs): the large ones backed by transparent huge pages where the
// kernel allows them.
#pragma once

#include <cstddef>

namespace quill {

/// `bytes` of zeroed memory, 64-byte aligned, or null when it cannot be
/// had. From 2 MiB on it is aligned to 2 MiB and the kernel is asked for
/// huge pages (madvise; a kernel that gives none leaves 4 KiB pages): a
/// stream over a cache block then crosses no 4 KiB page boundary, at each
/// of which the hardware prefetcher stops, and needs no TLB walk per page.
/// Free it with std::free.
void *allocateLargeBuffer(size_t bytes);

} // namespace quill
