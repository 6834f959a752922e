// The CUDA driver, opened with dlopen: no link-time dependency on CUDA.
#include "runtime/device/CudaProbe.h"

#include <dlfcn.h>

#include <string>

namespace quill {

Status probeCuda() {
  void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!driver) {
    const char *why = dlerror();
    return Status::error(std::string("no CUDA driver on this machine (") +
                         (why ? why : "libcuda.so.1 not found") + ")");
  }
  using InitFn = int (*)(unsigned);
  using CountFn = int (*)(int *);
  auto init = reinterpret_cast<InitFn>(dlsym(driver, "cuInit"));
  auto count = reinterpret_cast<CountFn>(dlsym(driver, "cuDeviceGetCount"));
  Status status = Status::ok();
  int devices = 0;
  if (!init || !count)
    status = Status::error("the CUDA driver lacks cuInit or cuDeviceGetCount");
  else if (int error = init(0); error != 0)
    status = Status::error("the CUDA driver does not initialize (CUresult " +
                           std::to_string(error) + "): no usable GPU");
  else if (count(&devices) != 0 || devices == 0)
    status = Status::error("the CUDA driver finds no GPU on this machine");
  dlclose(driver);
  return status;
}

} // namespace quill
