// Time per kernel across a run (quill-run --profile), for finding where a
// step's time goes: each device times its launches its own way (a clock
// around each on the CPU, events on a GPU stream) and adds them here, with
// what each launch computed and moved by the compiler's count (the
// artifact's KernelCosts), so the times can be read against a roofline.
#pragma once

#include "runtime/artifact/KernelCosts.h"

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace quill {

/// The step whose launches are being added: what they read of the cache.
struct ProfiledStep {
  CostStep step = CostStep::Step;
  double positions = 0; ///< Cached positions read per row (a mean over a batch's live rows).
  int32_t liveRows = 0, logitRows = 0, rows = 0; ///< A batch step's (rows: all it has).
};

class KernelProfile {
public:
  /// The launches added from now on belong to `step`.
  void beginStep(const ProfiledStep &step) { step_ = step; }
  /// One launch of `kernel` that took `seconds` over `bindingBytes` of
  /// bindings (what it may read and write); `cost` is the compiler's count
  /// of its work, or null where the artifact has none.
  void add(const std::string &kernel, double seconds, uint64_t bindingBytes,
           const KernelCost *cost);

  /// One kernel of one step, summed over its launches.
  struct Entry {
    CostStep step = CostStep::Step;
    std::string kernel;
    const KernelCost *cost = nullptr; ///< Null: no count, only the bindings.
    double seconds = 0;
    int64_t launches = 0;
    double bindingBytes = 0;
    double flops = 0; ///< By the cost (0 without one).
    double bytes = 0; ///< By the cost, else the bindings'.
  };
  /// Every kernel that ran, by time, most first.
  std::vector<Entry> entries() const;

  /// Kernels by time, most first: share, total ms, launches, GB/s and
  /// GFLOP/s of their work, step and name.
  std::string report() const;

private:
  ProfiledStep step_;
  std::map<std::pair<CostStep, std::string>, Entry> entries_;
};

} // namespace quill
