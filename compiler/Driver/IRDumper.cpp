// Numbered IR files after each pass.
#include "compiler/Driver/IRDumper.h"

#include "compiler/Driver/ReadModulePass.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <cctype>

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

void IRDumper::dumpText(llvm::StringRef text, llvm::StringRef what, llvm::StringRef extension) {
  std::string name;
  llvm::raw_string_ostream(name) << llvm::format("%03d", counter_++) << "-" << what << "."
                                 << extension;
  std::error_code error;
  llvm::raw_fd_ostream file(directory_ + "/" + name, error);
  if (!error)
    file << text;
}

void IRDumper::runAfterPass(mlir::Pass *pass, mlir::Operation *op) {
  // A pass nested under another op (func.func(...)) is dumped once, with the
  // whole module, when its adaptor at the top level finishes.
  if (op->getParentOp() || pass->getArgument() == kReadModulePass)
    return;
  std::string pipeline;
  llvm::raw_string_ostream os(pipeline);
  pass->printAsTextualPipeline(os);
  std::string name;
  for (char c : pipeline.substr(0, pipeline.find('{')))
    name += std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' ? c : '_';
  while (!name.empty() && name.back() == '_')
    name.pop_back();
  dump(op, name);
}

} // namespace quill
