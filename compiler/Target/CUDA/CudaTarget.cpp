// The CUDA target: the shared stages with units split for GPU threads and
// warp reductions, then every kernel a gpu.func in a gpu.module, NVVM, and
// PTX through LLVM's NVPTX backend, in process and without a CUDA toolkit.
#include "compiler/Target/CUDA/Passes.h"
#include "compiler/Target/Target.h"

#include "compiler/Pipeline/SharedStages.h"
#include "runtime/artifact/KernelContract.h"

#include "mlir/Conversion/GPUToNVVM/GPUToNVVMPass.h"
#include "mlir/Conversion/Passes.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVMPass.h"
#include "mlir/Conversion/VectorToSCF/VectorToSCF.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/raw_ostream.h"

namespace quill {

namespace {

class CudaTarget final : public Target {
public:
  llvm::StringRef name() const override { return "cuda"; }
  llvm::StringRef summary() const override {
    return "NVIDIA GPUs through NVVM and PTX (run with quill-run --device cuda)";
  }
  const std::vector<std::string> &stages() const override {
    static const std::vector<std::string> names = {"quill", "kernels", "linalg", "loops",
                                                   "gpu",   "nvvm",    "ptx"};
    return names;
  }
  size_t numMlirStages() const override { return 7; }
  bool printsModuleAt(llvm::StringRef stage) const override { return stage != "ptx"; }
  int64_t defaultAttentionChunk(const PipelineOptions &) const override {
    // A unit is one GPU thread (or warp): short chunks give many more of
    // them (kv heads x chunks) than 256-position ones.
    return 32;
  }
  // The CUDA device runs one sequence: no batch step to compile.
  bool supportsBatchStep() const override { return false; }

  RooflineCeilings rooflineCeilings(const PipelineOptions &options) const override {
    // The machine is not here to probe: the datasheet figures of the parts
    // these architectures name (the kernels use no tensor cores, so the
    // fp32 rate of the SMs is their roof).
    llvm::StringRef arch = options.gpuArch;
    arch.consume_back("a");
    if (arch == "sm_90")
      return {3350, 66900, 0, "datasheet figures of an H100 SXM (sm_90)"};
    if (arch == "sm_80")
      return {2039, 19500, 0, "datasheet figures of an A100 SXM 80 GB (sm_80)"};
    return Target::rooflineCeilings(options);
  }

  Status checkOptions(const PipelineOptions &options) const override {
    if (options.emulateCudaKernels)
      return Status::error("--emulate-cuda-kernels compiles for the CPU; drop --target=cuda");
    if (options.rowGroupPrefetchBytes)
      return Status::error("--weight-prefetch-distance applies to --target=cpu only");
    // sm_XY or sm_XYa, as NVPTX names them.
    llvm::StringRef digits = options.gpuArch;
    bool valid = digits.consume_front("sm_");
    digits.consume_back("a");
    unsigned version = 0;
    if (!valid || digits.getAsInteger(10, version) || version < 50 || version > 200)
      return Status::error("invalid --gpu-arch '" + options.gpuArch +
                           "' (expected sm_NN, e.g. sm_80 or sm_90)");
    return Status::ok();
  }

  mlir::LogicalResult addStagePasses(mlir::OpPassManager &pm, llvm::StringRef stage,
                                     const PipelineOptions &options) const override {
    if (stage == "quill") {
      addQuillStage(pm, options, options.attentionChunk.value_or(defaultAttentionChunk(options)));
    } else if (stage == "kernels") {
      pm.addPass(mlir::quill::createCudaSplitUnits());
      addOutlineKernels(pm, options);
    } else if (stage == "linalg") {
      // A kernel call is one unit of work: one thread, or one warp whose
      // lanes share the reductions.
      if (options.warpReductions)
        pm.addPass(mlir::quill::createCudaWarpKernels());
      addNeutralLowering(pm);
      pm.addPass(mlir::quill::createSpecializeGpuUnits());
      addCleanup(pm);
    } else if (stage == "loops") {
      addLoopsStage(pm);
    } else if (stage == "gpu") {
      pm.addPass(mlir::quill::createWrapGpuKernels());
    } else if (stage == "nvvm") {
      addNVVMStage(pm, options);
    } else if (stage == "ptx") {
      mlir::GpuModuleToBinaryPassOptions binary;
      binary.compilationTarget = "isa"; // PTX text.
      pm.addPass(mlir::createGpuModuleToBinaryPass(binary));
    } else {
      return mlir::failure();
    }
    return mlir::success();
  }

  // The PTX is text by now (the ptx stage ran): each array becomes a
  // .global of the module, appended to it, which cuModuleGetGlobal finds.
  Status addKernelContracts(mlir::ModuleOp module,
                            const KernelContractTable &contracts) const override {
    std::string globals = "\n// What each kernel may be dispatched with "
                          "(Quill's runtime/artifact/KernelContract.h).\n";
    llvm::raw_string_ostream os(globals);
    auto addWords = [&](const std::string &name, const std::vector<int64_t> &words) {
      os << ".visible .global .align 8 .b64 " << name << "[" << words.size() << "] = {";
      for (size_t i = 0; i < words.size(); ++i)
        os << (i ? ", " : "") << uint64_t(words[i]); // .b64: the bits.
      os << "};\n";
    };
    for (const auto &[kernel, words] : contracts.kernels)
      addWords(kKernelContractPrefix + kernel, words);
    addWords(kModelLimitsSymbol, contracts.modelLimits);
    size_t binaries = 0;
    module->walk([&](mlir::gpu::BinaryOp binary) {
      llvm::SmallVector<mlir::Attribute> objects;
      for (mlir::Attribute attribute : binary.getObjects()) {
        auto object = mlir::cast<mlir::gpu::ObjectAttr>(attribute);
        std::string ptx = object.getObject().getValue().str() + globals;
        objects.push_back(
            mlir::gpu::ObjectAttr::get(object.getContext(), object.getTarget(), object.getFormat(),
                                       mlir::StringAttr::get(object.getContext(), ptx),
                                       object.getProperties(), object.getKernels()));
      }
      binary.setObjectsAttr(mlir::ArrayAttr::get(binary.getContext(), objects));
      ++binaries;
      return mlir::WalkResult::skip();
    });
    if (binaries != 1)
      return Status::error("internal error: " + std::to_string(binaries) +
                           " GPU binaries, expected one");
    return Status::ok();
  }

  ErrorOr<std::optional<TargetPayload>>
  finish(mlir::ModuleOp module, const PipelineOptions &options, std::optional<llvm::StringRef> emit,
         llvm::raw_ostream &out, const TextDump &) const override {
    // The PTX text of the kernels' gpu.binary; the rest of the module is
    // the schedules.
    std::string ptx;
    module->walk([&](mlir::gpu::BinaryOp binary) {
      for (mlir::Attribute object : binary.getObjects())
        ptx += mlir::cast<mlir::gpu::ObjectAttr>(object).getObject().getValue().str();
      binary.erase();
      return mlir::WalkResult::skip();
    });
    if (ptx.empty())
      return Status::error("no PTX was produced");
    if (emit) {
      out << ptx;
      return std::optional<TargetPayload>();
    }
    return std::optional<TargetPayload>(TargetPayload{SectionKind::GpuKernels,
                                                      std::vector<uint8_t>(ptx.begin(), ptx.end()),
                                                      "cuda " + options.gpuArch});
  }

private:
  /// Inside the GPU module: the units inlined into their launches, math
  /// without libdevice, vectors and strided memrefs lowered, then NVVM with
  /// bare-pointer kernel parameters; the target attached for serialization.
  static void addNVVMStage(mlir::OpPassManager &pm, const PipelineOptions &options) {
    pm.addPass(mlir::quill::createApproximateMath());
    mlir::OpPassManager &lowering = pm.nest<mlir::gpu::GPUModuleOp>();
    lowering.addPass(mlir::createInlinerPass());
    lowering.addPass(mlir::createSymbolDCEPass());
    addVectorAndLoopLowering(lowering, /*reassociateFPReductions=*/false);
    mlir::ConvertGpuOpsToNVVMOpsOptions nvvm;
    nvvm.useBarePtrCallConv = true;
    pm.nest<mlir::gpu::GPUModuleOp>().addPass(mlir::createConvertGpuOpsToNVVMOps(nvvm));
    pm.addPass(mlir::createReconcileUnrealizedCastsPass());
    mlir::GpuNVVMAttachTargetOptions attach;
    attach.chip = options.gpuArch;
    attach.optLevel = 3;
    pm.addPass(mlir::createGpuNVVMAttachTarget(attach));
  }
};

} // namespace

std::unique_ptr<Target> createCudaTarget() { return std::make_unique<CudaTarget>(); }

} // namespace quill
