// Time per kernel across a run (quill-run --profile), for finding where a
// step's time goes: each device times its launches its own way (a clock
// around each on the CPU, events on a GPU stream) and adds them here.
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace quill {

class KernelProfile {
public:
  /// One launch of `kernel` that took `seconds` over `bytes` of bindings
  /// (what it reads and writes, at most).
  void add(const std::string &kernel, double seconds, uint64_t bytes);
  /// Kernels by time, most first: share, total ms, launches, GB/s over
  /// their bindings' bytes (a bound on the memory traffic each launch needs).
  std::string report() const;

private:
  struct KernelTime {
    double seconds = 0;
    int64_t launches = 0;
    double bytes = 0;
  };
  std::map<std::string, KernelTime> times_;
};

} // namespace quill
