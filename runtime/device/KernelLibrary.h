// Loads the kernels' shared object from artifact bytes, without LLVM: the
// bytes go to an anonymous in-memory file that the dynamic loader opens.
#pragma once

#include "runtime/support/Error.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace quill {

/// The uniform kernel ABI emitted by quill-emit-kernel-abi.
using KernelFn = void (*)(void *const *bindings, int64_t token, int64_t pos, int64_t begin,
                          int64_t end);

class KernelLibrary {
public:
  static ErrorOr<KernelLibrary> load(const uint8_t *elf, size_t size, const std::string &name);
  KernelLibrary(KernelLibrary &&other) noexcept : handle_(other.handle_), fd_(other.fd_) {
    other.handle_ = nullptr;
    other.fd_ = -1;
  }
  KernelLibrary &operator=(KernelLibrary &&other) noexcept;
  KernelLibrary(const KernelLibrary &) = delete;
  ~KernelLibrary();

  ErrorOr<KernelFn> lookup(const std::string &symbol) const;
  /// The int64 array the library exports as `symbol` (a kernel contract, the
  /// model limits); null when it has none.
  const int64_t *lookupWords(const std::string &symbol) const;

private:
  KernelLibrary() = default;
  void *handle_ = nullptr;
  /// The in-memory file, open while the library is loaded: the loader knows
  /// a library by its path, /proc/self/fd/N, so N must not be reused by a
  /// second artifact's library while this one is loaded.
  int fd_ = -1;
};

/// Fails when this CPU lacks one of the comma-separated ISA features the
/// kernels were compiled for ("avx2,fma,avx512f", from the artifact's target).
Status checkCpuFeatures(const std::string &required);

} // namespace quill
