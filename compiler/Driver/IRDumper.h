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
  void runAfterPass(mlir::Pass *pass, mlir::Operation *op) override;

private:
  std::string directory_;
  int counter_ = 0;
};

} // namespace quill
