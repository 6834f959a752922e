// The single-sequence KV cache.
#include "runtime/kv_cache/KVCache.h"

#include <algorithm>
#include <new>

namespace quill {

KVCache::KVCache(uint64_t bytes, int32_t capacity, bool hostMemory)
    : bytes_(bytes), capacity_(capacity) {
  if (!hostMemory)
    return;
  memory_ = LargeBuffer::allocate(bytes);
  if (!memory_)
    throw std::bad_alloc();
}

ErrorOr<int32_t> KVCache::append(int32_t count) {
  if (count < 1 || count > capacity_ - length_)
    return Status::error("the KV cache is full (" + std::to_string(capacity_) + " positions)");
  int32_t first = length_;
  length_ += count;
  return first;
}

void KVCache::truncate(int32_t n) { length_ = std::clamp(n, 0, length_); }

} // namespace quill
