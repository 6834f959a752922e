// Numbered IR files after each pass.
#include "compiler/Driver/IRDumper.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

namespace quill {

void IRDumper::dump(mlir::Operation *op, llvm::StringRef what) {
  // Nested passes run on functions; the whole module is what a reader wants.
  while (op->getParentOp())
    op = op->getParentOp();
  std::string name;
  llvm::raw_string_ostream(name) << llvm::format("%03d", counter_++) << "-" << what << ".mlir";
  std::error_code error;
  llvm::raw_fd_ostream file(directory_ + "/" + name, error);
  if (error)
    return;
  op->print(file);
}

void IRDumper::runAfterPass(mlir::Pass *pass, mlir::Operation *op) {
  dump(op, pass->getArgument().empty() ? pass->getName() : pass->getArgument());
}

} // namespace quill
