// Whether this machine can run CUDA kernels: the driver library, loaded at
// run time (quill-run builds and runs without CUDA), and a device.
#pragma once

#include "runtime/support/Error.h"

namespace quill {

/// Ok when libcuda.so.1 loads, cuInit succeeds and at least one device is
/// present; otherwise one line saying which of these is missing.
Status probeCuda();

} // namespace quill
