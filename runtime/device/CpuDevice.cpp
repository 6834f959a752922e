// Kernel launches on the CPU with oneTBB.
#include "runtime/device/CpuDevice.h"

#include "runtime/artifact/KernelContract.h"
#include "runtime/device/KernelWaves.h"
#include "runtime/support/LargeBuffer.h"
#include "runtime/support/Trace.h"

#include <tbb/blocked_range.h>
#include <tbb/global_control.h>
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>
#include <tbb/task_group.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace quill {

namespace {
/// Below this many bytes touched, a kernel runs on the calling thread: waking
/// workers costs more than the work (and tiny models would slow down).
constexpr uint64_t kParallelBytes = 256 * 1024;

/// A step team splits a large kernel into this many pieces per thread.
/// More pieces would let a thread the machine delays leave work to the
/// others, but measured slower (110m, 2 threads: 2 and 4 pieces per thread
/// lost 3-9% of the prefill against 1).
constexpr int64_t kPiecesPerThread = 1;

/// The units of `work` a launch runs this step: capped at its live rows
/// in the batch step.
int64_t liveWork(int64_t work, int64_t liveRowUnits, int32_t token) {
  return liveRowUnits ? std::min<int64_t>(work, int64_t(token) * liveRowUnits) : work;
}

std::string requiredFeatures(const std::string &target) {
  size_t at = target.find("required=");
  if (at == std::string::npos)
    return "";
  std::string rest = target.substr(at + 9);
  return rest.substr(0, rest.find(' '));
}
} // namespace

CpuDevice::CpuDevice(const Artifact &artifact, KernelLibrary library, tbb::task_arena &arena)
    : artifact_(artifact), library_(std::move(library)), arena_(arena),
      kvCache_(artifact.schedule().kvBytes, artifact.config().seqLen) {}

ErrorOr<std::unique_ptr<CpuDevice>> CpuDevice::create(const Artifact &artifact,
                                                      tbb::task_arena &arena) {
  // Kernels keep their temporaries on the stack (a prefill chunk of a large
  // model needs a few MB); give worker threads room for them.
  static tbb::global_control stackSize(tbb::global_control::thread_stack_size, 64u << 20);
  if (artifact.isCuda())
    return Status::error(artifact.path() + ": compiled for CUDA (" + artifact.target() +
                         "): run it with --device cuda, or compile it for the CPU");
  if (Status s = checkCpuFeatures(requiredFeatures(artifact.target())); !s)
    return Status::error(artifact.path() + ": " + s.message());
  auto library = KernelLibrary::load(artifact.kernelLibraryData(), artifact.kernelLibrarySize(),
                                     artifact.path());
  if (!library)
    return library.status();
  const int64_t *limits = library->lookupWords(kModelLimitsSymbol);
  if (!limits)
    return Status::error(artifact.path() + ": the kernel library states no model limits");
  const BatchSchedule *batchStep = artifact.batchSchedule();
  if (Status s = checkModelLimits(artifact.config(), artifact.prefillSchedule(),
                                  batchStep ? &batchStep->layout : nullptr, limits);
      !s)
    return Status::error(artifact.path() + ": " + s.message());
  for (auto [schedule, what] :
       {std::pair{&artifact.schedule(), ""}, std::pair{artifact.prefillSchedule(), "prefill "},
        std::pair{artifact.batchSchedule() ? &artifact.batchSchedule()->schedule : nullptr,
                  "batch "}})
    if (schedule)
      if (Status s =
              checkScheduleContracts(*schedule, what,
                                     [&](const std::string &name) {
                                       return library->lookupWords(kKernelContractPrefix + name);
                                     });
          !s)
        return Status::error(artifact.path() + ": " + s.message());
  std::unique_ptr<CpuDevice> device(new CpuDevice(artifact, library.take(), arena));

  // One scratch buffer serves both schedules: they never run at once.
  const Schedule *prefill = artifact.prefillSchedule();
  uint64_t scratchBytes = artifact.schedule().scratchBytes;
  if (prefill)
    scratchBytes = std::max(scratchBytes, prefill->scratchBytes);
  const BatchSchedule *batch = artifact.batchSchedule();
  if (batch) {
    scratchBytes = std::max(scratchBytes, batch->schedule.scratchBytes);
    device->batchInput_ = LargeBuffer::allocate(batch->schedule.inputBytes);
    if (!device->batchInput_)
      return Status::error("cannot allocate the batch input buffer");
  }
  device->scratch_ = LargeBuffer::allocate(scratchBytes);
  if (!device->scratch_)
    return Status::error("cannot allocate " + std::to_string(scratchBytes) + " bytes of scratch");
  if (prefill) {
    device->input_ = LargeBuffer::allocate(prefill->inputBytes);
    if (!device->input_)
      return Status::error("cannot allocate the prefill input buffer");
    device->prefillChunk_ = prefill->tokens;
  }

  uint8_t *prefillInput = device->input_.data();
  if (Status s = device->resolve(artifact.schedule(), CostStep::Step, device->launches_,
                                 device->stepLogits_, prefillInput);
      !s)
    return s;
  device->stepWaves_ = planWaves(artifact.schedule().dispatches);
  if (prefill) {
    if (Status s = device->resolve(*prefill, CostStep::Prefill, device->prefillLaunches_,
                                   device->prefillLogits_, prefillInput);
        !s)
      return s;
    device->prefillWaves_ = planWaves(prefill->dispatches);
  }
  if (batch)
    device->batchWaves_ = planWaves(batch->schedule.dispatches);
  device->logits_ = device->stepLogits_;
  return device;
}

Status CpuDevice::resolve(const Schedule &schedule, CostStep step, std::vector<Launch> &launches,
                          const float *&logits, uint8_t *input) {
  auto address = [&](const Binding &b) -> void * {
    switch (b.space) {
    case MemorySpace::Weights:
      // Kernels only read weights; the mapping is read-only besides.
      return const_cast<uint8_t *>(artifact_.weights()) + b.offset;
    case MemorySpace::KVCache:
      return static_cast<uint8_t *>(kvCache_.data()) + b.offset;
    case MemorySpace::Scratch:
      return scratch_.data() + b.offset;
    case MemorySpace::Input:
      return input + b.offset;
    case MemorySpace::KVPool:
      // Resolved when a paged cache is attached (see attachPagedCache).
      return nullptr;
    }
    return nullptr;
  };
  std::vector<KernelFn> kernels;
  for (const std::string &name : schedule.kernels) {
    auto kernel = library_.lookup(name);
    if (!kernel)
      return Status::error(artifact_.path() + ": " + kernel.message());
    kernels.push_back(*kernel);
  }
  for (const Dispatch &d : schedule.dispatches) {
    Launch launch{kernels[d.kernel],
                  {},
                  d.work,
                  d.grain,
                  d.liveRowUnits,
                  false,
                  trace::intern(schedule.kernels[d.kernel]),
                  0,
                  findKernelCost(artifact_.kernelCosts(), step, schedule.kernels[d.kernel])};
    for (const Binding &b : d.bindings) {
      launch.pointers.push_back(address(b));
      launch.bytes += b.bytes;
    }
    launch.parallel = d.work > d.grain && launch.bytes >= kParallelBytes;
    launches.push_back(std::move(launch));
  }
  logits = reinterpret_cast<const float *>(address(schedule.logits));
  return Status::ok();
}

void CpuDevice::run(const std::vector<Launch> &launches, const std::vector<size_t> &waves,
                    int32_t token, int32_t pos) {
  if (stepTeam_ && !profile_ && arena_.max_concurrency() > 1) {
    runAsTeam(launches, waves, token, pos);
    return;
  }
  const bool concurrent = concurrentKernels_ && !profile_ && arena_.max_concurrency() > 1;
  for (size_t w = 0; w + 1 < waves.size(); ++w) {
    size_t first = waves[w], end = waves[w + 1];
    if (concurrent && end - first > 1) {
      // Independent kernels (none writes what another reads or writes):
      // their results are the same in any order, so they run together.
      arena_.execute([&] {
        tbb::task_group group;
        for (size_t i = first; i < end; ++i)
          group.run([&, i] { launch(launches[i], token, pos); });
        group.wait();
      });
      continue;
    }
    runInOrder(&launches[first], end - first, token, pos);
  }
}

namespace {
/// The arguments of a kernel's trace span, and of one piece's (none when
/// not tracing, so the hot path builds nothing).
trace::Args kernelSpanArgs(int64_t work) {
  return trace::enabled() ? trace::Args().add("units", work) : trace::Args();
}
trace::Args pieceSpanArgs(int64_t begin, int64_t end) {
  return trace::enabled() ? trace::Args().add("begin", begin).add("end", end) : trace::Args();
}
} // namespace

/// What a team's pieces need to know of their step.
struct CpuDevice::TeamStep {
  CpuDevice *device;
  const std::vector<Launch> *launches;
  int32_t token, pos;
  bool traced; ///< Decided once per step: spans_ is ready for it.
};

void CpuDevice::runAsTeam(const std::vector<Launch> &launches, const std::vector<size_t> &waves,
                          int32_t token, int32_t pos) {
  const int64_t threads = arena_.max_concurrency();
  plan_.clear();
  for (size_t w = 0; w + 1 < waves.size(); ++w) {
    for (size_t i = waves[w]; i < waves[w + 1]; ++i) {
      const Launch &l = launches[i];
      const int64_t work = liveWork(l.work, l.liveRowUnits, token);
      if (work > 0 && (!l.parallel || work <= l.grain)) {
        plan_.pieces.push_back({uint32_t(i), 0, work});
      } else if (work > 0) {
        // Cuts at multiples of the grain, as the kernel contract asks.
        const int64_t units = (work + l.grain - 1) / l.grain;
        const int64_t parts = std::min(units, threads * kPiecesPerThread);
        for (int64_t k = 0; k < parts; ++k)
          plan_.pieces.push_back({uint32_t(i), k * units / parts * l.grain,
                                  std::min(work, (k + 1) * units / parts * l.grain)});
      }
      if (!concurrentKernels_)
        plan_.endWave();
    }
    if (concurrentKernels_)
      plan_.endWave();
  }
  if (trace::enabled()) {
    // Moving the vector moves no element (an atomic cannot be moved).
    if (spans_.size() < launches.size())
      spans_ = std::vector<LaunchSpan>(launches.size());
    for (const StepPiece &p : plan_.pieces) {
      spans_[p.launch].running.store(0, std::memory_order_relaxed);
      spans_[p.launch].start.store(UINT64_MAX, std::memory_order_relaxed);
    }
    for (const StepPiece &p : plan_.pieces)
      spans_[p.launch].running.fetch_add(1, std::memory_order_relaxed);
  }
  TeamStep step{this, &launches, token, pos, trace::enabled()};
  runStepTeam(arena_, plan_, &CpuDevice::runPiece, &step);
}

void CpuDevice::runPiece(void *team, const StepPiece &piece) {
  const TeamStep &step = *static_cast<const TeamStep *>(team);
  const Launch &l = (*step.launches)[piece.launch];
  void *const *args = l.pointers.data();
  if (!step.traced) {
    l.kernel(args, step.token, step.pos, piece.begin, piece.end);
    return;
  }
  LaunchSpan &span = step.device->spans_[piece.launch];
  const int64_t work = liveWork(l.work, l.liveRowUnits, step.token);
  if (piece.begin == 0 && piece.end == work) {
    trace::Scope traced("kernel", l.name, kernelSpanArgs(work));
    l.kernel(args, step.token, step.pos, piece.begin, piece.end);
    return;
  }
  // A split kernel: a span per piece, and the kernel's own from its
  // earliest piece's start, recorded by whichever piece ends last.
  const uint64_t start = trace::now();
  for (uint64_t seen = span.start.load(std::memory_order_relaxed);
       start < seen && !span.start.compare_exchange_weak(seen, start, std::memory_order_relaxed);)
    ;
  {
    trace::Scope traced("piece", l.name, pieceSpanArgs(piece.begin, piece.end));
    l.kernel(args, step.token, step.pos, piece.begin, piece.end);
  }
  if (span.running.fetch_sub(1, std::memory_order_acq_rel) == 1)
    trace::span("kernel", l.name, span.start.load(std::memory_order_relaxed), kernelSpanArgs(work));
}

void CpuDevice::runInOrder(const Launch *launches, size_t count, int32_t token, int32_t pos) {
  for (size_t i = 0; i < count; ++i) {
    if (profile_) {
      auto start = std::chrono::steady_clock::now();
      launch(launches[i], token, pos);
      profile_->add(*launches[i].name,
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
                    launches[i].bytes, launches[i].cost);
    } else {
      launch(launches[i], token, pos);
    }
  }
}

void CpuDevice::launch(const Launch &launch, int32_t token, int32_t pos) {
  {
    void *const *args = launch.pointers.data();
    const int64_t work = liveWork(launch.work, launch.liveRowUnits, token);
    if (work <= 0)
      return;
    // The launch on the thread that issued it; its pieces on the workers.
    trace::Scope traced("kernel", launch.name, kernelSpanArgs(work));
    if (!launch.parallel || arena_.max_concurrency() == 1 || work <= launch.grain) {
      launch.kernel(args, token, pos, 0, work);
      return;
    }
    // Each chunk computes whole output rows, so the split cannot change a
    // result; the static partitioner keeps the split fixed besides.
    arena_.execute([&] {
      tbb::parallel_for(
          tbb::blocked_range<int64_t>(0, work, launch.grain),
          [&](const tbb::blocked_range<int64_t> &range) {
            trace::Scope piece("piece", launch.name, pieceSpanArgs(range.begin(), range.end()));
            launch.kernel(args, token, pos, range.begin(), range.end());
          },
          tbb::static_partitioner());
    });
  }
}

void CpuDevice::runDispatch(bool prefill, size_t index, int32_t token, int32_t pos) {
  const std::vector<Launch> &launches = prefill ? prefillLaunches_ : launches_;
  runInOrder(&launches[index], 1, token, pos);
}

void CpuDevice::step(int32_t token, int32_t pos) {
  trace::Scope traced("step", "decode step",
                      trace::enabled() ? trace::Args().add("pos", pos) : trace::Args());
  // The step reads the cache up to and including its own position.
  if (profile_)
    profile_->beginStep(decodeProfiledStep(pos, artifact_.config().slidingWindow));
  run(launches_, stepWaves_, token, pos);
  logits_ = stepLogits_;
}

void CpuDevice::prefill(const int32_t *tokens, int32_t pos) {
  trace::Scope traced("step", "prefill step",
                      trace::enabled() ? trace::Args().add("pos", pos).add("tokens", prefillChunk_)
                                       : trace::Args());
  std::memcpy(input_.data(), tokens, sizeof(int32_t) * prefillChunk_);
  if (profile_)
    profile_->beginStep(prefillProfiledStep(pos, prefillChunk_, artifact_.config().slidingWindow));
  run(prefillLaunches_, prefillWaves_, /*token=*/0, pos);
  logits_ = prefillLogits_;
}

const BatchLayout *CpuDevice::batchLayout() const {
  const BatchSchedule *batch = artifact_.batchSchedule();
  return batch ? &batch->layout : nullptr;
}

Status CpuDevice::attachPagedCache(PagedKVCache &cache) {
  const BatchSchedule *batch = artifact_.batchSchedule();
  if (!batch)
    return Status::error(artifact_.path() + ": the artifact has no batch step");
  const BatchLayout &l = batch->layout;
  const PagedKVLayout &p = cache.layout();
  if (p.blockSize != l.blockSize || p.sections != l.sections || p.blockBytes() != l.blockBytes ||
      cache.numBlocks() > l.maxBlocks)
    return Status::error("the paged KV cache does not match the artifact's batch step");
  batchLaunches_.clear();
  if (Status s = resolve(batch->schedule, CostStep::Batch, batchLaunches_, batchLogits_,
                         batchInput_.data());
      !s)
    return s;
  size_t index = 0;
  for (const Dispatch &d : batch->schedule.dispatches) {
    Launch &launch = batchLaunches_[index++];
    for (size_t i = 0; i < d.bindings.size(); ++i)
      if (d.bindings[i].space == MemorySpace::KVPool)
        launch.pointers[i] = cache.sectionBase(static_cast<int32_t>(d.bindings[i].offset));
  }
  paged_ = &cache;
  return Status::ok();
}

int32_t *CpuDevice::batchTokens() {
  const BatchLayout *l = batchLayout();
  return l ? reinterpret_cast<int32_t *>(batchInput_.data() + l->tokens.offset) : nullptr;
}
int32_t *CpuDevice::batchPositions() {
  const BatchLayout *l = batchLayout();
  return l ? reinterpret_cast<int32_t *>(batchInput_.data() + l->positions.offset) : nullptr;
}
int32_t *CpuDevice::batchTables() {
  const BatchLayout *l = batchLayout();
  return l ? reinterpret_cast<int32_t *>(batchInput_.data() + l->tables.offset) : nullptr;
}

void CpuDevice::batchStep(int32_t rows, int32_t logitRows) {
  trace::Scope traced("step", "batch step",
                      trace::enabled()
                          ? trace::Args().add("rows", rows).add("logit_rows", logitRows)
                          : trace::Args());
  const BatchLayout &l = *batchLayout();
  // Rows past the live ones: token 0 at position 0 of the reserved block.
  for (int32_t r = rows; r < l.rows; ++r) {
    batchTokens()[r] = 0;
    batchPositions()[r] = 0;
    std::fill_n(batchTables() + int64_t(r) * l.tableWidth, l.tableWidth, PagedKVCache::kTrashBlock);
  }
  if (profile_)
    profile_->beginStep(batchProfiledStep(batchPositions(), rows, logitRows, l.rows,
                                          artifact_.config().slidingWindow));
  // The kernels' scalar parameters are (live rows, logit rows) here.
  run(batchLaunches_, batchWaves_, rows, logitRows);
}

void CpuDevice::enableProfiling() { profile_ = std::make_unique<KernelProfile>(); }

std::string CpuDevice::profileReport() const { return profile_ ? profile_->report() : ""; }

std::string CpuDevice::describe() const {
  const Schedule &s = artifact_.schedule();
  size_t parallel = 0;
  for (const Launch &launch : launches_)
    parallel += launch.parallel;
  return "device: cpu, " + std::to_string(arena_.max_concurrency()) + " thread(s), " +
         std::to_string(s.kernels.size()) + " kernels, " + std::to_string(s.dispatches.size()) +
         " dispatches per step (" + std::to_string(parallel) + " split across threads, " +
         std::to_string(stepWaves_.size() - 1) + " waves of independent ones), " +
         (prefillChunk_ ? "prefill in chunks of " + std::to_string(prefillChunk_) + " tokens (" +
                              std::to_string(prefillLaunches_.size()) + " dispatches in " +
                              std::to_string(prefillWaves_.size() - 1) + " waves)"
                        : std::string("no prefill step")) +
         (batchLaunches_.empty() && batchWaves_.empty()
              ? std::string()
              : ", batch step: " + std::to_string(batchWaves_.size() - 1) + " waves") +
         ", target " + artifact_.target();
}

} // namespace quill
