// memfd + dlopen loading of the kernel library, and the ISA check.
#include "runtime/device/KernelLibrary.h"

#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include <sstream>

namespace quill {

ErrorOr<KernelLibrary> KernelLibrary::load(const uint8_t *elf, size_t size,
                                           const std::string &name) {
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
  std::string path = "/proc/self/fd/" + std::to_string(fd);
  KernelLibrary library;
  library.fd_ = fd;
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
  if (feature == "avx")
    return __builtin_cpu_supports("avx");
  if (feature == "avx2")
    return __builtin_cpu_supports("avx2");
  if (feature == "fma")
    return __builtin_cpu_supports("fma");
  if (feature == "f16c")
    return __builtin_cpu_supports("f16c");
  if (feature == "avx512f")
    return __builtin_cpu_supports("avx512f");
  if (feature == "avx512vl")
    return __builtin_cpu_supports("avx512vl");
  if (feature == "avx512bw")
    return __builtin_cpu_supports("avx512bw");
  if (feature == "avx512dq")
    return __builtin_cpu_supports("avx512dq");
  if (feature == "avx512vnni")
    return __builtin_cpu_supports("avx512vnni");
  if (feature == "avxvnni")
    return __builtin_cpu_supports("avxvnni");
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
