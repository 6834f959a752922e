// The CPU target: the shared stages with the CPU's microkernels, then the
// LLVM dialect, LLVM IR and host machine code, linked into a shared object.
// With --emulate-cuda-kernels it borrows the CUDA target's kernel passes so
// that the GPU's kernel semantics run (and are tested) on the CPU.
#include "compiler/Target/CPU/CpuKernelBuilder.h"
#include "compiler/Target/CPU/CpuMachine.h"
#include "compiler/Target/CPU/Passes.h"
#include "compiler/Target/CUDA/Passes.h"
#include "compiler/Target/Target.h"

#include "compiler/Pipeline/SharedStages.h"

#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVMPass.h"
#include "mlir/Conversion/IndexToLLVM/IndexToLLVM.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/Passes.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Conversion/UBToLLVM/UBToLLVM.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVMPass.h"
#include "mlir/Conversion/VectorToSCF/VectorToSCF.h"
#include "runtime/artifact/KernelContract.h"
#include "runtime/bench/MachineProbes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/TargetParser/Host.h"

#include <optional>

namespace quill {

namespace {

/// Whether the products over Q8_0 activations run as int8 dot products:
/// vpdpbusd, or AVX2's byte products where it is missing.
bool hasInt8Products(const CpuMachine &machine) {
  return machine.hasInt8Dot() || machine.hasAvx2Int8();
}

class CpuTarget final : public Target {
public:
  llvm::StringRef name() const override { return "cpu"; }
  llvm::StringRef summary() const override {
    return "the host CPU (or --cpu NAME): a shared object of AVX-512/AVX2 kernels";
  }
  RooflineCeilings rooflineCeilings(const PipelineOptions &options) const override {
    // Compiled for this machine: its own ceilings, probed now.
    if (!options.cpu.empty() && options.cpu != llvm::sys::getHostCPUName())
      return Target::rooflineCeilings(options);
    tbb::task_arena arena;
    return {measureReadBandwidth(arena, 3), measureFmaPeak(arena, 3), measureInt8DotPeak(arena, 3),
            "probed on this machine at compile time, " + std::to_string(arena.max_concurrency()) +
                " threads"};
  }

  const std::vector<std::string> &stages() const override {
    static const std::vector<std::string> names = {"quill",        "kernels", "linalg", "loops",
                                                   "llvm-dialect", "llvm",    "asm"};
    return names;
  }
  size_t numMlirStages() const override { return 5; }
  int64_t defaultAttentionChunk(const PipelineOptions &options) const override {
    // Emulated GPU units are threads: short chunks give many of them.
    return options.emulateCudaKernels ? 32 : 256;
  }
  bool supportsBatchStep() const override { return true; }

  Status checkOptions(const PipelineOptions &options) const override {
    if (!options.warpReductions && !options.emulateCudaKernels)
      return Status::error("--no-warp-reductions applies to --target=cuda and "
                           "--emulate-cuda-kernels only");
    if (std::optional<int64_t> distance = options.rowGroupPrefetchBytes) {
      if (!options.prefetchWeights)
        return Status::error("--weight-prefetch-distance and --no-prefetch exclude each other");
      if (*distance < 0 || *distance > (1 << 20) || *distance % 64 != 0)
        return Status::error("--weight-prefetch-distance must be a multiple of 64 from 0 to "
                             "1048576 bytes");
    }
    auto machine = CpuMachine::create({options.cpu}); // An unknown --cpu.
    return machine ? Status::ok() : machine.status();
  }

  mlir::LogicalResult addStagePasses(mlir::OpPassManager &pm, llvm::StringRef stage,
                                     const PipelineOptions &options) const override {
    const bool emulate = options.emulateCudaKernels;
    if (stage == "quill") {
      addQuillStage(pm, options, options.attentionChunk.value_or(defaultAttentionChunk(options)));
    } else if (stage == "kernels") {
      if (emulate)
        pm.addPass(mlir::quill::createCudaSplitUnits());
      if (auto machine = CpuMachine::create({options.cpu});
          !emulate && machine && options.int8Dot && hasInt8Products(**machine) &&
          options.int8MatMul && options.rowGroups) {
        mlir::quill::CpuGroupWeightRowsOptions groups;
        groups.lanes =
            mlir::quill::int8GroupLanes((*machine)->hasInt8Dot512(), (*machine)->vectorWidth());
        pm.addPass(mlir::quill::createCpuGroupWeightRows(groups));
      }
      addOutlineKernels(pm, options);
    } else if (stage == "linalg") {
      if (emulate) {
        // The GPU's kernels, one unit per call, on one CPU thread each.
        if (options.warpReductions) {
          mlir::quill::CudaWarpKernelsOptions warps;
          warps.lanes = "emulate";
          pm.addPass(mlir::quill::createCudaWarpKernels(warps));
        }
        addNeutralLowering(pm);
        mlir::quill::SpecializeGpuUnitsOptions units;
        units.loopUnits = true;
        pm.addPass(mlir::quill::createSpecializeGpuUnits(units));
      } else {
        auto machine = CpuMachine::create({options.cpu}); // checkOptions reports a bad one.
        if (!machine)
          return mlir::failure();
        mlir::quill::CpuLowerKernelsOptions kernels;
        kernels.vectorWidth = (*machine)->vectorWidth();
        kernels.prefetchWeights = options.prefetchWeights;
        kernels.rowGroupPrefetchBytes = options.rowGroupPrefetchBytes.value_or(-1);
        kernels.int8Dot = options.int8Dot && hasInt8Products(**machine);
        kernels.int8Vnni = (*machine)->hasInt8Dot();
        kernels.int8Dot512 = (*machine)->hasInt8Dot512();
        kernels.int8MatMul = options.int8MatMul;
        kernels.bf16Dot = (*machine)->bf16DotOutrunsFma();
        kernels.attentionRowBlocks = options.attentionRowBlocks;
        pm.addPass(mlir::quill::createCpuLowerKernels(kernels));
        addNeutralLowering(pm);
      }
      addCleanup(pm);
    } else if (stage == "loops") {
      addLoopsStage(pm);
    } else if (stage == "llvm-dialect") {
      auto machine = CpuMachine::create({options.cpu});
      if (!machine)
        return mlir::failure();
      addLLVMDialectStage(pm, emulate, /*expandBf16=*/!(*machine)->hasBf16Dot());
    } else {
      return mlir::failure();
    }
    return mlir::success();
  }

  // The shared object exports each array as a constant symbol.
  Status addKernelContracts(mlir::ModuleOp module,
                            const KernelContractTable &contracts) const override {
    mlir::OpBuilder b = mlir::OpBuilder::atBlockEnd(module.getBody());
    auto addWords = [&](const std::string &name, const std::vector<int64_t> &words) {
      auto i64 = b.getI64Type();
      auto type = mlir::LLVM::LLVMArrayType::get(i64, words.size());
      auto value =
          mlir::DenseIntElementsAttr::get(mlir::RankedTensorType::get({int64_t(words.size())}, i64),
                                          llvm::ArrayRef<int64_t>(words));
      mlir::LLVM::GlobalOp::create(b, module.getLoc(), type, /*isConstant=*/true,
                                   mlir::LLVM::Linkage::External, name, value, /*alignment=*/8);
    };
    for (const auto &[kernel, words] : contracts.kernels)
      addWords(kKernelContractPrefix + kernel, words);
    addWords(kModelLimitsSymbol, contracts.modelLimits);
    return Status::ok();
  }

  ErrorOr<std::optional<TargetPayload>>
  finish(mlir::ModuleOp module, const PipelineOptions &options, std::optional<llvm::StringRef> emit,
         llvm::raw_ostream &out, const TextDump &dump) const override {
    auto machine = CpuMachine::create({options.cpu});
    if (!machine)
      return machine.status();
    llvm::LLVMContext llvmContext;
    auto llvmModule = (*machine)->translate(module, llvmContext);
    if (!llvmModule)
      return llvmModule.status();
    if (dump) {
      std::string text;
      llvm::raw_string_ostream os(text);
      (*llvmModule)->print(os, nullptr);
      dump(text, "llvm-ir-optimized", "ll");
      if (auto assembly = (*machine)->emit(**llvmModule, /*assembly=*/true))
        dump(*assembly, "assembly", "s");
    }
    if (emit == llvm::StringRef("llvm")) {
      (*llvmModule)->print(out, nullptr);
      return std::optional<TargetPayload>();
    }
    auto code = (*machine)->emit(**llvmModule, /*assembly=*/emit == llvm::StringRef("asm"));
    if (!code)
      return code.status();
    if (emit) {
      out << *code;
      return std::optional<TargetPayload>();
    }
    auto library = linkSharedObject(*code);
    if (!library)
      return library.status();
    return std::optional<TargetPayload>(
        TargetPayload{SectionKind::KernelLibrary, library.take(), (*machine)->description()});
  }

private:
  /// Vectors unrolled to scalars and LLVM vectors, loops to branches, and
  /// everything to the LLVM dialect; kernels then get the runtime's ABI.
  /// `expandBf16`: the CPU has no bf16 conversions, which LLVM would then
  /// call a runtime library for.
  static void addLLVMDialectStage(mlir::OpPassManager &pm, bool emulate, bool expandBf16) {
    if (emulate) {
      mlir::quill::ApproximateMathOptions approximate;
      approximate.everywhere = true;
      pm.addPass(mlir::quill::createApproximateMath(approximate));
    }
    addVectorAndLoopLowering(pm, /*reassociateFPReductions=*/true);
    pm.addPass(mlir::createFinalizeMemRefToLLVMConversionPass());
    pm.addPass(mlir::createConvertMathToLLVMPass());
    if (expandBf16)
      pm.addPass(mlir::quill::createCpuExpandBf16Rounding());
    pm.addPass(mlir::createArithToLLVMConversionPass());
    pm.addPass(mlir::createConvertIndexToLLVMPass());
    mlir::ConvertFuncToLLVMPassOptions functions;
    functions.useBarePtrCallConv = true;
    pm.addPass(mlir::createConvertFuncToLLVMPass(functions));
    pm.addPass(mlir::createConvertControlFlowToLLVMPass());
    pm.addPass(mlir::createUBToLLVMConversionPass());
    pm.addPass(mlir::createReconcileUnrealizedCastsPass());
    pm.addPass(mlir::quill::createEmitKernelABI());
    pm.addPass(mlir::createCanonicalizerPass());
  }
};

} // namespace

std::unique_ptr<Target> createCpuTarget() { return std::make_unique<CpuTarget>(); }

} // namespace quill
