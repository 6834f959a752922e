// Measures this machine's own ceilings, so benchmark figures can be read as
// fractions of what the hardware allows rather than as raw numbers.
#pragma once

#include <tbb/task_arena.h>

namespace quill {

/// Streaming-read bandwidth in GB/s: every thread of `arena` reads its share
/// of a buffer much larger than the caches, with several independent
/// streams and vector loads. The best of `repeats` runs.
double measureReadBandwidth(tbb::task_arena &arena, int repeats = 5);

/// Peak fused multiply-add throughput in GFLOP/s (2 flops per lane per FMA)
/// on all threads of `arena`, with enough independent accumulators to hide
/// FMA latency, using the widest vectors this CPU has.
double measureFmaPeak(tbb::task_arena &arena, int repeats = 5);

} // namespace quill
