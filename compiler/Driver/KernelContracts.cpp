// Kernel contracts as constant int64 arrays exported by the kernel library.
#include "compiler/Driver/KernelContracts.h"

#include "runtime/artifact/KernelContract.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"

#include <map>

namespace quill {

namespace {
void addWords(mlir::OpBuilder &b, mlir::Location loc, const std::string &name,
              const std::vector<int64_t> &words) {
  auto i64 = b.getI64Type();
  auto type = mlir::LLVM::LLVMArrayType::get(i64, words.size());
  auto value = mlir::DenseIntElementsAttr::get(
      mlir::RankedTensorType::get({int64_t(words.size())}, i64), llvm::ArrayRef<int64_t>(words));
  mlir::LLVM::GlobalOp::create(b, loc, type, /*isConstant=*/true, mlir::LLVM::Linkage::External,
                               name, value, /*alignment=*/8);
}
} // namespace

Status addKernelContracts(mlir::ModuleOp module, const ExtractedSchedule &schedules,
                          const ModelConfig &config) {
  std::map<std::string, std::vector<int64_t>> contracts;
  std::vector<const Schedule *> all = {&schedules.schedule};
  if (schedules.prefill)
    all.push_back(&*schedules.prefill);
  if (schedules.batch)
    all.push_back(&schedules.batch->schedule);
  for (const Schedule *schedule : all)
    for (const Dispatch &d : schedule->dispatches) {
      const std::string &name = schedule->kernels[d.kernel];
      std::vector<int64_t> words = kernelContractWords(d);
      auto [it, inserted] = contracts.try_emplace(name, words);
      if (!inserted && it->second != words)
        return Status::error("internal error: kernel " + name +
                             " is dispatched with different work or bindings");
    }
  mlir::OpBuilder b = mlir::OpBuilder::atBlockEnd(module.getBody());
  mlir::Location loc = module.getLoc();
  for (const auto &[name, words] : contracts)
    addWords(b, loc, kKernelContractPrefix + name, words);
  addWords(b, loc, kModelLimitsSymbol,
           modelLimitWords(config, schedules.prefill ? &*schedules.prefill : nullptr,
                           schedules.batch ? &schedules.batch->layout : nullptr));
  return Status::ok();
}

} // namespace quill
