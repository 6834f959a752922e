// Waves of independent dispatches.
#include "runtime/device/KernelWaves.h"

namespace quill {

namespace {
/// Byte ranges of one memory space overlap; paged-cache bindings name whole
/// sections (their offset), so two of them overlap when the section is the same.
bool overlap(const Binding &a, const Binding &b) {
  if (a.space != b.space)
    return false;
  if (a.space == MemorySpace::KVPool)
    return a.offset == b.offset;
  return a.offset < b.offset + b.bytes && b.offset < a.offset + a.bytes;
}

bool writes(const Dispatch &d, size_t i) { return i >= 64 || (d.writes >> i) & 1; }
} // namespace

bool dispatchesConflict(const Dispatch &a, const Dispatch &b) {
  for (size_t i = 0; i < a.bindings.size(); ++i)
    for (size_t j = 0; j < b.bindings.size(); ++j)
      if ((writes(a, i) || writes(b, j)) && overlap(a.bindings[i], b.bindings[j]))
        return true;
  return false;
}

std::vector<size_t> planWaves(const std::vector<Dispatch> &dispatches) {
  std::vector<size_t> starts;
  size_t start = 0;
  for (size_t i = 0; i < dispatches.size(); ++i) {
    bool conflict = i == 0;
    for (size_t j = start; j < i && !conflict; ++j)
      conflict = dispatchesConflict(dispatches[j], dispatches[i]);
    if (conflict) {
      starts.push_back(i);
      start = i;
    }
  }
  starts.push_back(dispatches.size());
  return starts;
}

} // namespace quill
