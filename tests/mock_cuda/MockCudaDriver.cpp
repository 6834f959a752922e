// A stand-in for libcuda.so.1 that checks how the runtime drives the CUDA
// driver API on machines without a GPU (QUILL_CUDA_DRIVER points quill-run
// at it). "Device memory" is host memory; kernels are not run, but every
// launch is checked against the PTX the module was loaded from: the entry
// exists, its pointer parameters come first and its one scalar (the work)
// last, every pointer parameter points into a live allocation, the grid
// covers the work without a wholly idle block, and it goes to a stream the
// runtime created. Launches on a capturing stream become a CUDA graph, and
// each replay of it re-checks its pointers. Copies are bounds-checked, and
// every call that needs one checks for a current context (per thread). Any
// violation prints one "mock-cuda:" line and fails the call.
//
// A module's initialized int64 arrays (the kernels' contracts) live in
// device memory, found by cuModuleGetGlobal.
//
// MOCK_CUDA_FAIL=init makes cuInit report that there is no device, and
// MOCK_CUDA_FAIL=launch makes the fourth kernel run fail: a direct launch
// returns the error, a graph's replay makes the stream's next
// synchronization return it (as a faulting kernel would);
// MOCK_CUDA_MEMORY_MB sets the device memory (default 256 MiB);
// MOCK_CUDA_REPORT=1 prints the counts at exit (launches, live allocations).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace {

using Result = int;
using DevicePtr = unsigned long long;
constexpr Result kSuccess = 0, kInvalidValue = 1, kOutOfMemory = 2, kNoDevice = 100,
                 kInvalidContext = 201, kInvalidPtx = 218, kNotFound = 500, kLaunchFailed = 719;
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

/// A `.global .b64 name[n] = {...}` of the module, in "device memory".
struct Global {
  std::string name;
  uint64_t address = 0, bytes = 0;
};

struct Module {
  std::vector<Entry> entries;
  std::vector<Global> globals;
};

/// A checked launch: its entry, parameter values and grid.
struct Launch {
  const Entry *entry = nullptr;
  std::vector<uint64_t> values;
  unsigned grid = 0, block = 0;
};

/// An event: recorded on a stream or not yet.
struct Event {
  bool recorded = false;
};

struct Stream {
  bool capturing = false;
  bool faulted = false; ///< A replayed kernel "faulted": the next sync fails.
  std::vector<Launch> captured;
};

/// A captured graph, and an instantiated (executable) one.
struct Graph {
  std::vector<Launch> launches;
};

struct State {
  std::mutex mutex;
  std::map<uint64_t, uint64_t> allocations; ///< Base → bytes.
  std::set<uint64_t> globals;               ///< Those that are modules' globals.
  uint64_t inUse = 0;
  uint64_t launches = 0, toDevice = 0, fromDevice = 0, failures = 0;
  std::set<const void *> streams, graphs, execs, events; ///< Live handles (leaks count too).
  bool initialized = false;

  ~State() {
    const char *report = std::getenv("MOCK_CUDA_REPORT");
    if (report && *report)
      std::fprintf(stderr,
                   "mock-cuda: %llu launches, %llu bytes to the device, %llu from it, %zu live "
                   "allocations, %llu failed calls\n",
                   (unsigned long long)launches, (unsigned long long)toDevice,
                   (unsigned long long)fromDevice,
                   allocations.size() + streams.size() + graphs.size() + execs.size() +
                       events.size(),
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

/// Device memory of `bytes` (cuMemAlloc's, or a module's global).
bool allocate(uint64_t &p, uint64_t bytes) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (bytes == 0 || s.inUse + bytes > memoryBytes())
    return false;
  void *memory = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
  if (!memory)
    return false;
  p = reinterpret_cast<uintptr_t>(memory);
  s.allocations[p] = bytes;
  s.inUse += bytes;
  return true;
}

bool release(uint64_t p) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  auto it = s.allocations.find(p);
  if (it == s.allocations.end())
    return false;
  s.inUse -= it->second;
  s.allocations.erase(it);
  std::free(reinterpret_cast<void *>(uintptr_t(p)));
  return true;
}

/// The module's initialized 64-bit arrays (`.visible .global .align 8 .b64
/// name[n] = {w, ...};`), each placed in device memory with its words;
/// false for one whose initializer does not hold n integers.
bool parseGlobals(const std::string &ptx, Module &module) {
  const std::string marker = ".visible .global .align 8 .b64 ";
  for (size_t at = ptx.find(marker); at != std::string::npos; at = ptx.find(marker, at + 1)) {
    size_t nameStart = at + marker.size();
    size_t open = ptx.find('[', nameStart), brace = ptx.find('{', nameStart),
           end = ptx.find("};", nameStart);
    if (open == std::string::npos || brace == std::string::npos || end == std::string::npos ||
        !(open < brace && brace < end))
      return false;
    uint64_t count = std::strtoull(ptx.c_str() + open + 1, nullptr, 10);
    std::vector<int64_t> words;
    const char *p = ptx.c_str() + brace + 1;
    while (p < ptx.c_str() + end) {
      char *next = nullptr;
      words.push_back(int64_t(std::strtoull(p, &next, 10)));
      if (next == p)
        return false;
      p = next;
      while (*p == ',' || *p == ' ')
        ++p;
    }
    if (words.size() != count)
      return false;
    Global g{ptx.substr(nameStart, open - nameStart), 0, count * sizeof(int64_t)};
    if (!allocate(g.address, g.bytes))
      return false;
    std::memcpy(reinterpret_cast<void *>(uintptr_t(g.address)), words.data(), g.bytes);
    state().globals.insert(g.address);
    module.globals.push_back(g);
  }
  return true;
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
  return !module.entries.empty() && parseGlobals(ptx, module);
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
  case kNoDevice:
    *message = "no CUDA-capable device is detected";
    break;
  case kInvalidValue:
    *message = "invalid argument";
    break;
  case kOutOfMemory:
    *message = "out of memory";
    break;
  case kInvalidPtx:
    *message = "a PTX JIT compilation failed";
    break;
  case kInvalidContext:
    *message = "invalid device context";
    break;
  case kLaunchFailed:
    *message = "unspecified launch failure";
    break;
  case kNotFound:
    *message = "named symbol not found";
    break;
  default:
    *message = "unknown error";
    break;
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
    for (const Global &g : m->globals) {
      state().globals.erase(g.address);
      release(g.address);
    }
    delete m;
    return failWith(kInvalidPtx, "cuModuleLoadData: not a PTX module with entries");
  }
  *module = m;
  return kSuccess;
}

Result cuModuleUnload(void *module) {
  auto *m = static_cast<Module *>(module);
  for (const Global &g : m->globals) {
    state().globals.erase(g.address);
    release(g.address);
  }
  delete m;
  return kSuccess;
}

Result cuModuleGetGlobal_v2(DevicePtr *address, size_t *bytes, void *module, const char *name) {
  for (const Global &g : static_cast<Module *>(module)->globals)
    if (g.name == name) {
      *address = g.address;
      *bytes = g.bytes;
      return kSuccess;
    }
  return kNotFound;
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
  case 0:
    *value = 1024;
    return kSuccess; // CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK
  case 3:
    *value = entry->localBytes;
    return kSuccess; // CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES
  default:
    return kInvalidValue;
  }
}

Result cuMemAlloc_v2(DevicePtr *p, size_t bytes) {
  if (!current)
    return failWith(kInvalidContext, "cuMemAlloc: no current context on this thread");
  if (bytes == 0)
    return kInvalidValue;
  uint64_t address = 0;
  if (!allocate(address, bytes))
    return kOutOfMemory;
  *p = address;
  return kSuccess;
}

Result cuMemFree_v2(DevicePtr p) {
  if (!current)
    return failWith(kInvalidContext, "cuMemFree: no current context on this thread");
  if (!release(p))
    return failWith(kInvalidValue, "cuMemFree: not an allocation");
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
  // The report's bytes from the device are the steps' traffic: reading a
  // module's global (a contract, once at load) is not counted.
  if (!state().globals.count(from))
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

} // extern "C"

namespace {

/// The stream as the runtime's own, or null after reporting it.
Stream *ownStream(void *stream, const char *call) {
  if (!stream || !state().streams.count(stream)) {
    failWith(kInvalidValue, std::string(call) + ": not a stream the runtime created");
    return nullptr;
  }
  return static_cast<Stream *>(stream);
}

/// Every pointer parameter of `launch` points into a live allocation, and
/// the grid covers the work: empty, or why not.
std::string checkLaunch(const Launch &launch) {
  const Entry &entry = *launch.entry;
  size_t count = entry.pointer.size();
  for (size_t i = 0; i < count; ++i) {
    if (entry.pointer[i] && !inside(launch.values[i], 1))
      return entry.name + ": pointer parameter " + std::to_string(i) + " is not device memory";
    if (!entry.pointer[i] && i + 1 < count)
      return entry.name + ": a scalar before the last parameter";
  }
  uint64_t work = launch.values[count - 1];
  uint64_t threads = uint64_t(launch.grid) * launch.block;
  if (work == 0 || threads < work || threads - work >= launch.block)
    return entry.name + ": " + std::to_string(launch.grid) + " blocks of " +
           std::to_string(launch.block) + " for " + std::to_string(work) + " units of work";
  return "";
}

/// Whether MOCK_CUDA_FAIL=launch makes this kernel run fail.
bool runFails() {
  const char *fail = std::getenv("MOCK_CUDA_FAIL");
  return fail && std::strcmp(fail, "launch") == 0 && state().launches >= 3;
}

} // namespace

extern "C" {

Result cuLaunchKernel(void *function, unsigned gridX, unsigned gridY, unsigned gridZ,
                      unsigned blockX, unsigned blockY, unsigned blockZ, unsigned sharedBytes,
                      void *stream, void **params, void **extra) {
  if (!current)
    return failWith(kInvalidContext, "cuLaunchKernel: no current context on this thread");
  Stream *own = ownStream(stream, "cuLaunchKernel");
  if (!own)
    return kInvalidValue;
  const auto *entry = static_cast<const Entry *>(function);
  if (!entry || !params || extra)
    return failWith(kInvalidValue, "cuLaunchKernel: no function or no parameters");
  const std::string name = entry->name;
  if (gridY != 1 || gridZ != 1 || blockY != 1 || blockZ != 1 || blockX == 0 || blockX > 1024 ||
      sharedBytes != 0)
    return failWith(kInvalidValue, name + ": unexpected launch shape");
  // The runtime passes one 8-byte value per parameter; the last is the work.
  Launch launch{entry, {}, gridX, blockX};
  for (size_t i = 0; i < entry->pointer.size(); ++i) {
    if (!params[i])
      return failWith(kInvalidValue, name + ": parameter " + std::to_string(i) + " missing");
    uint64_t value;
    std::memcpy(&value, params[i], sizeof value);
    launch.values.push_back(value);
  }
  if (std::string why = checkLaunch(launch); !why.empty())
    return failWith(kInvalidValue, why);
  if (own->capturing) {
    own->captured.push_back(std::move(launch));
    return kSuccess;
  }
  if (runFails())
    return kLaunchFailed;
  ++state().launches;
  return kSuccess;
}

Result cuStreamCreate(void **stream, unsigned flags) {
  if (!current)
    return failWith(kInvalidContext, "cuStreamCreate: no current context on this thread");
  if (flags > 1)
    return kInvalidValue;
  *stream = new Stream;
  state().streams.insert(*stream);
  return kSuccess;
}

Result cuStreamDestroy_v2(void *stream) {
  Stream *own = ownStream(stream, "cuStreamDestroy");
  if (!own)
    return kInvalidValue;
  state().streams.erase(stream);
  delete own;
  return kSuccess;
}

Result cuStreamSynchronize(void *stream) {
  if (!current)
    return failWith(kInvalidContext, "cuStreamSynchronize: no current context on this thread");
  Stream *own = ownStream(stream, "cuStreamSynchronize");
  if (!own)
    return kInvalidValue;
  if (own->capturing)
    return failWith(kInvalidValue, "cuStreamSynchronize: the stream is capturing");
  if (own->faulted)
    return kLaunchFailed; // Sticky, as a faulted context's is.
  return kSuccess;
}

Result cuMemcpyHtoDAsync_v2(DevicePtr to, const void *from, size_t bytes, void *stream) {
  Stream *own = ownStream(stream, "cuMemcpyHtoDAsync");
  if (!own)
    return kInvalidValue;
  if (own->capturing)
    return failWith(kInvalidValue, "cuMemcpyHtoDAsync: a copy from pageable memory captured");
  return cuMemcpyHtoD_v2(to, from, bytes);
}

Result cuStreamBeginCapture_v2(void *stream, int mode) {
  if (!current)
    return failWith(kInvalidContext, "cuStreamBeginCapture: no current context on this thread");
  Stream *own = ownStream(stream, "cuStreamBeginCapture");
  if (!own)
    return kInvalidValue;
  if (own->capturing || mode < 0 || mode > 2)
    return failWith(kInvalidValue, "cuStreamBeginCapture: already capturing, or a bad mode");
  own->capturing = true;
  own->captured.clear();
  return kSuccess;
}

Result cuStreamEndCapture(void *stream, void **graph) {
  Stream *own = ownStream(stream, "cuStreamEndCapture");
  if (!own)
    return kInvalidValue;
  if (!own->capturing)
    return failWith(kInvalidValue, "cuStreamEndCapture: the stream is not capturing");
  own->capturing = false;
  auto *g = new Graph{std::move(own->captured)};
  own->captured.clear();
  state().graphs.insert(g);
  *graph = g;
  return kSuccess;
}

Result cuGraphInstantiateWithFlags(void **exec, void *graph, unsigned long long flags) {
  if (!state().graphs.count(graph) || flags != 0)
    return failWith(kInvalidValue, "cuGraphInstantiate: not a captured graph");
  auto *e = new Graph(*static_cast<Graph *>(graph));
  state().execs.insert(e);
  *exec = e;
  return kSuccess;
}

Result cuGraphDestroy(void *graph) {
  if (!state().graphs.erase(graph))
    return failWith(kInvalidValue, "cuGraphDestroy: not a graph");
  delete static_cast<Graph *>(graph);
  return kSuccess;
}

Result cuGraphExecDestroy(void *exec) {
  if (!state().execs.erase(exec))
    return failWith(kInvalidValue, "cuGraphExecDestroy: not an executable graph");
  delete static_cast<Graph *>(exec);
  return kSuccess;
}

Result cuGraphLaunch(void *exec, void *stream) {
  if (!current)
    return failWith(kInvalidContext, "cuGraphLaunch: no current context on this thread");
  Stream *own = ownStream(stream, "cuGraphLaunch");
  if (!own)
    return kInvalidValue;
  if (!state().execs.count(exec))
    return failWith(kInvalidValue, "cuGraphLaunch: not an executable graph");
  for (const Launch &launch : static_cast<Graph *>(exec)->launches) {
    if (std::string why = checkLaunch(launch); !why.empty())
      return failWith(kInvalidValue, "cuGraphLaunch: " + why);
    if (runFails())
      own->faulted = true;
    ++state().launches;
  }
  return kSuccess;
}

Result cuEventCreate(void **event, unsigned flags) {
  if (!current)
    return failWith(kInvalidContext, "cuEventCreate: no current context on this thread");
  if (flags != 0)
    return kInvalidValue;
  *event = new Event;
  state().events.insert(*event);
  return kSuccess;
}

Result cuEventRecord(void *event, void *stream) {
  if (!state().events.count(event))
    return failWith(kInvalidValue, "cuEventRecord: not an event");
  Stream *own = ownStream(stream, "cuEventRecord");
  if (!own)
    return kInvalidValue;
  static_cast<Event *>(event)->recorded = true;
  return kSuccess;
}

/// Kernels take no time here: every interval is a microsecond.
Result cuEventElapsedTime(float *ms, void *start, void *end) {
  auto &events = state().events;
  if (!events.count(start) || !events.count(end) || !static_cast<Event *>(start)->recorded ||
      !static_cast<Event *>(end)->recorded)
    return failWith(kInvalidValue, "cuEventElapsedTime: an event not recorded");
  *ms = 0.001f;
  return kSuccess;
}

Result cuEventDestroy_v2(void *event) {
  if (!state().events.erase(event))
    return failWith(kInvalidValue, "cuEventDestroy: not an event");
  delete static_cast<Event *>(event);
  return kSuccess;
}

} // extern "C"
