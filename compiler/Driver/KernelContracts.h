// The kernel library's statement of what each kernel may be dispatched with
// (runtime/artifact/KernelContract.h), added to the kernels' module as data.
#pragma once

#include "compiler/Driver/ScheduleExtraction.h"
#include "runtime/artifact/ModelConfig.h"

#include "mlir/IR/BuiltinOps.h"

namespace quill {

/// Adds `quill_contract_K` for every dispatched kernel K and
/// `quill_model_limits` to `module` (LLVM dialect), from the schedules the
/// compiler built (the batch layout complete). Fails when two dispatches of one kernel disagree
/// (then no single contract is true of the kernel).
Status addKernelContracts(mlir::ModuleOp module, const ExtractedSchedule &schedules,
                          const ModelConfig &config);

} // namespace quill
