// Kernel contracts, gathered from the schedules.
#include "compiler/Driver/KernelContracts.h"

#include "runtime/artifact/KernelContract.h"

namespace quill {

ErrorOr<KernelContractTable> collectKernelContracts(const ExtractedSchedule &schedules,
                                                    const ModelConfig &config) {
  KernelContractTable table;
  std::vector<const Schedule *> all = {&schedules.schedule};
  if (schedules.prefill)
    all.push_back(&*schedules.prefill);
  if (schedules.batch)
    all.push_back(&schedules.batch->schedule);
  for (const Schedule *schedule : all)
    for (const Dispatch &d : schedule->dispatches) {
      const std::string &name = schedule->kernels[d.kernel];
      std::vector<int64_t> words = kernelContractWords(d);
      auto [it, inserted] = table.kernels.try_emplace(name, words);
      if (!inserted && it->second != words)
        return Status::error("internal error: kernel " + name +
                             " is dispatched with different work or bindings");
    }
  table.modelLimits = modelLimitWords(config, schedules.prefill ? &*schedules.prefill : nullptr,
                                      schedules.batch ? &schedules.batch->layout : nullptr);
  return table;
}

} // namespace quill
