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

std::vector<KernelCost> kernelCosts(const std::vector<KernelRow> &rows) {
  std::vector<KernelCost> costs;
  for (const KernelRow &row : rows) {
    KernelCost c;
    c.step = row.step == "prefill" ? CostStep::Prefill
             : row.step == "batch" ? CostStep::Batch
                                   : CostStep::Step;
    // A batch step's kernels run its live rows; its logits only the rows
    // that ask for them.
    if (c.step == CostStep::Batch)
      c.scaling = row.cost.op.find("logits") != std::string::npos ? RowScaling::LogitRows
                                                                  : RowScaling::LiveRows;
    c.int8Products = usesInt8Products(row.cost.weightType);
    c.flops = row.cost.flops;
    c.flopsPerPosition = row.cost.flopsPerPosition;
    c.weightBytes = double(row.cost.weightBytes);
    c.rowBytes = double(row.cost.activationBytes + row.cost.kvBytesWritten);
    c.kvBytesPerPosition = row.cost.kvBytesPerPosition;
    c.kernel = row.kernel;
    c.op = row.cost.op;
    c.weightType = row.cost.weightType;
    costs.push_back(std::move(c));
  }
  return costs;
}

} // namespace quill
