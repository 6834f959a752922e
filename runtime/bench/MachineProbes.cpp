// Bandwidth and FMA-peak probes. Measurement code, not model arithmetic: the
// model's math always comes from compiled kernels.
#include "runtime/bench/MachineProbes.h"

#include <tbb/parallel_for.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace quill {

namespace {

using Clock = std::chrono::steady_clock;
typedef float Vec16 __attribute__((vector_size(64)));

constexpr int kStreams = 4; // Independent read streams in flight per thread.

/// Sums `count` floats from each of kStreams streams spaced `stride` apart.
/// Cloned per ISA so the loads are as wide as the CPU allows.
__attribute__((target_clones("avx512f", "avx2", "default"))) float
sumStreams(const float *base, size_t count, size_t stride) {
  Vec16 acc[kStreams] = {};
  for (size_t i = 0; i + 16 <= count; i += 16)
    for (int s = 0; s < kStreams; ++s) {
      Vec16 v;
      std::memcpy(&v, base + s * stride + i, sizeof v);
      acc[s] += v;
    }
  float total = 0;
  for (int s = 0; s < kStreams; ++s)
    for (int lane = 0; lane < 16; ++lane)
      total += acc[s][lane];
  return total;
}

/// Returns FLOPs done; 12 independent FMA chains of 16 lanes.
__attribute__((target_clones("avx512f", "avx2", "default"))) double
fmaChains(long iterations, float seed, float *sink) {
  constexpr int kChains = 12;
  Vec16 acc[kChains];
  for (int c = 0; c < kChains; ++c)
    acc[c] = Vec16{} + seed * float(c + 1);
  Vec16 a = Vec16{} + 0.999999f, b = Vec16{} + 1e-7f;
  for (long i = 0; i < iterations; ++i)
    for (int c = 0; c < kChains; ++c)
      acc[c] = acc[c] * a + b; // Contracted into one FMA (-ffp-contract=fast).
  Vec16 total = {};
  for (int c = 0; c < kChains; ++c)
    total += acc[c];
  *sink = total[0];
  return double(iterations) * kChains * 16 * 2;
}

} // namespace

double measureReadBandwidth(tbb::task_arena &arena, int repeats) {
  const int threads = arena.max_concurrency();
  // 512 MiB: far beyond any last-level cache here.
  const size_t totalFloats = size_t(512) << 20 >> 2;
  const size_t perThread = totalFloats / threads / kStreams / 16 * 16 * kStreams;
  float *buffer = static_cast<float *>(std::aligned_alloc(64, totalFloats * sizeof(float)));
  if (!buffer)
    return 0;
  // First touch by the threads that will read it.
  arena.execute([&] {
    tbb::parallel_for(
        0, threads,
        [&](int t) { std::fill(buffer + t * perThread, buffer + (t + 1) * perThread, 1.0f); },
        tbb::static_partitioner());
  });
  double best = 0;
  std::vector<float> sinks(threads);
  for (int r = 0; r < repeats; ++r) {
    auto start = Clock::now();
    arena.execute([&] {
      tbb::parallel_for(
          0, threads,
          [&](int t) {
            size_t stride = perThread / kStreams;
            sinks[t] = sumStreams(buffer + t * perThread, stride, stride);
          },
          tbb::static_partitioner());
    });
    double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    best = std::max(best, double(perThread) * threads * sizeof(float) / seconds / 1e9);
  }
  std::free(buffer);
  return best;
}

double measureFmaPeak(tbb::task_arena &arena, int repeats) {
  const int threads = arena.max_concurrency();
  std::vector<float> sinks(threads);
  double best = 0;
  for (int r = 0; r < repeats; ++r) {
    std::vector<double> flops(threads);
    auto start = Clock::now();
    arena.execute([&] {
      tbb::parallel_for(
          0, threads, [&](int t) { flops[t] = fmaChains(4'000'000, 1.0f + t, &sinks[t]); },
          tbb::static_partitioner());
    });
    double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    double total = 0;
    for (double f : flops)
      total += f;
    best = std::max(best, total / seconds / 1e9);
  }
  return best;
}

} // namespace quill
