// Time per kernel (see KernelProfile.h).
#include "runtime/device/KernelProfile.h"

#include <algorithm>
#include <cstdio>
#include <vector>

namespace quill {

void KernelProfile::add(const std::string &kernel, double seconds, uint64_t bytes) {
  KernelTime &t = times_[kernel];
  t.seconds += seconds;
  t.bytes += double(bytes);
  ++t.launches;
}

std::string KernelProfile::report() const {
  std::vector<std::pair<std::string, KernelTime>> rows(times_.begin(), times_.end());
  std::sort(rows.begin(), rows.end(),
            [](const auto &a, const auto &b) { return a.second.seconds > b.second.seconds; });
  double total = 0;
  for (const auto &row : rows)
    total += row.second.seconds;
  std::string out = "kernel time (" + std::to_string(total * 1e3) +
                    " ms in all; GB/s over each kernel's bindings, a bound: attention and "
                    "embeddings read only part of theirs):\n";
  char line[512];
  for (const auto &[name, t] : rows) {
    std::snprintf(line, sizeof line, "  %6.2f%% %10.3f ms %8lld launches %9.1f GB/s  %s\n",
                  total > 0 ? 100 * t.seconds / total : 0.0, t.seconds * 1e3,
                  static_cast<long long>(t.launches),
                  t.seconds > 0 ? t.bytes / t.seconds / 1e9 : 0.0, name.c_str());
    out += line;
  }
  return out;
}

} // namespace quill
