// Kernel launches on the CPU with oneTBB.
#include "runtime/device/CpuDevice.h"

#include <tbb/blocked_range.h>
#include <tbb/global_control.h>
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace quill {

namespace {
/// Below this many bytes touched, a kernel runs on the calling thread: waking
/// workers costs more than the work (and tiny models would slow down).
constexpr uint64_t kParallelBytes = 256 * 1024;

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
      kvCache_(artifact.schedule().kvBytes, artifact.config().seqLen),
      scratch_(nullptr, std::free), input_(nullptr, std::free) {}

ErrorOr<std::unique_ptr<CpuDevice>> CpuDevice::create(const Artifact &artifact,
                                                      tbb::task_arena &arena) {
  // Kernels keep their temporaries on the stack (a prefill chunk of a large
  // model needs a few MB); give worker threads room for them.
  static tbb::global_control stackSize(tbb::global_control::thread_stack_size, 64u << 20);
  if (Status s = checkCpuFeatures(requiredFeatures(artifact.target())); !s)
    return Status::error(artifact.path() + ": " + s.message());
  auto library = KernelLibrary::load(artifact.kernelLibraryData(),
                                     artifact.kernelLibrarySize(), artifact.path());
  if (!library)
    return library.status();
  std::unique_ptr<CpuDevice> device(new CpuDevice(artifact, library.take(), arena));

  // One scratch buffer serves both schedules: they never run at once.
  const Schedule *prefill = artifact.prefillSchedule();
  uint64_t scratchBytes = artifact.schedule().scratchBytes;
  if (prefill)
    scratchBytes = std::max(scratchBytes, prefill->scratchBytes);
  scratchBytes = (std::max<uint64_t>(scratchBytes, 64) + 63) / 64 * 64;
  device->scratch_.reset(static_cast<uint8_t *>(std::aligned_alloc(64, scratchBytes)));
  if (!device->scratch_)
    return Status::error("cannot allocate " + std::to_string(scratchBytes) + " bytes of scratch");
  std::memset(device->scratch_.get(), 0, scratchBytes);
  if (prefill) {
    uint64_t inputBytes = (std::max<uint64_t>(prefill->inputBytes, 64) + 63) / 64 * 64;
    device->input_.reset(static_cast<int32_t *>(std::aligned_alloc(64, inputBytes)));
    if (!device->input_)
      return Status::error("cannot allocate the prefill input buffer");
    std::memset(device->input_.get(), 0, inputBytes);
    device->prefillChunk_ = prefill->tokens;
  }

  if (Status s = device->resolve(artifact.schedule(), device->launches_, device->stepLogits_); !s)
    return s;
  if (prefill)
    if (Status s = device->resolve(*prefill, device->prefillLaunches_, device->prefillLogits_); !s)
      return s;
  device->logits_ = device->stepLogits_;
  return device;
}

Status CpuDevice::resolve(const Schedule &schedule, std::vector<Launch> &launches,
                          const float *&logits) {
  auto address = [&](const Binding &b) -> void * {
    switch (b.space) {
    case MemorySpace::Weights:
      // Kernels only read weights; the mapping is read-only besides.
      return const_cast<uint8_t *>(artifact_.weights()) + b.offset;
    case MemorySpace::KVCache:
      return static_cast<uint8_t *>(kvCache_.data()) + b.offset;
    case MemorySpace::Scratch:
      return scratch_.get() + b.offset;
    case MemorySpace::Input:
      return reinterpret_cast<uint8_t *>(input_.get()) + b.offset;
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
    Launch launch{kernels[d.kernel], {}, d.work, d.grain, false};
    uint64_t touched = 0;
    for (const Binding &b : d.bindings) {
      launch.pointers.push_back(address(b));
      touched += b.bytes;
    }
    launch.parallel = d.work > d.grain && touched >= kParallelBytes;
    launches.push_back(std::move(launch));
  }
  logits = reinterpret_cast<const float *>(address(schedule.logits));
  return Status::ok();
}

void CpuDevice::run(const Launch *launches, size_t count, int32_t token, int32_t pos) {
  for (size_t i = 0; i < count; ++i) {
    const Launch &launch = launches[i];
    void *const *args = launch.pointers.data();
    if (!launch.parallel || arena_.max_concurrency() == 1) {
      launch.kernel(args, token, pos, 0, launch.work);
      continue;
    }
    // Each chunk computes whole output rows, so the split cannot change a
    // result; the static partitioner keeps the split fixed besides.
    arena_.execute([&] {
      tbb::parallel_for(
          tbb::blocked_range<int64_t>(0, launch.work, launch.grain),
          [&](const tbb::blocked_range<int64_t> &range) {
            launch.kernel(args, token, pos, range.begin(), range.end());
          },
          tbb::static_partitioner());
    });
  }
}

void CpuDevice::runDispatch(bool prefill, size_t index, int32_t token, int32_t pos) {
  const std::vector<Launch> &launches = prefill ? prefillLaunches_ : launches_;
  run(&launches[index], 1, token, pos);
}

void CpuDevice::step(int32_t token, int32_t pos) {
  run(launches_.data(), launches_.size(), token, pos);
  logits_ = stepLogits_;
}

void CpuDevice::prefill(const int32_t *tokens, int32_t pos) {
  std::memcpy(input_.get(), tokens, sizeof(int32_t) * prefillChunk_);
  run(prefillLaunches_.data(), prefillLaunches_.size(), /*token=*/0, pos);
  logits_ = prefillLogits_;
}

std::string CpuDevice::describe() const {
  const Schedule &s = artifact_.schedule();
  size_t parallel = 0;
  for (const Launch &launch : launches_)
    parallel += launch.parallel;
  return "device: cpu, " + std::to_string(arena_.max_concurrency()) + " thread(s), " +
         std::to_string(s.kernels.size()) + " kernels, " + std::to_string(s.dispatches.size()) +
         " dispatches per step (" + std::to_string(parallel) + " split across threads), " +
         (prefillChunk_ ? "prefill in chunks of " + std::to_string(prefillChunk_) + " tokens"
                        : std::string("no prefill step")) +
         ", target " + artifact_.target();
}

} // namespace quill
