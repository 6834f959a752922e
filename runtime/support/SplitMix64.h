// splitmix64 (Steele, Lea, Flood 2014), the one counter-based generator that
// synthetic weights and per-sample seeds draw from.
#pragma once

#include <cstdint>

namespace quill {

/// 2^64 / phi rounded to odd: splitmix64's increment, also a good odd
/// multiplier and a fixed nonzero constant wherever one is needed.
inline constexpr uint64_t kSplitMix64Gamma = 0x9e3779b97f4a7c15ULL;

/// splitmix64's finalizer: a bijective 64-bit mix, so consecutive inputs
/// give unrelated outputs.
constexpr uint64_t splitMix64Mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/// The `n`-th value (counting from 1) a splitmix64 generator seeded with
/// `seed` returns. splitmix64 is a counter generator, so any element can be
/// had without the ones before it.
constexpr uint64_t splitMix64At(uint64_t seed, uint64_t n) {
  return splitMix64Mix(seed + n * kSplitMix64Gamma);
}

} // namespace quill
