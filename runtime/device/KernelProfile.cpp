// Time per kernel (see KernelProfile.h).
#include "runtime/device/KernelProfile.h"

#include <algorithm>
#include <cstdio>

namespace quill {

namespace {

/// The positions a row at `pos` attends.
double attended(int64_t pos, int32_t window) {
  return double(window > 0 ? std::min<int64_t>(pos + 1, window) : pos + 1);
}

} // namespace

ProfiledStep decodeProfiledStep(int32_t pos, int32_t window) {
  const double positions = attended(pos, window);
  return {CostStep::Step, positions, positions};
}

ProfiledStep prefillProfiledStep(int32_t pos, int32_t chunk, int32_t window) {
  double sum = 0;
  for (int32_t i = 0; i < chunk; ++i)
    sum += attended(int64_t(pos) + i, window);
  return {CostStep::Prefill, chunk > 0 ? sum / chunk : 0,
          attended(int64_t(pos) + std::max(chunk, 1) - 1, window)};
}

ProfiledStep batchProfiledStep(const int32_t *positions, int32_t liveRows, int32_t logitRows,
                               int32_t rows, int32_t window) {
  double sum = 0;
  for (int32_t r = 0; r < liveRows; ++r)
    sum += attended(positions[r], window);
  const double mean = liveRows > 0 ? sum / liveRows : 0;
  return {CostStep::Batch, mean, mean, liveRows, logitRows, rows};
}

void KernelProfile::add(const std::string &kernel, double seconds, uint64_t bindingBytes,
                        const KernelCost *cost) {
  Entry &e = entries_[{step_.step, kernel}];
  if (e.launches == 0) {
    e.step = step_.step;
    e.kernel = kernel;
    e.cost = cost;
  }
  e.seconds += seconds;
  e.bindingBytes += double(bindingBytes);
  ++e.launches;
  if (cost) {
    LaunchWork work = launchWork(*cost, step_.positions, step_.bytePositions, step_.liveRows,
                                 step_.logitRows, step_.rows);
    e.flops += work.flops;
    e.bytes += work.bytes;
  } else {
    e.bytes += double(bindingBytes);
  }
}

std::vector<KernelProfile::Entry> KernelProfile::entries() const {
  std::vector<Entry> rows;
  for (const auto &[key, entry] : entries_)
    rows.push_back(entry);
  std::stable_sort(rows.begin(), rows.end(),
                   [](const Entry &a, const Entry &b) { return a.seconds > b.seconds; });
  return rows;
}

std::string KernelProfile::report() const {
  std::vector<Entry> rows = entries();
  double total = 0;
  for (const Entry &row : rows)
    total += row.seconds;
  std::string out = "kernel time (" + std::to_string(total * 1e3) +
                    " ms in all; GB/s and GFLOP/s of what each launch reads, writes and "
                    "computes, by the compiler's count; GB/s over the bindings where the "
                    "artifact has none):\n";
  char line[512];
  for (const Entry &t : rows) {
    char gflops[32] = "n/a";
    if (t.cost)
      std::snprintf(gflops, sizeof gflops, "%.2f", t.seconds > 0 ? t.flops / t.seconds / 1e9 : 0);
    std::snprintf(
        line, sizeof line, "  %6.2f%% %10.3f ms %8lld launches %9.1f GB/s %9s GFLOP/s  %-7s %s\n",
        total > 0 ? 100 * t.seconds / total : 0.0, t.seconds * 1e3,
        static_cast<long long>(t.launches), t.seconds > 0 ? t.bytes / t.seconds / 1e9 : 0.0, gflops,
        costStepName(t.step), t.kernel.c_str());
    out += line;
  }
  return out;
}

} // namespace quill
