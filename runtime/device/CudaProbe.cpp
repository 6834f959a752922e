// Whether CUDA can run here: the driver, its initialization, a device.
#include "runtime/device/CudaProbe.h"

#include "runtime/device/CudaDriver.h"

namespace quill {

Status probeCuda() {
  auto driver = CudaDriver::load();
  if (!driver)
    return driver.status();
  if (Status s = driver->check(driver->init(0), "the CUDA driver does not initialize"); !s)
    return Status::error(s.message() + " (no usable GPU)");
  int device = 0;
  if (driver->deviceGet(&device, 0) != 0)
    return Status::error("the CUDA driver finds no GPU on this machine");
  return Status::ok();
}

} // namespace quill
