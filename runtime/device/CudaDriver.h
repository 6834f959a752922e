// The CUDA driver API, loaded with dlopen at run time: quill-run needs no
// CUDA at build time and runs where there is none. Only what the CUDA device
// uses is bound.
#pragma once

#include "runtime/support/Error.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace quill {

/// Function pointers into libcuda.so.1 (types as in cuda.h, spelled out).
struct CudaDriver {
  using Result = int;
  using DevicePtr = unsigned long long;
  Result (*init)(unsigned) = nullptr;
  Result (*deviceGet)(int *, int) = nullptr;
  Result (*deviceGetName)(char *, int, int) = nullptr;
  Result (*primaryCtxRetain)(void **, int) = nullptr;
  Result (*primaryCtxRelease)(int) = nullptr;
  Result (*ctxSetCurrent)(void *) = nullptr;
  Result (*ctxSynchronize)() = nullptr;
  Result (*moduleLoadData)(void **, const void *) = nullptr;
  Result (*moduleUnload)(void *) = nullptr;
  Result (*moduleGetFunction)(void **, void *, const char *) = nullptr;
  Result (*moduleGetGlobal)(DevicePtr *, size_t *, void *, const char *) = nullptr;
  Result (*funcGetAttribute)(int *, int, void *) = nullptr;
  Result (*memAlloc)(DevicePtr *, size_t) = nullptr;
  Result (*memFree)(DevicePtr) = nullptr;
  Result (*memcpyHtoD)(DevicePtr, const void *, size_t) = nullptr;
  Result (*memcpyDtoH)(void *, DevicePtr, size_t) = nullptr;
  Result (*memcpyDtoD)(DevicePtr, DevicePtr, size_t) = nullptr;
  Result (*memsetD8)(DevicePtr, unsigned char, size_t) = nullptr;
  Result (*launchKernel)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                         unsigned, void *, void **, void **) = nullptr;
  Result (*getErrorString)(Result, const char **) = nullptr;
  // A stream of the device's own, and CUDA graphs captured from it.
  Result (*streamCreate)(void **, unsigned) = nullptr;
  Result (*streamDestroy)(void *) = nullptr;
  Result (*streamSynchronize)(void *) = nullptr;
  Result (*memcpyHtoDAsync)(DevicePtr, const void *, size_t, void *) = nullptr;
  Result (*streamBeginCapture)(void *, int) = nullptr;
  Result (*streamEndCapture)(void *, void **) = nullptr;
  Result (*graphInstantiate)(void **, void *, unsigned long long) = nullptr;
  Result (*graphLaunch)(void *, void *) = nullptr;
  Result (*graphDestroy)(void *) = nullptr;
  Result (*graphExecDestroy)(void *) = nullptr;
  // Events on the stream time each kernel for --profile.
  Result (*eventCreate)(void **, unsigned) = nullptr;
  Result (*eventRecord)(void *, void *) = nullptr;
  Result (*eventElapsedTime)(float *, void *, void *) = nullptr;
  Result (*eventDestroy)(void *) = nullptr;

  /// CUfunction_attribute values used here.
  static constexpr int kMaxThreadsPerBlock = 0, kLocalSizeBytes = 3;
  /// CU_STREAM_NON_BLOCKING: no implicit ordering with the legacy stream.
  static constexpr unsigned kStreamNonBlocking = 1;
  /// CU_STREAM_CAPTURE_MODE_THREAD_LOCAL.
  static constexpr int kCaptureThreadLocal = 1;

  /// Loads libcuda.so.1 (or $QUILL_CUDA_DRIVER) and binds every function;
  /// fails naming what is missing. The library stays loaded for the process.
  static ErrorOr<CudaDriver> load();
  /// "what: the driver's message" for a failed call, ok for 0.
  Status check(Result result, const std::string &what) const;
  /// The same, building no string unless the call failed (for the calls of
  /// every step); `name`, when given, follows `what` in the message.
  Status check(Result result, const char *what, const std::string *name = nullptr) const {
    return result == 0 ? Status::ok() : check(result, what + (name ? *name : std::string()));
  }
};

} // namespace quill
