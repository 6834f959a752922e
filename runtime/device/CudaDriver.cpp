// Binding the CUDA driver API at run time.
#include "runtime/device/CudaDriver.h"

#include <cstdlib>
#include <dlfcn.h>

namespace quill {

ErrorOr<CudaDriver> CudaDriver::load() {
  // QUILL_CUDA_DRIVER names another driver library: a non-standard install,
  // or the tests' stand-in driver.
  const char *chosen = std::getenv("QUILL_CUDA_DRIVER");
  const char *path = chosen && *chosen ? chosen : "libcuda.so.1";
  void *library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    const char *why = dlerror();
    return Status::error(std::string("no CUDA driver on this machine (") +
                         (why ? why : std::string(path) + " not found") + ")");
  }
  CudaDriver d;
  std::string missing;
  auto bind = [&](auto &function, const char *name) {
    function = reinterpret_cast<std::remove_reference_t<decltype(function)>>(dlsym(library, name));
    if (!function)
      missing += std::string(missing.empty() ? "" : ", ") + name;
  };
  bind(d.init, "cuInit");
  bind(d.deviceGet, "cuDeviceGet");
  bind(d.deviceGetName, "cuDeviceGetName");
  bind(d.primaryCtxRetain, "cuDevicePrimaryCtxRetain");
  bind(d.primaryCtxRelease, "cuDevicePrimaryCtxRelease_v2");
  bind(d.ctxSetCurrent, "cuCtxSetCurrent");
  bind(d.ctxSynchronize, "cuCtxSynchronize");
  bind(d.moduleLoadData, "cuModuleLoadData");
  bind(d.moduleUnload, "cuModuleUnload");
  bind(d.moduleGetFunction, "cuModuleGetFunction");
  bind(d.moduleGetGlobal, "cuModuleGetGlobal_v2");
  bind(d.funcGetAttribute, "cuFuncGetAttribute");
  bind(d.memAlloc, "cuMemAlloc_v2");
  bind(d.memFree, "cuMemFree_v2");
  bind(d.memcpyHtoD, "cuMemcpyHtoD_v2");
  bind(d.memcpyDtoH, "cuMemcpyDtoH_v2");
  bind(d.memcpyDtoD, "cuMemcpyDtoD_v2");
  bind(d.memsetD8, "cuMemsetD8_v2");
  bind(d.launchKernel, "cuLaunchKernel");
  bind(d.getErrorString, "cuGetErrorString");
  bind(d.streamCreate, "cuStreamCreate");
  bind(d.streamDestroy, "cuStreamDestroy_v2");
  bind(d.streamSynchronize, "cuStreamSynchronize");
  bind(d.memcpyHtoDAsync, "cuMemcpyHtoDAsync_v2");
  bind(d.streamBeginCapture, "cuStreamBeginCapture_v2");
  bind(d.streamEndCapture, "cuStreamEndCapture");
  bind(d.graphInstantiate, "cuGraphInstantiateWithFlags");
  bind(d.graphLaunch, "cuGraphLaunch");
  bind(d.graphDestroy, "cuGraphDestroy");
  bind(d.graphExecDestroy, "cuGraphExecDestroy");
  bind(d.eventCreate, "cuEventCreate");
  bind(d.eventRecord, "cuEventRecord");
  bind(d.eventElapsedTime, "cuEventElapsedTime");
  bind(d.eventDestroy, "cuEventDestroy_v2");
  if (!missing.empty())
    return Status::error("the CUDA driver lacks " + missing);
  return d;
}

Status CudaDriver::check(Result result, const std::string &what) const {
  if (result == 0)
    return Status::ok();
  const char *message = nullptr;
  if (getErrorString)
    getErrorString(result, &message);
  return Status::error(what + ": " + (message ? message : "CUDA error " + std::to_string(result)));
}

} // namespace quill
