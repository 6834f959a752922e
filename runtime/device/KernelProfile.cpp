// Time per kernel (see KernelProfile.h).
#include "runtime/device/KernelProfile.h"

#include <algorithm>
#include <cstdio>

namespace quill {

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
    LaunchWork work =
        launchWork(*cost, step_.positions, step_.liveRows, step_.logitRows, step_.rows);
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
