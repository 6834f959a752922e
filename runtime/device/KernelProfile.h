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
  double positions = 0;     ///< Cached positions each row attends (a mean over the rows).
  double bytePositions = 0; ///< Positions of the cache read per row streamed (see launchWork).
  int32_t liveRows = 0, logitRows = 0, rows = 0; ///< A batch step's (rows: all it has).
};

/// What the steps read, with a sliding `window` of positions (0: none):
/// a decode step at `pos`; a prefill chunk of `chunk` rows at `pos` (row i
/// attends pos + i + 1; the rows share the cache they read, the last
/// row's); a batch step whose `liveRows` of `rows` sit at `positions`.
ProfiledStep decodeProfiledStep(int32_t pos, int32_t window);
ProfiledStep prefillProfiledStep(int32_t pos, int32_t chunk, int32_t window);
ProfiledStep batchProfiledStep(const int32_t *positions, int32_t liveRows, int32_t logitRows,
                               int32_t rows, int32_t window);

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
