// A pass that hands the module, as it is at its place in the pipeline, to a
// reader (the dispatch graph, the report); it changes nothing, and the IR
// dump and the report leave it out.
#pragma once

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

#include <functional>

namespace quill {

/// The pass's argument, by which the dump and the report know it.
inline constexpr const char *kReadModulePass = "quill-read-module";

struct ReadModulePass : mlir::PassWrapper<ReadModulePass, mlir::OperationPass<mlir::ModuleOp>> {
  explicit ReadModulePass(std::function<void(mlir::ModuleOp)> read) : read(std::move(read)) {}
  llvm::StringRef getArgument() const override { return kReadModulePass; }
  llvm::StringRef getDescription() const override { return "Reads the module for inspection"; }
  void runOnOperation() override {
    read(getOperation());
    markAllAnalysesPreserved();
  }
  std::function<void(mlir::ModuleOp)> read;
};

} // namespace quill
