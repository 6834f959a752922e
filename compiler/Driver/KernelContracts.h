// The kernel library's statement of what each kernel may be dispatched with
// (runtime/artifact/KernelContract.h), gathered from the compiled schedules;
// each target adds it to its kernels as data (Target::addKernelContracts).
#pragma once

#include "compiler/Driver/ScheduleExtraction.h"
#include "compiler/Target/Target.h"
#include "runtime/artifact/ModelConfig.h"

namespace quill {

/// The contract of every dispatched kernel and the model limits, from the
/// schedules the compiler built (the batch layout complete). Fails when two
/// dispatches of one kernel disagree (then no single contract is true of
/// the kernel).
ErrorOr<KernelContractTable> collectKernelContracts(const ExtractedSchedule &schedules,
                                                    const ModelConfig &config);

} // namespace quill
