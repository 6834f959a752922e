// The pseudo-random stream behind sampling: small, seeded, and identical on
// every machine and compiler (no std:: distributions, whose output varies).
#pragma once

#include "runtime/support/SplitMix64.h"

#include <cstdint>

namespace quill {

/// xorshift64* (Vigna 2014), the generator llama2.c's run.c uses, so a seed
/// gives the same coin stream as `run ... -s seed`. Not for cryptography.
class Random {
public:
  /// Seed 0 would keep xorshift's state at 0 forever, so it stands for a fixed
  /// nonzero state instead; every seed is still deterministic.
  explicit Random(uint64_t seed = 0) : state_(seed != 0 ? seed : kStateForSeedZero) {}

  /// The next 32 random bits.
  uint32_t nextU32() {
    state_ ^= state_ >> 12;
    state_ ^= state_ << 25;
    state_ ^= state_ >> 27;
    return static_cast<uint32_t>((state_ * 0x2545F4914F6CDD1DULL) >> 32);
  }

  /// A float uniform on [0, 1): the top 24 bits, which a float holds exactly.
  float nextFloat() { return static_cast<float>(nextU32() >> 8) / 16777216.0f; }

  uint64_t state() const { return state_; }

private:
  static constexpr uint64_t kStateForSeedZero = kSplitMix64Gamma;
  uint64_t state_;
};

} // namespace quill
