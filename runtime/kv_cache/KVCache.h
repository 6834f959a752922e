// The KV cache of one sequence: memory the compiled kernels write keys and
// values into, and the count of positions it holds.
#pragma once

#include "runtime/support/Error.h"
#include "runtime/support/LargeBuffer.h"

#include <cstddef>
#include <cstdint>
#include <memory>

namespace quill {

/// Owns `bytes` of zeroed, page-aligned memory laid out by the compiler
/// (per layer, keys then values, one row per position) and tracks how many
/// positions hold valid entries. Positions are only ever appended at the end,
/// so earlier entries are never recomputed.
class KVCache {
public:
  /// `hostMemory` false keeps the count of positions only, for a device
  /// whose cache lives in its own memory (data() is then null).
  KVCache(uint64_t bytes, int32_t capacity, bool hostMemory = true);

  void *data() { return memory_.data(); }
  uint64_t bytes() const { return bytes_; }
  /// Positions the cache can hold: the model's context length.
  int32_t capacity() const { return capacity_; }
  /// Positions filled so far.
  int32_t length() const { return length_; }

  /// Claims the next `count` positions for a step to write and returns the
  /// first; fails when they do not fit.
  ErrorOr<int32_t> append(int32_t count = 1);
  /// Forgets positions [n, length); their rows are overwritten by later appends.
  void truncate(int32_t n);
  /// Forgets every position (a new sequence).
  void clear() { length_ = 0; }

private:
  LargeBuffer memory_;
  uint64_t bytes_;
  int32_t capacity_;
  int32_t length_ = 0;
};

} // namespace quill
