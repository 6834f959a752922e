// memfd + dlopen loading of the kernel library, and the ISA check.
#include "runtime/device/KernelLibrary.h"

#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <utility>

namespace quill {

namespace {

/// With QUILL_KERNELS_DIR set, the kernel library is also written there as
/// quill-kernels-PID.so and loaded from that file, so that profilers
/// (`perf report`, `perf annotate`) find its symbols; a library loaded from
/// an in-memory file has none they can read. The path, or "" when unset.
ErrorOr<std::string> writeForProfilers(const uint8_t *elf, size_t size, const std::string &name) {
  const char *dir = std::getenv("QUILL_KERNELS_DIR");
  if (!dir || !*dir)
    return std::string();
  std::string path = std::string(dir) + "/quill-kernels-" + std::to_string(::getpid()) + ".so";
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char *>(elf), std::streamsize(size));
  out.close();
  if (!out)
    return Status::error(name + ": cannot write the kernel library to " + path +
                         " (QUILL_KERNELS_DIR)");
  return path;
}

} // namespace

ErrorOr<KernelLibrary> KernelLibrary::load(const uint8_t *elf, size_t size,
                                           const std::string &name) {
  ErrorOr<std::string> file = writeForProfilers(elf, size, name);
  if (!file.isOk())
    return file.status();
  KernelLibrary library;
  std::string path = *file;
  if (path.empty()) {
    int fd = memfd_create("quill-kernels", MFD_CLOEXEC);
    if (fd < 0)
      return Status::error(name + ": cannot create an in-memory file for the kernels");
    size_t written = 0;
    while (written < size) {
      ssize_t n = ::write(fd, elf + written, size - written);
      if (n <= 0) {
        ::close(fd);
        return Status::error(name + ": cannot stage the kernel library");
      }
      written += static_cast<size_t>(n);
    }
    path = "/proc/self/fd/" + std::to_string(fd);
    library.fd_ = fd;
  }
  library.handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!library.handle_) {
    const char *why = dlerror();
    return Status::error(name +
                         ": cannot load the kernel library: " + (why ? why : "unknown error"));
  }
  return library;
}

KernelLibrary &KernelLibrary::operator=(KernelLibrary &&other) noexcept {
  if (this != &other) {
    if (handle_)
      dlclose(handle_);
    if (fd_ >= 0)
      ::close(fd_);
    handle_ = other.handle_;
    fd_ = other.fd_;
    other.handle_ = nullptr;
    other.fd_ = -1;
  }
  return *this;
}

KernelLibrary::~KernelLibrary() {
  if (handle_)
    dlclose(handle_);
  if (fd_ >= 0)
    ::close(fd_);
}

ErrorOr<KernelFn> KernelLibrary::lookup(const std::string &symbol) const {
  void *address = dlsym(handle_, symbol.c_str());
  if (!address)
    return Status::error("the kernel library has no kernel '" + symbol + "'");
  return reinterpret_cast<KernelFn>(address);
}

const int64_t *KernelLibrary::lookupWords(const std::string &symbol) const {
  return static_cast<const int64_t *>(dlsym(handle_, symbol.c_str()));
}

static bool cpuSupports(const std::string &feature) {
  __builtin_cpu_init();
  // __builtin_cpu_supports takes a literal: one entry per feature the
  // compiler may list (CpuMachine::requiredFeatures).
#define QUILL_CPU_FEATURE(name)                                                                    \
  {                                                                                                \
    name, [] { return __builtin_cpu_supports(name) != 0; }                                         \
  }
  static const std::pair<const char *, bool (*)()> kFeatures[] = {
      QUILL_CPU_FEATURE("avx"),          QUILL_CPU_FEATURE("avx2"),
      QUILL_CPU_FEATURE("fma"),          QUILL_CPU_FEATURE("f16c"),
      QUILL_CPU_FEATURE("avx512f"),      QUILL_CPU_FEATURE("avx512vl"),
      QUILL_CPU_FEATURE("avx512bw"),     QUILL_CPU_FEATURE("avx512dq"),
      QUILL_CPU_FEATURE("avx512vnni"),   QUILL_CPU_FEATURE("avxvnni"),
      QUILL_CPU_FEATURE("avx512bf16"),   QUILL_CPU_FEATURE("avx512fp16"),
      QUILL_CPU_FEATURE("avx512vbmi"),   QUILL_CPU_FEATURE("avx512vbmi2"),
      QUILL_CPU_FEATURE("avx512bitalg"), QUILL_CPU_FEATURE("avx512vpopcntdq"),
      QUILL_CPU_FEATURE("avx512ifma"),   QUILL_CPU_FEATURE("gfni"),
      QUILL_CPU_FEATURE("vpclmulqdq"),   QUILL_CPU_FEATURE("vaes"),
      QUILL_CPU_FEATURE("bmi"),          QUILL_CPU_FEATURE("bmi2"),
      QUILL_CPU_FEATURE("lzcnt"),        QUILL_CPU_FEATURE("popcnt"),
      QUILL_CPU_FEATURE("movbe"),
  };
#undef QUILL_CPU_FEATURE
  for (const auto &[name, supported] : kFeatures)
    if (feature == name)
      return supported();
  return false; // A feature this runtime cannot check: refuse rather than crash.
}

Status checkCpuFeatures(const std::string &required) {
  std::stringstream list(required);
  std::string feature, missing;
  while (std::getline(list, feature, ','))
    if (!feature.empty() && !cpuSupports(feature))
      missing += (missing.empty() ? "" : ",") + feature;
  if (!missing.empty())
    return Status::error("this CPU lacks " + missing +
                         ", which the kernels were compiled for; recompile with --cpu");
  return Status::ok();
}

} // namespace quill
