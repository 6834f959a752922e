// Bandwidth and FMA-peak probes. Measurement code, not model arithmetic: the
// model's math always comes from compiled kernels.
#include "runtime/bench/MachineProbes.h"
#include "runtime/support/LargeBuffer.h"

#include <tbb/parallel_for.h>

#include <immintrin.h>

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

/// Returns FLOPs done: 12 independent FMA chains of `Vec` (each a whole
/// register, so that the chains and the two operands stay in registers:
/// 14 of AVX2's 16 ymm, of AVX-512's 32 zmm), enough to cover an FMA's
/// latency on two pipes.
template <typename Vec, int Lanes>
__attribute__((always_inline)) inline double fmaChains(long iterations, float seed, float *sink) {
  constexpr int kChains = 12;
  Vec acc[kChains];
  for (int c = 0; c < kChains; ++c)
    acc[c] = Vec{} + seed * float(c + 1);
  Vec a = Vec{} + 0.999999f, b = Vec{} + 1e-7f;
  for (long i = 0; i < iterations; ++i)
    for (int c = 0; c < kChains; ++c)
      acc[c] = acc[c] * a + b; // Contracted into one FMA (-ffp-contract=fast).
  Vec total = {};
  for (int c = 0; c < kChains; ++c)
    total += acc[c];
  *sink = total[0];
  return double(iterations) * kChains * Lanes * 2;
}
typedef float Vec8 __attribute__((vector_size(32)));
typedef float Vec4 __attribute__((vector_size(16)));
__attribute__((target("avx512f"))) double fmaChainsZmm(long iterations, float seed, float *sink) {
  return fmaChains<Vec16, 16>(iterations, seed, sink);
}
__attribute__((target("avx2,fma"))) double fmaChainsYmm(long iterations, float seed, float *sink) {
  return fmaChains<Vec8, 8>(iterations, seed, sink);
}
double fmaChainsXmm(long iterations, float seed, float *sink) {
  return fmaChains<Vec4, 4>(iterations, seed, sink);
}

/// 12 independent vpdpbusd chains; returns the ops done (2 per byte pair).
/// The operands pass through an empty asm so that the compiler cannot fold
/// the products of constants.
__attribute__((target("avx512f,avx512vnni"))) double dotChainsZmm(long iterations, int seed,
                                                                  int *sink) {
  constexpr int kChains = 12;
  __m512i acc[kChains];
  for (int c = 0; c < kChains; ++c)
    acc[c] = _mm512_set1_epi32(seed + c);
  __m512i a = _mm512_set1_epi8(3), b = _mm512_set1_epi8(-5);
  asm("" : "+v"(a), "+v"(b));
  for (long i = 0; i < iterations; ++i)
    for (int c = 0; c < kChains; ++c)
      acc[c] = _mm512_dpbusd_epi32(acc[c], a, b);
  __m512i total = acc[0];
  for (int c = 1; c < kChains; ++c)
    total = _mm512_add_epi32(total, acc[c]);
  *sink = _mm512_reduce_add_epi32(total);
  return double(iterations) * kChains * 64 * 2;
}

__attribute__((target("avx2,avxvnni"))) double dotChainsYmm(long iterations, int seed, int *sink) {
  constexpr int kChains = 12;
  __m256i acc[kChains];
  for (int c = 0; c < kChains; ++c)
    acc[c] = _mm256_set1_epi32(seed + c);
  __m256i a = _mm256_set1_epi8(3), b = _mm256_set1_epi8(-5);
  asm("" : "+v"(a), "+v"(b));
  for (long i = 0; i < iterations; ++i)
    for (int c = 0; c < kChains; ++c)
      acc[c] = _mm256_dpbusd_avx_epi32(acc[c], a, b);
  __m256i total = acc[0];
  for (int c = 1; c < kChains; ++c)
    total = _mm256_add_epi32(total, acc[c]);
  int lanes[8];
  _mm256_storeu_si256(reinterpret_cast<__m256i *>(lanes), total);
  *sink = lanes[0];
  return double(iterations) * kChains * 32 * 2;
}

/// AVX2's int8 products as the kernels run them: 6 chains of vpmaddubsw
/// summed in i16 (vpaddw), widened once at the end; 2 ops per byte pair.
/// The chains' weight operands pass through one empty asm every iteration,
/// so the products are neither hoisted nor shared; named variables (not
/// arrays) keep everything in registers.
__attribute__((target("avx2"))) double pairChainsYmm(long iterations, int seed, int *sink) {
  __m256i s0 = _mm256_set1_epi16(short(seed)), s1 = s0, s2 = s0, s3 = s0, s4 = s0, s5 = s0;
  __m256i a0 = _mm256_set1_epi8(3), a1 = _mm256_set1_epi8(4), a2 = _mm256_set1_epi8(5),
          a3 = _mm256_set1_epi8(6), a4 = _mm256_set1_epi8(7), a5 = _mm256_set1_epi8(8);
  const __m256i b = _mm256_set1_epi8(-5);
  for (long i = 0; i < iterations; ++i) {
    asm("" : "+x"(a0), "+x"(a1), "+x"(a2), "+x"(a3), "+x"(a4), "+x"(a5));
    s0 = _mm256_add_epi16(s0, _mm256_maddubs_epi16(a0, b));
    s1 = _mm256_add_epi16(s1, _mm256_maddubs_epi16(a1, b));
    s2 = _mm256_add_epi16(s2, _mm256_maddubs_epi16(a2, b));
    s3 = _mm256_add_epi16(s3, _mm256_maddubs_epi16(a3, b));
    s4 = _mm256_add_epi16(s4, _mm256_maddubs_epi16(a4, b));
    s5 = _mm256_add_epi16(s5, _mm256_maddubs_epi16(a5, b));
  }
  const __m256i ones = _mm256_set1_epi16(1);
  __m256i total = _mm256_madd_epi16(s0, ones);
  for (__m256i s : {s1, s2, s3, s4, s5})
    total = _mm256_add_epi32(total, _mm256_madd_epi16(s, ones));
  int lanes[8];
  _mm256_storeu_si256(reinterpret_cast<__m256i *>(lanes), total);
  *sink = lanes[0];
  return double(iterations) * 6 * 32 * 2;
}

/// Runs `chains` on every thread of `arena`, the best of `repeats`, in
/// giga-ops (or GFLOP) per second.
template <typename Chains>
double bestRate(tbb::task_arena &arena, int repeats, const Chains &chains) {
  const int threads = arena.max_concurrency();
  double best = 0;
  for (int r = 0; r < repeats; ++r) {
    std::vector<double> ops(threads);
    auto start = Clock::now();
    arena.execute([&] {
      tbb::parallel_for(0, threads, [&](int t) { ops[t] = chains(t); }, tbb::static_partitioner());
    });
    double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    double total = 0;
    for (double o : ops)
      total += o;
    best = std::max(best, total / seconds / 1e9);
  }
  return best;
}

} // namespace

double measureReadBandwidth(tbb::task_arena &arena, int repeats) {
  const int threads = arena.max_concurrency();
  // 512 MiB: far beyond any last-level cache here.
  const size_t totalFloats = size_t(512) << 20 >> 2;
  const size_t perThread = totalFloats / threads / kStreams / 16 * 16 * kStreams;
  // In huge pages, as the KV caches and (unless --mmap) the weights are: the
  // best stream this machine gives, not one slowed at every 4 KiB page.
  LargeBuffer memory = LargeBuffer::allocate(totalFloats * sizeof(float));
  if (!memory)
    return 0;
  float *buffer = reinterpret_cast<float *>(memory.data());
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
  return best;
}

double measureFmaPeak(tbb::task_arena &arena, int repeats) {
  std::vector<float> sinks(arena.max_concurrency());
  // The widest vectors this CPU has, each chain in one register.
  auto chains = __builtin_cpu_supports("avx512f")                                 ? fmaChainsZmm
                : __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? fmaChainsYmm
                                                                                  : fmaChainsXmm;
  return bestRate(arena, repeats, [&](int t) { return chains(4'000'000, 1.0f + t, &sinks[t]); });
}

const char *int8DotPeakInstruction() {
  if (__builtin_cpu_supports("avx512vnni") || __builtin_cpu_supports("avxvnni"))
    return "vpdpbusd";
  return __builtin_cpu_supports("avx2") ? "vpmaddubsw" : "";
}

double measureInt8DotPeak(tbb::task_arena &arena, int repeats) {
  std::vector<int> sinks(arena.max_concurrency());
  if (__builtin_cpu_supports("avx512vnni"))
    return bestRate(arena, repeats, [&](int t) { return dotChainsZmm(4'000'000, t, &sinks[t]); });
  if (__builtin_cpu_supports("avxvnni"))
    return bestRate(arena, repeats, [&](int t) { return dotChainsYmm(4'000'000, t, &sinks[t]); });
  if (__builtin_cpu_supports("avx2"))
    return bestRate(arena, repeats, [&](int t) { return pairChainsYmm(4'000'000, t, &sinks[t]); });
  return 0;
}

} // namespace quill
