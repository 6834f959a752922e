// A step's kernel pieces on a team of threads (see StepTeam.h).
#include "runtime/device/StepTeam.h"

#include <tbb/task_group.h>

#include <algorithm>
#include <atomic>
#include <thread>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace quill {

namespace {

void cpuRelax() {
#if defined(__x86_64__)
  _mm_pause();
#else
  std::this_thread::yield();
#endif
}

/// Waits until `done` reaches `target`. Spins first (the wait between two
/// kernels is microseconds), then yields, so a machine with more runnable
/// threads than cores (a test suite in parallel, a sanitizer) still makes
/// progress.
void waitFor(const std::atomic<size_t> &done, size_t target) {
  for (int spins = 0; done.load(std::memory_order_acquire) < target; ++spins)
    if (spins < 1 << 14)
      cpuRelax();
    else
      std::this_thread::yield();
}

} // namespace

void runStepTeam(tbb::task_arena &arena, const StepPlan &plan, StepPieceFn fn, void *context) {
  const size_t total = plan.pieces.size();
  if (total == 0)
    return;
  // Claimed pieces and finished ones, over the whole step.
  std::atomic<size_t> next{0}, done{0};
  auto member = [&] {
    size_t wave = 0;
    for (;;) {
      const size_t i = next.fetch_add(1, std::memory_order_relaxed);
      if (i >= total)
        return;
      // Claims are increasing on every thread, so the wave only moves on.
      while (plan.waveEnds[wave] <= i)
        ++wave;
      // Every piece before this wave is claimed already (claims go in
      // order), so the wait ends once those running pieces finish.
      waitFor(done, wave ? plan.waveEnds[wave - 1] : 0);
      fn(context, plan.pieces[i]);
      done.fetch_add(1, std::memory_order_acq_rel);
    }
  };
  const size_t helpers =
      std::min(static_cast<size_t>(std::max(arena.max_concurrency(), 1)), plan.widestWave) - 1;
  if (helpers == 0) {
    member();
    return;
  }
  arena.execute([&] {
    tbb::task_group group;
    for (size_t t = 0; t < helpers; ++t)
      group.run(member);
    member();
    // A helper no worker took runs here, finds nothing left and returns.
    group.wait();
  });
}

} // namespace quill
