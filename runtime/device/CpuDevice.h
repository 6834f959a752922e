// The CPU implementation of Device: runs the artifact's compiled kernels in
// schedule order, splitting large ones across a oneTBB arena.
#pragma once

#include "runtime/artifact/Artifact.h"
#include "runtime/device/Device.h"
#include "runtime/device/KernelLibrary.h"
#include "runtime/device/KernelProfile.h"
#include "runtime/device/StepTeam.h"
#include "runtime/support/LargeBuffer.h"

#include <tbb/task_arena.h>

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace quill {

class CpuDevice final : public Device {
public:
  /// Loads the kernels of `artifact` (which must outlive the device) and
  /// allocates its scratch and KV cache; `arena` runs the parallel kernels.
  static ErrorOr<std::unique_ptr<CpuDevice>> create(const Artifact &artifact,
                                                    tbb::task_arena &arena);

  const char *name() const override { return "cpu"; }
  void step(int32_t token, int32_t pos) override;
  int32_t prefillChunk() const override { return prefillChunk_; }
  void prefill(const int32_t *tokens, int32_t pos) override;
  const float *logits() const override { return logits_; }
  KVCache &kvCache() override { return kvCache_; }
  std::string describe() const override;

  const BatchLayout *batchLayout() const override;
  Status attachPagedCache(PagedKVCache &cache) override;
  int32_t *batchTokens() override;
  int32_t *batchPositions() override;
  int32_t *batchTables() override;
  void batchStep(int32_t rows, int32_t logitRows) override;
  const float *batchLogits() const override { return batchLogits_; }

  /// Whether independent kernels of a step run at the same time (default
  /// on; off runs them one after another, for A/B comparisons).
  void setConcurrentKernels(bool on) { concurrentKernels_ = on; }

  /// Whether a step runs on a team of threads that stays together for the
  /// whole step (default on; see StepTeam.h). Off: every large kernel
  /// enters the arena and splits on its own, for A/B comparisons. The
  /// results are the same bit for bit.
  void setStepTeam(bool on) { stepTeam_ = on; }

  /// From now on, times every kernel launch (a synchronous clock read
  /// around each): for finding where a step's time goes.
  void enableProfiling() override;
  std::string profileReport() const override;
  const KernelProfile *profile() const override { return profile_.get(); }

  /// One dispatch of the decode (or prefill) schedule on its own, for kernel
  /// benchmarks: the same launch the step makes.
  void runDispatch(bool prefill, size_t index, int32_t token, int32_t pos);

private:
  /// One dispatch, resolved: its kernel and argument pointers, computed once.
  struct Launch {
    KernelFn kernel;
    std::vector<void *> pointers;
    int64_t work, grain;
    int64_t liveRowUnits;    ///< > 0: work capped at this many units per live row (token).
    bool parallel;           ///< Big enough for the split to pay for itself.
    const std::string *name; ///< The kernel's symbol, in the artifact's schedule.
    uint64_t bytes;          ///< Its bindings' (for the profile's GB/s).
    const KernelCost *cost;  ///< The compiler's count of its work, or null.
  };

  CpuDevice(const Artifact &artifact, KernelLibrary library, tbb::task_arena &arena);
  /// Resolves a schedule's dispatches into launches (pointers computed once).
  /// `input`: the buffer the schedule's input bindings point into.
  Status resolve(const Schedule &schedule, CostStep step, std::vector<Launch> &launches,
                 const float *&logits, uint8_t *input);
  /// Runs a schedule's launches wave by wave (see planWaves): a wave's
  /// launches at once, each large one split across the arena.
  void run(const std::vector<Launch> &launches, const std::vector<size_t> &waves, int32_t token,
           int32_t pos);
  /// `run` on a step team: every wave's launches, split into pieces.
  void runAsTeam(const std::vector<Launch> &launches, const std::vector<size_t> &waves,
                 int32_t token, int32_t pos);
  struct TeamStep;
  /// A StepPieceFn: one piece of a launch of a TeamStep.
  static void runPiece(void *team, const StepPiece &piece);
  /// Runs `count` launches one after another.
  void runInOrder(const Launch *launches, size_t count, int32_t token, int32_t pos);
  void launch(const Launch &launch, int32_t token, int32_t pos);

  const Artifact &artifact_;
  KernelLibrary library_;
  tbb::task_arena &arena_;
  KVCache kvCache_;
  LargeBuffer scratch_;
  LargeBuffer input_; ///< A prefill chunk's token ids.
  /// The batch step's tokens, positions and block tables.
  LargeBuffer batchInput_;
  PagedKVCache *paged_ = nullptr; ///< Attached by the batch scheduler.
  std::vector<Launch> launches_, prefillLaunches_, batchLaunches_;
  /// Each schedule's waves of independent launches (first launch of each, then the count).
  std::vector<size_t> stepWaves_, prefillWaves_, batchWaves_;
  bool concurrentKernels_ = true;
  bool stepTeam_ = true;
  StepPlan plan_; ///< The step team's pieces, rebuilt every step (live rows vary).
  /// Per launch while tracing a team step: the start of its earliest piece
  /// and how many pieces are still running, so the last one records the
  /// kernel.
  struct LaunchSpan {
    std::atomic<uint64_t> start{0}; ///< The earliest of its pieces' starts.
    std::atomic<int> running{0};
  };
  std::vector<LaunchSpan> spans_;
  const float *stepLogits_ = nullptr, *prefillLogits_ = nullptr, *batchLogits_ = nullptr;
  const float *logits_ = nullptr; ///< Of whichever ran last.
  int32_t prefillChunk_ = 0;
  std::unique_ptr<KernelProfile> profile_; ///< Null unless profiling.
};

} // namespace quill
