// Measures this machine's own ceilings, so benchmark figures can be read as
// fractions of what the hardware allows rather than as raw numbers.
#pragma once

#include <tbb/task_arena.h>

namespace quill {

/// Streaming-read bandwidth in GB/s: every thread of `arena` reads its share
/// of a buffer much larger than the caches (in huge pages), with several
/// independent streams and vector loads. The best of `repeats` runs.
double measureReadBandwidth(tbb::task_arena &arena, int repeats = 5);

/// Peak fused multiply-add throughput in GFLOP/s (2 flops per lane per FMA)
/// on all threads of `arena`, with enough independent accumulators to hide
/// FMA latency, using the widest vectors this CPU has.
double measureFmaPeak(tbb::task_arena &arena, int repeats = 5);

/// Peak int8 dot-product throughput in GOP/s (2 ops, a multiply and an add,
/// per byte product) on all threads of `arena`: `vpdpbusd` on zmm with
/// AVX-512 VNNI, else on ymm with AVX-VNNI, else AVX2's `vpmaddubsw` summed
/// in i16 (the kernels' form there); 0 on a CPU without AVX2. The ceiling
/// of an int8 prefill over block-quantized weights.
double measureInt8DotPeak(tbb::task_arena &arena, int repeats = 5);
/// The instruction measureInt8DotPeak times on this CPU ("" without AVX2).
const char *int8DotPeakInstruction();

} // namespace quill
