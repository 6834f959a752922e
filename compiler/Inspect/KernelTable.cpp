// Kernels per step, from the schedules' dispatches.
#include "compiler/Inspect/KernelTable.h"

#include "dialects/Quill/IR/QuillDialect.h"

#include <map>

namespace quill {

std::vector<KernelRow> kernelTable(mlir::ModuleOp module) {
  namespace q = mlir::quill;
  std::vector<KernelRow> rows;
  for (auto schedule : module.getOps<q::ScheduleOp>()) {
    std::map<std::string, size_t> index;
    for (auto dispatch : schedule.getBody().getOps<q::DispatchOp>()) {
      const std::string kernel = dispatch.getKernel().str();
      auto [it, fresh] = index.try_emplace(kernel, rows.size());
      if (fresh) {
        auto function = module.lookupSymbol<mlir::func::FuncOp>(dispatch.getKernel());
        rows.push_back({schedule.getName().str(), kernel,
                        function ? dispatchCost(dispatch, function) : DispatchCost{}, 0});
      }
      ++rows[it->second].launches;
    }
  }
  return rows;
}

bool usesInt8Products(const std::string &weightType) {
  return weightType == "q8_0" || weightType == "q4_0" || weightType == "q4_k" ||
         weightType == "q6_k";
}

} // namespace quill
