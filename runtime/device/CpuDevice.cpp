// Kernel launches on the CPU with oneTBB.
#include "runtime/device/CpuDevice.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>

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
      scratch_(nullptr, std::free) {}

ErrorOr<std::unique_ptr<CpuDevice>> CpuDevice::create(const Artifact &artifact,
                                                      tbb::task_arena &arena) {
  if (Status s = checkCpuFeatures(requiredFeatures(artifact.target())); !s)
    return Status::error(artifact.path() + ": " + s.message());
  auto library = KernelLibrary::load(artifact.kernelLibraryData(),
                                     artifact.kernelLibrarySize(), artifact.path());
  if (!library)
    return library.status();
  std::unique_ptr<CpuDevice> device(new CpuDevice(artifact, library.take(), arena));

  const Schedule &schedule = artifact.schedule();
  uint64_t scratchBytes = (std::max<uint64_t>(schedule.scratchBytes, 64) + 63) / 64 * 64;
  device->scratch_.reset(static_cast<uint8_t *>(std::aligned_alloc(64, scratchBytes)));
  if (!device->scratch_)
    return Status::error("cannot allocate " + std::to_string(scratchBytes) + " bytes of scratch");
  std::memset(device->scratch_.get(), 0, scratchBytes);

  auto address = [&](const Binding &b) -> void * {
    switch (b.space) {
    case MemorySpace::Weights:
      // Kernels only read weights; the mapping is read-only besides.
      return const_cast<uint8_t *>(artifact.weights()) + b.offset;
    case MemorySpace::KVCache:
      return static_cast<uint8_t *>(device->kvCache_.data()) + b.offset;
    case MemorySpace::Scratch:
      return device->scratch_.get() + b.offset;
    }
    return nullptr;
  };
  std::vector<KernelFn> kernels;
  for (const std::string &name : schedule.kernels) {
    auto kernel = device->library_.lookup(name);
    if (!kernel)
      return Status::error(artifact.path() + ": " + kernel.message());
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
    device->launches_.push_back(std::move(launch));
  }
  device->logits_ = reinterpret_cast<const float *>(address(schedule.logits));
  return device;
}

void CpuDevice::step(int32_t token, int32_t pos) {
  for (const Launch &launch : launches_) {
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

std::string CpuDevice::describe() const {
  const Schedule &s = artifact_.schedule();
  size_t parallel = 0;
  for (const Launch &launch : launches_)
    parallel += launch.parallel;
  return "device: cpu, " + std::to_string(arena_.max_concurrency()) + " thread(s), " +
         std::to_string(s.kernels.size()) + " kernels, " + std::to_string(s.dispatches.size()) +
         " dispatches per step (" + std::to_string(parallel) + " split across threads), target " +
         artifact_.target();
}

} // namespace quill
