// A stand-in for libcuda.so.1 that checks how the runtime drives the CUDA
// driver API on machines without a GPU (QUILL_CUDA_DRIVER points quill-run
// at it). "Device memory" is host memory; kernels are not run, but every
// launch is checked against the PTX the module was loaded from: the entry
// exists, its pointer parameters come first and its three scalars last,
// every pointer parameter points
// into a live allocation, and the grid covers the work (the last parameter)
// without a wholly idle block. Copies are bounds-checked, and every call
// that needs one checks for a current context (per thread). Any violation
// prints one "mock-cuda:" line and fails the call.
//
// MOCK_CUDA_FAIL=init makes cuInit report that there is no device, and
// MOCK_CUDA_FAIL=launch makes the fourth launch fail as a faulting kernel would;
// MOCK_CUDA_MEMORY_MB sets the device memory (default 256 MiB);
// MOCK_CUDA_REPORT=1 prints the counts at exit (launches, live allocations).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace {

using Result = int;
using DevicePtr = unsigned long long;
constexpr Result kSuccess = 0, kInvalidValue = 1, kOutOfMemory = 2, kNoDevice = 100,
                 kInvalidContext = 201, kInvalidPtx = 218, kNotFound = 500,
                 kLaunchFailed = 719;
/// The stand-in device's memory: 256 MiB unless MOCK_CUDA_MEMORY_MB says
/// otherwise; small, so the bandwidth probe stays cheap.
uint64_t memoryBytes() {
  static const uint64_t bytes = [] {
    const char *mb = std::getenv("MOCK_CUDA_MEMORY_MB");
    return (mb && *mb ? std::strtoull(mb, nullptr, 10) : 256) << 20;
  }();
  return bytes;
}

struct Entry {
  std::string name;
  std::vector<bool> pointer; ///< Per parameter: a .ptr parameter.
  int localBytes = 0;        ///< Its __local_depot, per thread.
};

/// The context current on this thread (CUDA's is per thread): memory, copy
/// and launch calls fail without one, as the driver's do.
thread_local void *current = nullptr;

struct Module {
  std::vector<Entry> entries;
};

struct State {
  std::mutex mutex;
  std::map<uint64_t, uint64_t> allocations; ///< Base → bytes.
  uint64_t inUse = 0;
  uint64_t launches = 0, toDevice = 0, fromDevice = 0, failures = 0;
  bool initialized = false;

  ~State() {
    const char *report = std::getenv("MOCK_CUDA_REPORT");
    if (report && *report)
      std::fprintf(stderr,
                   "mock-cuda: %llu launches, %llu bytes to the device, %llu from it, %zu live "
                   "allocations, %llu failed calls\n",
                   (unsigned long long)launches, (unsigned long long)toDevice,
                   (unsigned long long)fromDevice, allocations.size(),
                   (unsigned long long)failures);
  }
};

State &state() {
  static State s;
  return s;
}

Result failWith(Result code, const std::string &why) {
  std::fprintf(stderr, "mock-cuda: %s\n", why.c_str());
  ++state().failures;
  return code;
}

/// Whether [p, p + bytes) lies inside one live allocation.
bool inside(uint64_t p, uint64_t bytes) {
  auto &allocations = state().allocations;
  auto it = allocations.upper_bound(p);
  if (it == allocations.begin())
    return false;
  --it;
  return p >= it->first && p + bytes <= it->first + it->second;
}

/// The entries of a PTX module and which of their parameters are pointers.
bool parsePtx(const char *text, Module &module) {
  std::string ptx(text);
  if (ptx.find(".version") == std::string::npos || ptx.find(".target") == std::string::npos)
    return false;
  const std::string marker = ".visible .entry ";
  for (size_t at = ptx.find(marker); at != std::string::npos; at = ptx.find(marker, at + 1)) {
    size_t nameStart = at + marker.size();
    size_t open = ptx.find('(', nameStart), close = ptx.find(')', nameStart);
    if (open == std::string::npos || close == std::string::npos || close < open)
      return false;
    Entry entry{ptx.substr(nameStart, open - nameStart), {}};
    size_t line = open;
    while ((line = ptx.find(".param", line + 1)) != std::string::npos && line < close) {
      size_t end = ptx.find('\n', line);
      entry.pointer.push_back(ptx.substr(line, end - line).find(".ptr") != std::string::npos);
    }
    size_t next = ptx.find(marker, close);
    size_t depot = ptx.find("__local_depot", close);
    if (depot != std::string::npos && depot < next) {
      size_t open = ptx.find('[', depot);
      entry.localBytes = std::atoi(ptx.c_str() + open + 1);
    }
    module.entries.push_back(std::move(entry));
  }
  return !module.entries.empty();
}

} // namespace

extern "C" {

Result cuInit(unsigned flags) {
  const char *fail = std::getenv("MOCK_CUDA_FAIL");
  if (fail && std::strcmp(fail, "init") == 0)
    return kNoDevice;
  if (flags != 0)
    return kInvalidValue;
  state().initialized = true;
  return kSuccess;
}

Result cuGetErrorString(Result error, const char **message) {
  switch (error) {
  case kNoDevice: *message = "no CUDA-capable device is detected"; break;
  case kInvalidValue: *message = "invalid argument"; break;
  case kOutOfMemory: *message = "out of memory"; break;
  case kInvalidPtx: *message = "a PTX JIT compilation failed"; break;
  case kInvalidContext: *message = "invalid device context"; break;
  case kLaunchFailed: *message = "unspecified launch failure"; break;
  case kNotFound: *message = "named symbol not found"; break;
  default: *message = "unknown error"; break;
  }
  return kSuccess;
}

Result cuDeviceGet(int *device, int ordinal) {
  if (!state().initialized || ordinal != 0)
    return kInvalidValue;
  *device = 0;
  return kSuccess;
}

Result cuDeviceGetName(char *name, int length, int) {
  std::snprintf(name, size_t(length), "Quill mock GPU");
  return kSuccess;
}

Result cuDevicePrimaryCtxRetain(void **context, int) {
  static int primary;
  *context = &primary;
  return kSuccess;
}
Result cuDevicePrimaryCtxRelease_v2(int) { return kSuccess; }
Result cuCtxSetCurrent(void *context) {
  current = context;
  return kSuccess;
}
Result cuCtxSynchronize() { return kSuccess; }

Result cuModuleLoadData(void **module, const void *image) {
  if (!current)
    return failWith(kInvalidContext, "cuModuleLoadData: no current context on this thread");
  auto *m = new Module;
  if (!image || !parsePtx(static_cast<const char *>(image), *m)) {
    delete m;
    return failWith(kInvalidPtx, "cuModuleLoadData: not a PTX module with entries");
  }
  *module = m;
  return kSuccess;
}

Result cuModuleUnload(void *module) {
  delete static_cast<Module *>(module);
  return kSuccess;
}

Result cuModuleGetFunction(void **function, void *module, const char *name) {
  for (Entry &entry : static_cast<Module *>(module)->entries)
    if (entry.name == name) {
      *function = &entry;
      return kSuccess;
    }
  return failWith(kNotFound, std::string("cuModuleGetFunction: no entry ") + name);
}

Result cuFuncGetAttribute(int *value, int attribute, void *function) {
  const auto *entry = static_cast<const Entry *>(function);
  if (!entry)
    return kInvalidValue;
  switch (attribute) {
  case 0: *value = 1024; return kSuccess; // CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK
  case 3: *value = entry->localBytes; return kSuccess; // CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES
  default: return kInvalidValue;
  }
}

Result cuMemAlloc_v2(DevicePtr *p, size_t bytes) {
  if (!current)
    return failWith(kInvalidContext, "cuMemAlloc: no current context on this thread");
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (bytes == 0)
    return kInvalidValue;
  if (s.inUse + bytes > memoryBytes())
    return kOutOfMemory;
  void *memory = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
  if (!memory)
    return kOutOfMemory;
  *p = reinterpret_cast<uintptr_t>(memory);
  s.allocations[*p] = bytes;
  s.inUse += bytes;
  return kSuccess;
}

Result cuMemFree_v2(DevicePtr p) {
  if (!current)
    return failWith(kInvalidContext, "cuMemFree: no current context on this thread");
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  auto it = s.allocations.find(p);
  if (it == s.allocations.end())
    return failWith(kInvalidValue, "cuMemFree: not an allocation");
  s.inUse -= it->second;
  s.allocations.erase(it);
  std::free(reinterpret_cast<void *>(uintptr_t(p)));
  return kSuccess;
}

Result cuMemcpyHtoD_v2(DevicePtr to, const void *from, size_t bytes) {
  if (!current)
    return failWith(kInvalidContext, "cuMemcpyHtoD: no current context on this thread");
  if (!inside(to, bytes))
    return failWith(kInvalidValue, "cuMemcpyHtoD: destination outside an allocation");
  std::memcpy(reinterpret_cast<void *>(uintptr_t(to)), from, bytes);
  state().toDevice += bytes;
  return kSuccess;
}

Result cuMemcpyDtoH_v2(void *to, DevicePtr from, size_t bytes) {
  if (!current)
    return failWith(kInvalidContext, "cuMemcpyDtoH: no current context on this thread");
  if (!inside(from, bytes))
    return failWith(kInvalidValue, "cuMemcpyDtoH: source outside an allocation");
  std::memcpy(to, reinterpret_cast<const void *>(uintptr_t(from)), bytes);
  state().fromDevice += bytes;
  return kSuccess;
}

Result cuMemcpyDtoD_v2(DevicePtr to, DevicePtr from, size_t bytes) {
  if (!current)
    return failWith(kInvalidContext, "cuMemcpyDtoD: no current context on this thread");
  if (!inside(to, bytes) || !inside(from, bytes))
    return failWith(kInvalidValue, "cuMemcpyDtoD: outside an allocation");
  std::memcpy(reinterpret_cast<void *>(uintptr_t(to)),
              reinterpret_cast<const void *>(uintptr_t(from)), bytes);
  return kSuccess;
}

Result cuMemsetD8_v2(DevicePtr p, unsigned char value, size_t bytes) {
  if (!current)
    return failWith(kInvalidContext, "cuMemsetD8: no current context on this thread");
  if (!inside(p, bytes))
    return failWith(kInvalidValue, "cuMemsetD8: outside an allocation");
  std::memset(reinterpret_cast<void *>(uintptr_t(p)), value, bytes);
  return kSuccess;
}

Result cuLaunchKernel(void *function, unsigned gridX, unsigned gridY, unsigned gridZ,
                      unsigned blockX, unsigned blockY, unsigned blockZ, unsigned sharedBytes,
                      void *stream, void **params, void **extra) {
  (void)stream;
  if (!current)
    return failWith(kInvalidContext, "cuLaunchKernel: no current context on this thread");
  const auto *entry = static_cast<const Entry *>(function);
  if (!entry || !params || extra)
    return failWith(kInvalidValue, "cuLaunchKernel: no function or no parameters");
  const std::string name = entry->name;
  if (gridY != 1 || gridZ != 1 || blockY != 1 || blockZ != 1 || blockX == 0 || blockX > 1024 ||
      sharedBytes != 0)
    return failWith(kInvalidValue, name + ": unexpected launch shape");
  // The runtime passes one 8-byte value per parameter; the last is the work.
  size_t count = entry->pointer.size();
  for (size_t i = 0; i < count; ++i) {
    if (!params[i])
      return failWith(kInvalidValue, name + ": parameter " + std::to_string(i) + " missing");
    uint64_t value;
    std::memcpy(&value, params[i], sizeof value);
    if (entry->pointer[i] && !inside(value, 1))
      return failWith(kInvalidValue,
                      name + ": pointer parameter " + std::to_string(i) + " is not device memory");
    if (!entry->pointer[i] && i + 3 < count)
      return failWith(kInvalidValue, name + ": a scalar before the last three parameters");
  }
  uint64_t work;
  std::memcpy(&work, params[count - 1], sizeof work);
  uint64_t threads = uint64_t(gridX) * blockX;
  if (work == 0 || threads < work || threads - work >= blockX)
    return failWith(kInvalidValue, name + ": " + std::to_string(gridX) + " blocks of " +
                                       std::to_string(blockX) + " for " + std::to_string(work) +
                                       " units of work");
  const char *fail = std::getenv("MOCK_CUDA_FAIL");
  if (fail && std::strcmp(fail, "launch") == 0 && state().launches >= 3)
    return kLaunchFailed;
  ++state().launches;
  return kSuccess;
}

} // extern "C"
