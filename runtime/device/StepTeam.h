// Runs one step's kernel pieces on a team of threads that stays together for
// the whole step, instead of entering the arena, spawning and joining once
// per kernel: a decode step of a 12-layer model launches about a hundred
// kernels of 10-50 us each, and the per-kernel spawn and join was about 8%
// of it.
#pragma once

#include <tbb/task_arena.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace quill {

/// Units [begin, end) of one launch.
struct StepPiece {
  uint32_t launch;
  int64_t begin, end;
};

/// A step as pieces in wave order. A wave's pieces may run at the same
/// time; a wave starts once every piece of the waves before it is done.
struct StepPlan {
  std::vector<StepPiece> pieces;
  /// The end (in `pieces`) of every wave, ascending; the last is
  /// pieces.size(). Empty waves may appear (their end equals the one before).
  std::vector<size_t> waveEnds;
  /// The most pieces any wave has: more threads than that cannot help.
  size_t widestWave = 0;

  void clear() {
    pieces.clear();
    waveEnds.clear();
    widestWave = 0;
  }
  /// Closes the wave whose pieces were added since the last call.
  void endWave() {
    size_t begin = waveEnds.empty() ? 0 : waveEnds.back();
    widestWave = std::max(widestWave, pieces.size() - begin);
    waveEnds.push_back(pieces.size());
  }
};

/// Called for every piece, on whichever team thread claimed it.
using StepPieceFn = void (*)(void *context, const StepPiece &piece);

/// Runs `plan` on the calling thread and up to arena.max_concurrency() - 1
/// of the arena's workers. Each thread claims the next piece from one
/// shared counter; a piece of a later wave first waits (spinning, then
/// yielding) until every earlier piece is done. The order pieces are
/// claimed in is the plan's, so a thread only ever waits for pieces that
/// are already running: no deadlock even when no worker joins (the caller
/// then runs every piece itself). Returns when every piece is done.
void runStepTeam(tbb::task_arena &arena, const StepPlan &plan, StepPieceFn fn, void *context);

} // namespace quill
