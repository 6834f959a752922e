// Which consecutive dispatches of a schedule may run at the same time: the
// runtime's dependency scheme, from the bindings each kernel reads and writes.
#pragma once

#include "runtime/artifact/ArtifactFormat.h"

#include <cstddef>
#include <vector>

namespace quill {

/// Whether two dispatches touch the same memory with at least one of them
/// writing it (then the later must wait for the earlier).
bool dispatchesConflict(const Dispatch &a, const Dispatch &b);

/// Splits `dispatches` into waves of consecutive dispatches none of which
/// conflicts with another of its wave, so a wave's dispatches can run
/// concurrently and waves run in order. Returns the first dispatch of every
/// wave, then dispatches.size().
std::vector<size_t> planWaves(const std::vector<Dispatch> &dispatches);

} // namespace quill
