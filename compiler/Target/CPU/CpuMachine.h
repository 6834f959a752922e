// The CPU target's machine: LLVM-dialect kernels -> optimized LLVM IR ->
// machine code (object file or assembly) through LLVM's TargetMachine, in
// process, for the host CPU or a named one.
#pragma once

#include "runtime/support/Error.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Target/TargetMachine.h"

#include <memory>
#include <string>

namespace quill {

struct CpuMachineOptions {
  std::string cpu; ///< Empty: the host CPU with its detected features.
};

class CpuMachine {
public:
  static ErrorOr<std::shared_ptr<CpuMachine>> create(const CpuMachineOptions &options);

  /// "cpu=NAME features=+a,+b" — stored in the artifact.
  std::string description() const;
  const std::string &cpu() const { return cpu_; }
  /// The subset of features the runtime checks before running the kernels.
  std::string requiredFeatures() const;
  /// f32 lanes of the widest vector registers the kernels may use: 16 with
  /// AVX-512, 8 with AVX or AVX2, else 4.
  int64_t vectorWidth() const;
  /// Whether the CPU has vpdpbusd on 256-bit vectors (AVX-512 VNNI with VL,
  /// or AVX-VNNI): int8 dot products.
  bool hasInt8Dot() const;
  /// Whether it has the 512-bit vpdpbusd (AVX-512 VNNI).
  bool hasInt8Dot512() const;
  /// Whether it has AVX2's byte products (vpmaddubsw, vpmaddwd): the int8
  /// products' form without vpdpbusd.
  bool hasAvx2Int8() const;
  /// Whether the CPU has vdpbf16ps (AVX512_BF16): bf16 pair products.
  bool hasBf16Dot() const;
  /// Whether vdpbf16ps multiplies faster than f32 FMAs here (AMD Zen 4
  /// and 5): bf16 matmuls then take it.
  bool bf16DotOutrunsFma() const;

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
