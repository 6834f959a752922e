// Writes the IR after every pass into numbered files (--dump-ir-after-all).
#pragma once

#include "mlir/IR/Operation.h"
#include "mlir/Pass/PassInstrumentation.h"

#include <string>

namespace quill {

class IRDumper : public mlir::PassInstrumentation {
public:
  explicit IRDumper(std::string directory) : directory_(std::move(directory)) {}
  /// Writes `op` as the next numbered file, named after `what`.
  void dump(mlir::Operation *op, llvm::StringRef what);
  /// Writes text produced after MLIR (LLVM IR, assembly) as the next file.
  void dumpText(llvm::StringRef text, llvm::StringRef what, llvm::StringRef extension);
  void runAfterPass(mlir::Pass *pass, mlir::Operation *op) override;

private:
  std::string directory_;
  int counter_ = 0;
};

} // namespace quill
