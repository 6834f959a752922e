// The CPU target: LLVM-dialect kernels -> optimized LLVM IR -> host machine
// code (object file or assembly) through LLVM's TargetMachine, in process.
#pragma once

#include "runtime/support/Error.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Target/TargetMachine.h"

#include <memory>
#include <string>

namespace quill {

struct CpuTargetOptions {
  std::string cpu; ///< Empty: the host CPU with its detected features.
};

class CpuTarget {
public:
  static ErrorOr<std::shared_ptr<CpuTarget>> create(const CpuTargetOptions &options);

  /// "cpu=NAME features=+a,+b" — stored in the artifact.
  std::string description() const;
  const std::string &cpu() const { return cpu_; }
  /// The subset of features the runtime checks before running the kernels.
  std::string requiredFeatures() const;

  /// Translates a module in the LLVM dialect to LLVM IR for this target and
  /// runs LLVM's O3 pipeline on it.
  ErrorOr<std::unique_ptr<llvm::Module>> translate(mlir::ModuleOp module,
                                                   llvm::LLVMContext &context);
  /// Machine code for `module`: an ELF object, or assembly text.
  ErrorOr<std::string> emit(llvm::Module &module, bool assembly);

private:
  std::unique_ptr<llvm::TargetMachine> machine_;
  std::string cpu_, features_;
};

/// Links an ELF object into a shared object with ld.lld (an external linker
/// is the one subprocess the compiler runs).
ErrorOr<std::vector<uint8_t>> linkSharedObject(const std::string &object);

} // namespace quill
