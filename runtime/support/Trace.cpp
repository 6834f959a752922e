// The trace recorder: per-thread event buffers, written as trace-event JSON.
#include "runtime/support/Trace.h"

#include "runtime/support/Json.h"

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <mutex>
#include <new>
#include <set>
#include <thread>
#include <vector>

namespace quill::trace {

namespace {

/// The event clock: the time-stamp counter where there is one (a third of
/// steady_clock's cost per read, which a step of tiny kernels notices),
/// converted to microseconds with the rate measured over the trace.
uint64_t ticks() {
#if defined(__x86_64__)
  return __rdtsc();
#else
  return uint64_t(std::chrono::steady_clock::now().time_since_epoch().count());
#endif
}

struct Event {
  char phase; ///< 'X' (a span) or 'i' (an instant).
  const char *category;
  const char *name;              ///< Or, when null:
  const std::string *nameString; ///< (outlives the trace).
  uint64_t start;                ///< Ticks.
  uint64_t duration;
  Args args;
};

/// Events lost because memory ran out: recording happens in destructors,
/// which must not throw.
std::atomic<size_t> droppedEvents{0};

/// One thread's events; tid is its place in the registry, from 1. They go
/// into chunks of kChunkEvents allocated and touched at once (not a
/// deque's small blocks, a malloc and page faults every few events, which
/// a step of tiny kernels notices); events never move.
struct ThreadBuffer {
  static constexpr size_t kChunkEvents = 8192;
  int tid = 0;
  uint64_t generation = 0; ///< The trace it was made for (see start()).
  std::vector<std::unique_ptr<Event[]>> chunks;
  size_t used = kChunkEvents; ///< In the last chunk.
  /// Set while the owning thread appends: stopAndWrite waits for it to
  /// clear before it reads the events (see record()).
  std::atomic<bool> appending{false};

  void add(const Event &event) {
    if (used == kChunkEvents && !grow()) {
      droppedEvents.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    chunks.back()[used++] = event;
  }
  bool grow() {
    // Constructing the events (their args zeroed) touches every page now,
    // rather than one fault at a time as events come.
    std::unique_ptr<Event[]> chunk(new (std::nothrow) Event[kChunkEvents]);
    if (!chunk)
      return false;
    try {
      chunks.push_back(std::move(chunk));
    } catch (const std::bad_alloc &) {
      return false;
    }
    used = 0;
    return true;
  }
  template <typename Visit> void forEach(Visit visit) const {
    for (size_t c = 0; c < chunks.size(); ++c)
      for (size_t i = 0, n = c + 1 == chunks.size() ? used : kChunkEvents; i < n; ++i)
        visit(chunks[c][i]);
  }
};

std::atomic<bool> recording{false};
std::chrono::steady_clock::time_point origin;
uint64_t originTicks = 0;
std::mutex registryMutex;
std::vector<ThreadBuffer *> registry; // Every thread that recorded in this trace.
/// Every buffer ever made. A thread may still hold one from an earlier
/// trace, so a buffer's memory (a few words once its chunks are freed)
/// lives as long as the process.
std::vector<std::unique_ptr<ThreadBuffer>> allBuffers;
/// Bumped by each start(): a thread's buffer from an earlier trace is not reused.
std::atomic<uint64_t> generation{0};

ThreadBuffer &threadBuffer() {
  thread_local ThreadBuffer *buffer = nullptr;
  thread_local uint64_t bufferGeneration = ~uint64_t(0);
  const uint64_t now = generation.load(std::memory_order_acquire);
  if (!buffer || bufferGeneration != now) {
    std::lock_guard<std::mutex> lock(registryMutex);
    allBuffers.push_back(std::make_unique<ThreadBuffer>());
    buffer = allBuffers.back().get();
    registry.push_back(buffer);
    buffer->tid = int(registry.size());
    buffer->generation = now;
    buffer->grow();
    bufferGeneration = now;
  }
  return *buffer;
}

/// Appends `event` to this thread's buffer unless recording has stopped.
/// The flag and the recording state form a Dekker pair (both sequentially
/// consistent): either this thread sees the stop and appends nothing, or
/// stopAndWrite sees the flag and waits for the append to finish.
void record(const Event &event) {
  ThreadBuffer *found = nullptr;
  try {
    found = &threadBuffer();
  } catch (const std::bad_alloc &) {
    droppedEvents.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  ThreadBuffer &buffer = *found;
  buffer.appending.store(true, std::memory_order_seq_cst);
  // A buffer of an earlier trace (this thread took it before a start()
  // that then turned recording on again) is in no registry: appending to
  // it would lose the event and leak its chunk.
  if (recording.load(std::memory_order_seq_cst) &&
      buffer.generation == generation.load(std::memory_order_seq_cst))
    buffer.add(event);
  buffer.appending.store(false, std::memory_order_release);
}

/// Waits until no thread appends to a buffer of the registry. Recording
/// must be off: a thread that saw it on may still be appending, one that
/// starts now sees it off (and one registering waits for registryMutex,
/// which the caller holds).
void waitForAppends() {
  for (ThreadBuffer *buffer : registry)
    while (buffer->appending.load(std::memory_order_seq_cst))
      std::this_thread::yield();
}

/// Frees the events of every buffer in the registry and empties it.
void clearRegistry() {
  waitForAppends();
  for (ThreadBuffer *buffer : registry) {
    buffer->chunks.clear();
    buffer->used = ThreadBuffer::kChunkEvents;
  }
  registry.clear();
}

} // namespace

bool enabled() { return recording.load(std::memory_order_acquire); }

void start() {
  // A start while recording drops the events so far: recording off first,
  // so that clearRegistry's wait sees every append in flight.
  recording.store(false, std::memory_order_seq_cst);
  {
    std::lock_guard<std::mutex> lock(registryMutex);
    clearRegistry();
  }
  droppedEvents.store(0, std::memory_order_relaxed);
  generation.fetch_add(1, std::memory_order_acq_rel);
  origin = std::chrono::steady_clock::now();
  originTicks = ticks();
  threadBuffer(); // The caller is tid 1, "main".
  recording.store(true, std::memory_order_release);
}

Args &Args::add(const char *key, int64_t value) {
  if (numbers < kMaxNumbers) {
    keys[numbers] = key;
    values[numbers++] = value;
  }
  return *this;
}

Args &Args::add(const char *key, const char *text) {
  if (texts < kMaxTexts) {
    textKeys[texts] = key;
    textValues[texts++] = text;
  }
  return *this;
}

const std::string *intern(const std::string &name) {
  static std::mutex mutex;
  static std::set<std::string> names; // Nodes never move.
  std::lock_guard<std::mutex> lock(mutex);
  return &*names.insert(name).first;
}

void instant(const char *category, const char *name, const Args &args) {
  if (!enabled())
    return;
  record({'i', category, name, nullptr, ticks(), 0, args});
}

uint64_t now() { return enabled() ? ticks() : 0; }

void span(const char *category, const std::string *name, uint64_t begin, const Args &args) {
  if (!enabled())
    return;
  const uint64_t end = ticks();
  record({'X', category, nullptr, name, begin, end > begin ? end - begin : 0, args});
}

void Scope::begin(const char *category, const char *name, const std::string *nameString,
                  Args &&args) {
  on_ = true;
  category_ = category;
  name_ = name;
  nameString_ = nameString;
  args_ = std::move(args);
  begin_ = ticks();
}

Scope::Scope(const char *category, const std::string *name, Args args) {
  if (enabled())
    begin(category, nullptr, name, std::move(args));
}

Scope::Scope(const char *category, const char *name, Args args) {
  if (enabled())
    begin(category, name, nullptr, std::move(args));
}

Scope::~Scope() {
  if (!on_ || !enabled())
    return;
  const uint64_t end = ticks();
  record({'X', category_, name_, nameString_, begin_, end - begin_, args_});
}

Status stopAndWrite(const std::string &path) {
  recording.store(false, std::memory_order_seq_cst);
  // Ticks per microsecond over the whole trace.
  const uint64_t endTicks = ticks();
  const double elapsed =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - origin).count();
  const double perMicrosecond =
      elapsed > 0 && endTicks > originTicks ? double(endTicks - originTicks) / elapsed : 1.0;
  auto since = [&](uint64_t t) { return double(int64_t(t - originTicks)) / perMicrosecond; };
  std::lock_guard<std::mutex> lock(registryMutex);
  waitForAppends();
  std::FILE *file = std::fopen(path.c_str(), "w");
  if (!file)
    return Status::error(path + ": cannot write the trace");
  std::string out = "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  bool first = true;
  auto append = [&](const std::string &event) {
    out += (first ? "" : ",\n") + event;
    first = false;
  };
  for (const auto &thread : registry) {
    // Thread names: the recording thread, then the workers it used.
    const std::string name =
        thread->tid == 1 ? "main" : "worker " + std::to_string(thread->tid - 1);
    append("{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":1,\"tid\":" +
           std::to_string(thread->tid) + ",\"ts\":0,\"args\":{\"name\":" + jsonQuote(name) + "}}");
    char times[96];
    thread->forEach([&](const Event &e) {
      std::string event = "{\"ph\":\"";
      event += e.phase;
      event += "\",\"cat\":" + jsonQuote(e.category) +
               ",\"name\":" + jsonQuote(e.name ? std::string_view(e.name) : *e.nameString) +
               ",\"pid\":1,\"tid\":" + std::to_string(thread->tid);
      if (e.phase == 'X')
        std::snprintf(times, sizeof times, ",\"ts\":%.3f,\"dur\":%.3f", since(e.start),
                      double(e.duration) / perMicrosecond);
      else
        std::snprintf(times, sizeof times, ",\"ts\":%.3f,\"s\":\"t\"", since(e.start));
      event += times;
      std::string args;
      for (int i = 0; i < e.args.texts; ++i)
        args += (args.empty() ? "" : ",") + jsonQuote(e.args.textKeys[i]) + ":" +
                jsonQuote(e.args.textValues[i]);
      for (int i = 0; i < e.args.numbers; ++i)
        args += (args.empty() ? "" : ",") + jsonQuote(e.args.keys[i]) + ":" +
                std::to_string(e.args.values[i]);
      event += ",\"args\":{" + args + "}}";
      append(event);
      if (out.size() > (1 << 20)) {
        std::fwrite(out.data(), 1, out.size(), file);
        out.clear();
      }
    });
  }
  out += "\n]}\n";
  std::fwrite(out.data(), 1, out.size(), file);
  const bool failed = std::ferror(file) != 0;
  if (std::fclose(file) != 0 || failed)
    return Status::error(path + ": cannot write the trace");
  if (const size_t dropped = droppedEvents.load(std::memory_order_relaxed))
    std::fprintf(stderr, "quill: the trace lacks %zu events: out of memory\n", dropped);
  clearRegistry();
  return Status::ok();
}

} // namespace quill::trace
