// The step team: every piece runs once, waves in order, a wave's pieces on
// several threads, and a caller alone still finishes the step.
#include "runtime/device/StepTeam.h"

#include <gtest/gtest.h>
#include <tbb/task_arena.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

namespace quill {
namespace {

/// A plan of waves with `widths[w]` pieces each (piece ids in `launch`).
StepPlan planOf(const std::vector<int> &widths) {
  StepPlan plan;
  uint32_t id = 0;
  for (int width : widths) {
    for (int i = 0; i < width; ++i)
      plan.pieces.push_back({id++, 0, 1});
    plan.endWave();
  }
  return plan;
}

/// When each piece started and ended, on one shared sequence, and how often
/// it ran.
struct Record {
  std::atomic<int64_t> clock{0};
  std::vector<int64_t> start, end;
  std::vector<std::atomic<int>> runs;
  explicit Record(size_t pieces) : start(pieces, -1), end(pieces, -1), runs(pieces) {}
};

void recordPiece(void *context, const StepPiece &piece) {
  Record &r = *static_cast<Record *>(context);
  r.start[piece.launch] = r.clock.fetch_add(1);
  // Some work, uneven across pieces, so threads overtake each other.
  volatile int64_t sink = 0;
  for (int64_t i = 0; i < 2000 * (piece.launch % 5 + 1); ++i)
    sink = sink + i;
  r.runs[piece.launch].fetch_add(1);
  r.end[piece.launch] = r.clock.fetch_add(1);
}

TEST(StepTeam, EveryPieceRunsOnceAndEachWaveAfterTheOnesBefore) {
  // Wide and narrow waves, an empty one, more pieces than threads.
  StepPlan plan = planOf({3, 1, 0, 7, 2, 1, 5});
  EXPECT_EQ(plan.widestWave, 7u);
  for (int threads : {1, 2, 4}) {
    tbb::task_arena arena(threads);
    for (int round = 0; round < 50; ++round) {
      Record r(plan.pieces.size());
      runStepTeam(arena, plan, &recordPiece, &r);
      for (size_t i = 0; i < plan.pieces.size(); ++i)
        ASSERT_EQ(r.runs[i].load(), 1) << "piece " << i << ", " << threads << " threads";
      // Every piece of a wave starts after every piece of earlier waves ended.
      size_t begin = 0;
      int64_t lastEnd = -1;
      for (size_t end : plan.waveEnds) {
        int64_t waveEnd = lastEnd;
        for (size_t i = begin; i < end; ++i) {
          EXPECT_GT(r.start[i], lastEnd) << "piece " << i << ", " << threads << " threads";
          waveEnd = std::max(waveEnd, r.end[i]);
        }
        lastEnd = waveEnd, begin = end;
      }
    }
  }
}

TEST(StepTeam, AWavesPiecesRunOnSeveralThreadsAtOnce) {
  // Two pieces that each wait for the other to have started: they finish
  // only if two threads run them together.
  if (tbb::this_task_arena::max_concurrency() < 2)
    GTEST_SKIP() << "oneTBB has no worker thread here (one CPU allowed)";
  StepPlan plan = planOf({2});
  tbb::task_arena arena(2);
  struct Meeting {
    std::atomic<int> started{0};
    std::atomic<bool> met{true};
    std::mutex mutex;
    std::set<std::thread::id> threads;
  } meeting;
  runStepTeam(
      arena, plan,
      [](void *context, const StepPiece &) {
        Meeting &m = *static_cast<Meeting *>(context);
        {
          std::lock_guard<std::mutex> lock(m.mutex);
          m.threads.insert(std::this_thread::get_id());
        }
        m.started.fetch_add(1);
        auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
        while (m.started.load() < 2)
          if (std::chrono::steady_clock::now() > deadline) {
            m.met = false;
            return;
          }
      },
      &meeting);
  EXPECT_TRUE(meeting.met.load());
  EXPECT_EQ(meeting.threads.size(), 2u);
}

TEST(StepTeam, OneThreadRunsThePlanInOrderOnTheCaller) {
  StepPlan plan = planOf({2, 3, 1});
  tbb::task_arena arena(1);
  struct Seen {
    std::vector<uint32_t> order;
    std::set<std::thread::id> threads;
  } seen;
  runStepTeam(
      arena, plan,
      [](void *context, const StepPiece &piece) {
        Seen &s = *static_cast<Seen *>(context);
        s.order.push_back(piece.launch);
        s.threads.insert(std::this_thread::get_id());
      },
      &seen);
  EXPECT_EQ(seen.order, (std::vector<uint32_t>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(seen.threads, (std::set<std::thread::id>{std::this_thread::get_id()}));
}

TEST(StepTeam, AnEmptyPlanRunsNothing) {
  StepPlan plan = planOf({0, 0});
  tbb::task_arena arena(2);
  int calls = 0;
  runStepTeam(
      arena, plan, [](void *context, const StepPiece &) { ++*static_cast<int *>(context); },
      &calls);
  EXPECT_EQ(calls, 0);
}

} // namespace
} // namespace quill
