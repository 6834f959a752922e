// The kernel-launch interface between the decode loop and a device. The CPU
// implements it with oneTBB; a GPU implementation can be added beside it
// without touching the decode loop.
#pragma once

#include "runtime/kv_cache/KVCache.h"

#include <cstdint>
#include <string>

namespace quill {

class Device {
public:
  virtual ~Device() = default;
  /// "cpu", later "cuda".
  virtual const char *name() const = 0;
  /// Runs the compiled step for `token` at position `pos`: writes that
  /// position's keys and values into the cache and computes the logits.
  virtual void step(int32_t token, int32_t pos) = 0;
  /// The logits of the last step: one float per vocabulary entry, valid until
  /// the next step.
  virtual const float *logits() const = 0;
  virtual KVCache &kvCache() = 0;
  /// A line or two on what runs where, for --verbose.
  virtual std::string describe() const = 0;
};

} // namespace quill
