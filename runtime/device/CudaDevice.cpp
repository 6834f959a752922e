// Kernel launches on an NVIDIA GPU through the CUDA driver API.
#include "runtime/device/CudaDevice.h"

#include "runtime/artifact/KernelContract.h"
#include "runtime/support/Trace.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>

namespace quill {

namespace {
/// Threads per block: one unit of work (a kv head, a query row) each, or
/// a warp per unit (an output element of a matrix-vector kernel).
constexpr unsigned kBlock = 128;
constexpr unsigned kWarp = 32;
} // namespace

CudaDevice::CudaDevice(const Artifact &artifact, CudaDriver driver, bool cudaGraphs)
    : artifact_(artifact), driver_(driver), cudaGraphs_(cudaGraphs),
      logits_(artifact.config().vocabSize),
      kvCache_(artifact.schedule().kvBytes, artifact.config().seqLen, /*hostMemory=*/false) {}

CudaDevice::~CudaDevice() {
  if (context_)
    driver_.ctxSetCurrent(context_);
  // Kernels of a step that failed midway may still be queued.
  if (stream_)
    driver_.streamSynchronize(stream_);
  for (void *graph : {stepGraph_, prefillGraph_})
    if (graph)
      driver_.graphExecDestroy(graph);
  for (void *event : events_)
    driver_.eventDestroy(event);
  if (stream_)
    driver_.streamDestroy(stream_);
  for (CudaDriver::DevicePtr p : {weights_, kv_, scratch_, input_, stepArgs_})
    if (p)
      driver_.memFree(p);
  if (module_)
    driver_.moduleUnload(module_);
  if (context_)
    driver_.primaryCtxRelease(device_);
}

ErrorOr<std::unique_ptr<CudaDevice>> CudaDevice::create(const Artifact &artifact, bool cudaGraphs) {
  if (!artifact.isCuda())
    return Status::error(artifact.path() +
                         ": compiled for the CPU: compile it with --target=cuda for --device cuda");
  auto driver = CudaDriver::load();
  if (!driver)
    return driver.status();
  std::unique_ptr<CudaDevice> d(new CudaDevice(artifact, *driver, cudaGraphs));
  const CudaDriver &cu = d->driver_;
  if (Status s = cu.check(cu.init(0), "cuInit (no usable GPU?)"); !s)
    return s;
  if (Status s = cu.check(cu.deviceGet(&d->device_, 0), "no GPU"); !s)
    return s;
  char name[256] = {0};
  cu.deviceGetName(name, sizeof name - 1, d->device_);
  d->deviceName_ = name;
  if (Status s =
          cu.check(cu.primaryCtxRetain(&d->context_, d->device_), "cuDevicePrimaryCtxRetain");
      !s)
    return s;
  if (Status s = cu.check(cu.ctxSetCurrent(d->context_), "cuCtxSetCurrent"); !s)
    return s;
  // The PTX, NUL-terminated as cuModuleLoadData wants it.
  std::string ptx(reinterpret_cast<const char *>(artifact.ptxData()), artifact.ptxSize());
  if (Status s = cu.check(cu.moduleLoadData(&d->module_, ptx.c_str()),
                          artifact.path() + ": the PTX does not load");
      !s)
    return s;
  if (Status s = d->checkContracts(); !s)
    return Status::error(artifact.path() + ": " + s.message());

  const Schedule &step = artifact.schedule();
  const Schedule *prefill = artifact.prefillSchedule();
  uint64_t scratch = step.scratchBytes;
  if (prefill)
    scratch = std::max(scratch, prefill->scratchBytes);
  auto alloc = [&](CudaDriver::DevicePtr &p, uint64_t bytes, const char *what) {
    Status s = cu.check(cu.memAlloc(&p, std::max<uint64_t>(bytes, 64)),
                        std::string("cannot allocate ") + std::to_string(bytes) + " bytes of " +
                            what + " on the GPU");
    if (s)
      s = cu.check(cu.memsetD8(p, 0, std::max<uint64_t>(bytes, 64)), "cuMemsetD8");
    return s;
  };
  for (auto [ptr, bytes, what] :
       {std::tuple{&d->weights_, step.weightBytes, "weights"},
        std::tuple{&d->kv_, step.kvBytes, "KV cache"}, std::tuple{&d->scratch_, scratch, "scratch"},
        std::tuple{&d->input_, prefill ? prefill->inputBytes : uint64_t(64), "input"},
        std::tuple{&d->stepArgs_, uint64_t(sizeof d->hostStepArgs_), "step arguments"}})
    if (Status s = alloc(*ptr, bytes, what); !s)
      return s;
  if (Status s =
          cu.check(cu.streamCreate(&d->stream_, CudaDriver::kStreamNonBlocking), "cuStreamCreate");
      !s)
    return s;
  if (Status s = cu.check(cu.memcpyHtoD(d->weights_, artifact.weights(), step.weightBytes),
                          "copying the weights to the GPU");
      !s)
    return s;
  if (Status s = d->resolve(step, CostStep::Step, d->launches_, d->stepLogits_); !s)
    return s;
  if (prefill) {
    if (Status s = d->resolve(*prefill, CostStep::Prefill, d->prefillLaunches_, d->prefillLogits_);
        !s)
      return s;
    d->prefillChunk_ = prefill->tokens;
  }
  // The memsets ran on the legacy stream, which the device's non-blocking
  // stream does not wait for: finish them before the first step.
  if (Status s = cu.check(cu.ctxSynchronize(), "preparing the GPU's memory"); !s)
    return s;
  return d;
}

ErrorOr<std::vector<int64_t>> CudaDevice::readWords(const std::string &symbol,
                                                    size_t maxWords) const {
  CudaDriver::DevicePtr address = 0;
  size_t bytes = 0;
  if (driver_.moduleGetGlobal(&address, &bytes, module_, symbol.c_str()) != 0)
    return Status::error("the PTX states no " + symbol);
  if (bytes == 0 || bytes % sizeof(int64_t) != 0 || bytes / sizeof(int64_t) > maxWords)
    return Status::error("the PTX's " + symbol + " has " + std::to_string(bytes) +
                         " bytes, not an int64 array of at most " + std::to_string(maxWords));
  std::vector<int64_t> words(bytes / sizeof(int64_t));
  if (Status s = driver_.check(driver_.memcpyDtoH(words.data(), address, bytes),
                               "reading " + symbol + " from the GPU");
      !s)
    return s;
  return words;
}

Status CudaDevice::checkContracts() const {
  auto limits = readWords(kModelLimitsSymbol, kModelLimitWords);
  if (!limits)
    return limits.status();
  if (limits->size() != kModelLimitWords)
    return Status::error(std::string("the PTX's ") + kModelLimitsSymbol + " has " +
                         std::to_string(limits->size()) + " words, not " +
                         std::to_string(kModelLimitWords));
  // The CUDA device runs no batch step.
  if (Status s = checkModelLimits(artifact_.config(), artifact_.prefillSchedule(), nullptr,
                                  limits->data());
      !s)
    return s;
  for (auto [schedule, what] :
       {std::pair{&artifact_.schedule(), ""}, std::pair{artifact_.prefillSchedule(), "prefill "}}) {
    if (!schedule)
      continue;
    // Each kernel's words, read once and whole before any is checked.
    std::map<std::string, std::vector<int64_t>> contracts;
    for (const std::string &kernel : schedule->kernels) {
      // A header and one pair per binding, of the bindings a dispatch has.
      auto words = readWords(kKernelContractPrefix + kernel,
                             kContractHeaderWords + 2 * kMaxBindingsPerDispatch);
      if (!words)
        return words.status();
      if (!isWholeContract(words->data(), words->size()))
        return Status::error("the PTX's contract for kernel " + kernel + " is not whole (" +
                             std::to_string(words->size()) + " words)");
      contracts[kernel] = words.take();
    }
    if (Status s = checkScheduleContracts(*schedule, what,
                                          [&](const std::string &name) -> const int64_t * {
                                            auto it = contracts.find(name);
                                            return it == contracts.end() ? nullptr
                                                                         : it->second.data();
                                          });
        !s)
      return s;
  }
  return Status::ok();
}

Status CudaDevice::resolve(const Schedule &schedule, CostStep step, std::vector<Launch> &launches,
                           CudaDriver::DevicePtr &logits) {
  struct Function {
    void *handle = nullptr;
    unsigned block = kBlock;
  };
  std::map<std::string, Function> functions;
  for (const std::string &kernel : schedule.kernels) {
    Function f;
    if (Status s = driver_.check(driver_.moduleGetFunction(&f.handle, module_, kernel.c_str()),
                                 artifact_.path() + ": kernel " + kernel);
        !s)
      return s;
    // A kernel heavy in registers may allow fewer threads per block; whole
    // warps still, since warp-per-unit kernels shuffle across a warp.
    int maxThreads = 0, localBytes = 0;
    if (driver_.funcGetAttribute(&maxThreads, CudaDriver::kMaxThreadsPerBlock, f.handle) == 0 &&
        maxThreads > 0)
      f.block = std::min<unsigned>(kBlock, std::max(kWarp, unsigned(maxThreads) / kWarp * kWarp));
    if (driver_.funcGetAttribute(&localBytes, CudaDriver::kLocalSizeBytes, f.handle) == 0)
      largestLocalBytes_ = std::max(largestLocalBytes_, localBytes);
    functions[kernel] = f;
  }
  auto address = [&](const Binding &b) -> CudaDriver::DevicePtr {
    switch (b.space) {
    case MemorySpace::Weights:
      return weights_ + b.offset;
    case MemorySpace::KVCache:
      return kv_ + b.offset;
    case MemorySpace::Scratch:
      return scratch_ + b.offset;
    case MemorySpace::Input:
      return input_ + b.offset;
    case MemorySpace::KVPool:
      return 0;
    }
    return 0;
  };
  for (const Dispatch &d : schedule.dispatches) {
    const std::string &name = schedule.kernels[d.kernel];
    const Function &f = functions[name];
    Launch launch{f.handle,       f.block, {}, d.work,
                  d.liveRowUnits, &name,   0,  findKernelCost(artifact_.kernelCosts(), step, name)};
    for (const Binding &b : d.bindings) {
      launch.pointers.push_back(address(b));
      launch.bytes += b.bytes;
    }
    launch.pointers.push_back(stepArgs_);
    launches.push_back(std::move(launch));
  }
  logits = address(schedule.logits);
  return Status::ok();
}

void CudaDevice::fail(const Status &status) {
  if (error_)
    error_ = status;
}

Status CudaDevice::makeCurrent() const {
  return driver_.check(driver_.ctxSetCurrent(context_), "cuCtxSetCurrent");
}

Status CudaDevice::launchAll(const std::vector<Launch> &launches, int32_t token) {
  std::vector<uint64_t> &values = launchValues_;
  std::vector<void *> &params = launchParams_;
  for (const Launch &launch : launches) {
    const int64_t work = launch.liveRowUnits
                             ? std::min<int64_t>(launch.work, int64_t(token) * launch.liveRowUnits)
                             : launch.work;
    if (work <= 0)
      continue;
    // Kernel parameters: one pointer per binding, the step arguments, the work.
    values.assign(launch.pointers.begin(), launch.pointers.end());
    values.push_back(uint64_t(work));
    params.clear();
    for (uint64_t &value : values)
      params.push_back(&value);
    unsigned blocks = static_cast<unsigned>((work + launch.block - 1) / launch.block);
    // Profiling: an event before and after each launch on the stream.
    const size_t timed = timed_.size();
    if (profile_) {
      if (Status s = driver_.check(driver_.eventRecord(events_[2 * timed], stream_),
                                   "timing kernel ", launch.name);
          !s)
        return s;
    }
    if (Status s = driver_.check(driver_.launchKernel(launch.function, blocks, 1, 1, launch.block,
                                                      1, 1, 0, stream_, params.data(), nullptr),
                                 "launching kernel ", launch.name);
        !s)
      return s;
    if (profile_) {
      if (Status s = driver_.check(driver_.eventRecord(events_[2 * timed + 1], stream_),
                                   "timing kernel ", launch.name);
          !s)
        return s;
      timed_.push_back(&launch);
    }
  }
  return Status::ok();
}

void CudaDevice::enableProfiling() {
  const size_t most = std::max(launches_.size(), prefillLaunches_.size());
  if (!makeCurrent())
    return;
  while (events_.size() < 2 * most) {
    void *event = nullptr;
    if (driver_.eventCreate(&event, 0) != 0)
      return fail(Status::error("cuEventCreate: cannot time the kernels"));
    events_.push_back(event);
  }
  profile_ = std::make_unique<KernelProfile>();
}

Status CudaDevice::capture(const std::vector<Launch> &launches, void *&graph) {
  if (Status s = driver_.check(driver_.streamBeginCapture(stream_, CudaDriver::kCaptureThreadLocal),
                               "capturing the step's CUDA graph");
      !s)
    return s;
  // Capture ends whatever happens, so the stream is usable afterwards.
  Status launched = launchAll(launches, /*token=*/0);
  void *captured = nullptr;
  Status ended = driver_.check(driver_.streamEndCapture(stream_, &captured),
                               "capturing the step's CUDA graph");
  if (launched && ended)
    ended = driver_.check(driver_.graphInstantiate(&graph, captured, 0),
                          "instantiating the step's CUDA graph");
  if (captured)
    driver_.graphDestroy(captured);
  return launched ? ended : launched;
}

Status CudaDevice::run(const std::vector<Launch> &launches, void *&graph,
                       CudaDriver::DevicePtr logits, int32_t token, int32_t pos) {
  // Graphs replay fixed work: a schedule bounded by live rows (a batch
  // step, which the CUDA target does not build) launches one by one.
  // Profiling times each launch between events: no graph then.
  const bool replay = cudaGraphs_ && !profile_ &&
                      std::none_of(launches.begin(), launches.end(),
                                   [](const Launch &l) { return l.liveRowUnits != 0; });
  timed_.clear();
  hostStepArgs_[0] = token;
  hostStepArgs_[1] = pos;
  Status s = driver_.check(
      driver_.memcpyHtoDAsync(stepArgs_, hostStepArgs_, sizeof hostStepArgs_, stream_),
      "copying the step's token and position to the GPU");
  if (s && replay && !graph)
    s = capture(launches, graph);
  if (s)
    s = replay
            ? driver_.check(driver_.graphLaunch(graph, stream_), "launching the step's CUDA graph")
            : launchAll(launches, token);
  // A fault in any kernel of the step surfaces here.
  if (s)
    s = driver_.check(driver_.streamSynchronize(stream_),
                      replay ? "running the step (a CUDA graph; --no-cuda-graphs names a "
                               "failing kernel when its launch fails)"
                             : "running the step");
  for (size_t i = 0; s && i < timed_.size(); ++i) {
    float ms = 0;
    s = driver_.check(driver_.eventElapsedTime(&ms, events_[2 * i], events_[2 * i + 1]),
                      "timing kernel ", timed_[i]->name);
    if (s)
      profile_->add(*timed_[i]->name, ms / 1e3, timed_[i]->bytes, timed_[i]->cost);
  }
  if (s)
    s = driver_.check(driver_.memcpyDtoH(logits_.data(), logits, logits_.size() * sizeof(float)),
                      "copying the logits back");
  return s;
}

void CudaDevice::step(int32_t token, int32_t pos) {
  trace::Scope traced("step", "decode step",
                      trace::enabled() ? trace::Args().add("pos", pos) : trace::Args());
  if (!error_)
    return;
  Status s = makeCurrent();
  if (s && profile_)
    profile_->beginStep(decodeProfiledStep(pos, artifact_.config().slidingWindow));
  if (s)
    s = run(launches_, stepGraph_, stepLogits_, token, pos);
  fail(s);
}

void CudaDevice::prefill(const int32_t *tokens, int32_t pos) {
  trace::Scope traced("step", "prefill step",
                      trace::enabled() ? trace::Args().add("pos", pos) : trace::Args());
  if (!error_)
    return;
  Status s = makeCurrent();
  if (s)
    s = driver_.check(
        driver_.memcpyHtoDAsync(input_, tokens, sizeof(int32_t) * size_t(prefillChunk_), stream_),
        "copying the prompt to the GPU");
  if (s && profile_)
    profile_->beginStep(prefillProfiledStep(pos, prefillChunk_, artifact_.config().slidingWindow));
  if (s)
    s = run(prefillLaunches_, prefillGraph_, prefillLogits_, /*token=*/0, pos);
  fail(s);
}

double CudaDevice::measureOwnBandwidthGBs() {
  const CudaDriver &cu = driver_;
  if (!makeCurrent())
    return 0;
  // The largest buffer pair that fits, from 1 GiB down: far beyond any cache.
  CudaDriver::DevicePtr from = 0, to = 0;
  size_t bytes = size_t(1) << 30;
  for (; bytes >= (size_t(1) << 26); bytes /= 2) {
    if (cu.memAlloc(&from, bytes) == 0) {
      if (cu.memAlloc(&to, bytes) == 0)
        break;
      cu.memFree(from);
      from = 0;
    }
  }
  if (!to)
    return 0;
  double best = 0;
  cu.memcpyDtoD(to, from, bytes); // Warm-up.
  cu.ctxSynchronize();
  for (int run = 0; run < 5; ++run) {
    constexpr int kCopies = 10;
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kCopies; ++i)
      cu.memcpyDtoD(to, from, bytes);
    if (cu.ctxSynchronize() != 0)
      break;
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    best = std::max(best, 2.0 * kCopies * double(bytes) / seconds / 1e9);
  }
  cu.memFree(from);
  cu.memFree(to);
  return best;
}

std::string CudaDevice::describe() const {
  return "device: cuda, " + deviceName_ + ", " + std::to_string(launches_.size()) +
         " kernels per step" +
         (profile_      ? std::string(" launched one by one, each timed")
          : cudaGraphs_ ? std::string(" replayed as one CUDA graph")
                        : std::string(" launched one by one")) +
         ", at most " + std::to_string(largestLocalBytes_) + " bytes of local memory per thread, " +
         (prefillChunk_ ? "prefill in chunks of " + std::to_string(prefillChunk_) + " tokens"
                        : std::string("no prefill step")) +
         ", " + artifact_.target();
}

} // namespace quill
