// Registers dialects, passes and Quill's named pipelines.
#include "compiler/Pipeline/Registration.h"

#include "compiler/Conversion/Passes.h"
#include "compiler/Pipeline/Pipeline.h"
#include "compiler/Target/CPU/Passes.h"
#include "compiler/Target/CUDA/Passes.h"
#include "dialects/Quill/IR/QuillDialect.h"
#include "dialects/Quill/Transforms/Passes.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Pass/PassOptions.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"

#include <set>

namespace quill {

namespace {
/// quill-opt's spelling of PipelineOptions: --quill-pipeline-to-STAGE='...'.
struct QuillPipelineOptions : mlir::PassPipelineOptions<QuillPipelineOptions> {
  Option<std::string> target{*this, "target", llvm::cl::desc("cpu or cuda"), llvm::cl::init("cpu")};
  Option<std::string> cpu{*this, "cpu", llvm::cl::desc("CPU target: the CPU (empty: the host)")};
  Option<std::string> gpuArch{*this, "gpu-arch", llvm::cl::desc("CUDA: the SM version"),
                              llvm::cl::init("sm_90")};
  Option<int64_t> matvecGrain{*this, "matvec-grain",
                              llvm::cl::desc("Output rows per chunk of a matvec"),
                              llvm::cl::init(16)};
  ListOption<std::string> disableFusion{
      *this, "disable-fusion", llvm::cl::desc("Fusions to switch off (gate-up, qkv, ...)")};
  Option<std::string> quantize{*this, "quantize",
                               llvm::cl::desc("Weight scheme: f16, bf16, q8_0, q4_0, q4_k_m")};
  Option<bool> quantizeActivations{
      *this, "quantize-activations",
      llvm::cl::desc("Q8_0/Q4_0 products take Q8_0-rounded inputs (int8 dot products)"),
      llvm::cl::init(true)};
  Option<bool> noFusion{*this, "no-fusion", llvm::cl::desc("Switch every fusion off"),
                        llvm::cl::init(false)};
  Option<int64_t> attentionChunk{*this, "attention-chunk",
                                 llvm::cl::desc("Flash-decoding chunk (-1: the target's)"),
                                 llvm::cl::init(-1)};
  Option<bool> emulateCudaKernels{*this, "emulate-cuda-kernels",
                                  llvm::cl::desc("CPU: the CUDA target's kernel semantics"),
                                  llvm::cl::init(false)};
  Option<bool> shareWeights{*this, "share-weights",
                            llvm::cl::desc("Every step reads the one packed copy of a weight"),
                            llvm::cl::init(true)};
  Option<bool> prefetch{*this, "prefetch", llvm::cl::desc("CPU: matmuls prefetch weights"),
                        llvm::cl::init(true)};
  Option<int64_t> prefetchDistance{
      *this, "weight-prefetch-distance",
      llvm::cl::desc("CPU: bytes ahead that decode over row groups prefetches (-1: per type)"),
      llvm::cl::init(-1)};
  Option<bool> int8Dot{*this, "int8-dot",
                       llvm::cl::desc("CPU: products over Q8_0 activations as int8 dot "
                                      "products (vpdpbusd, or AVX2's vpmaddubsw)"),
                       llvm::cl::init(true)};
  Option<bool> int8MatMul{*this, "int8-matmul",
                          llvm::cl::desc("CPU: Q8_0/Q4_0 matmuls as int8 row-group tiles"),
                          llvm::cl::init(true)};
  Option<bool> attentionRowBlocks{
      *this, "attention-row-blocks",
      llvm::cl::desc("CPU: a prefill's attention takes blocks of query rows together"),
      llvm::cl::init(true)};
  Option<bool> rowGroups{*this, "row-groups",
                         llvm::cl::desc("CPU: Q8_0/Q4_0 weights of the int8 products stored "
                                        "in row groups"),
                         llvm::cl::init(true)};
  Option<bool> warpReductions{*this, "warp-reductions",
                              llvm::cl::desc("CUDA: a warp per matrix-vector output"),
                              llvm::cl::init(true)};

  /// The options as the pipeline builder takes them, or a message.
  ErrorOr<PipelineOptions> resolve() const {
    PipelineOptions options;
    options.target = target;
    options.cpu = cpu;
    options.gpuArch = gpuArch;
    if (matvecGrain <= 0)
      return Status::error("matvec-grain must be positive");
    options.matvecGrain = matvecGrain;
    const auto &known = fusionNames();
    for (const std::string &name : disableFusion) {
      if (std::find(known.begin(), known.end(), name) == known.end())
        return Status::error("unknown fusion '" + name + "'");
      options.disabledFusions.insert(name);
    }
    if (noFusion)
      options.disabledFusions.insert(known.begin(), known.end());
    const auto &schemes = quantizationSchemes();
    if (!quantize.empty() && std::find(schemes.begin(), schemes.end(), quantize) == schemes.end())
      return Status::error("unknown quantize scheme '" + quantize + "'");
    options.quantize = quantize;
    options.quantizeActivations = quantizeActivations;
    if (attentionChunk < -1)
      return Status::error("attention-chunk must not be negative");
    if (attentionChunk >= 0)
      options.attentionChunk = attentionChunk;
    options.emulateCudaKernels = emulateCudaKernels;
    options.prefetchWeights = prefetch;
    // -1: unset; any other value is the target's to check (checkOptions).
    if (prefetchDistance != -1)
      options.rowGroupPrefetchBytes = prefetchDistance;
    options.int8Dot = int8Dot;
    options.int8MatMul = int8MatMul;
    options.rowGroups = rowGroups;
    options.attentionRowBlocks = attentionRowBlocks;
    options.shareWeights = shareWeights;
    options.warpReductions = warpReductions;
    return options;
  }
};

/// Builds quill-pipeline-to-`stage` from its option string.
mlir::LogicalResult
buildStagePipeline(std::string stage, mlir::OpPassManager &pm, llvm::StringRef text,
                   llvm::function_ref<mlir::LogicalResult(const llvm::Twine &)> errorHandler) {
  std::unique_ptr<QuillPipelineOptions> parsed = QuillPipelineOptions::createFromString(text);
  if (!parsed)
    return errorHandler("quill-pipeline-to-" + stage + ": cannot parse options '" + text + "'");
  auto options = parsed->resolve();
  if (!options)
    return errorHandler("quill-pipeline-to-" + stage + ": " + options.message());
  const Target *target = lookupTarget(options->target);
  if (!target)
    return errorHandler("quill-pipeline-to-" + stage + ": unknown target '" + options->target +
                        "' (expected " + targetNames() + ")");
  std::optional<size_t> index = target->stageIndex(stage);
  if (!index || *index >= target->numMlirStages())
    return errorHandler("quill-pipeline-to-" + stage + ": target " + target->name() +
                        " has no MLIR stage '" + stage + "' (its stages: " + target->stageList() +
                        ")");
  std::string errors;
  llvm::raw_string_ostream os(errors);
  if (mlir::failed(addLoweringPasses(pm, *target, stage, *options, os)))
    return errorHandler("quill-pipeline-to-" + stage + ": " + llvm::StringRef(errors).trim());
  return mlir::success();
}
} // namespace

void registerDialects(mlir::DialectRegistry &registry) {
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  mlir::registerAllToLLVMIRTranslations(registry);
  // gpu-module-to-binary serializes through the NVVM target attribute.
  mlir::NVVM::registerNVVMTargetInterfaceExternalModels(registry);
  registry.insert<mlir::quill::QuillDialect>();
}

void loadPipelineDialects(mlir::MLIRContext &context) {
  context.loadDialect<mlir::quill::QuillDialect, mlir::func::FuncDialect, mlir::arith::ArithDialect,
                      mlir::tensor::TensorDialect>();
}

void registerPasses() {
  static bool done = false;
  if (done)
    return;
  done = true;
  mlir::registerAllPasses();
  mlir::quill::registerQuillTransformsPasses();
  mlir::quill::registerQuillConversionPasses();
  mlir::quill::registerQuillCpuTargetPasses();
  mlir::quill::registerQuillCudaTargetPasses();
  // One pipeline per MLIR stage of any target; target= picks whose.
  std::set<std::string> stages;
  for (const Target *target : allTargets())
    for (size_t i = 0; i < target->numMlirStages(); ++i)
      stages.insert(target->stages()[i]);
  for (const std::string &stage : stages) {
    std::string name = "quill-pipeline-to-" + stage;
    std::string summary = "Quill's pipeline from the imported step to the '" + stage +
                          "' stage of target= (cpu, cuda), with quill-compile's options";
    mlir::registerPassPipeline(
        name, summary,
        [stage](mlir::OpPassManager &pm, llvm::StringRef options,
                llvm::function_ref<mlir::LogicalResult(const llvm::Twine &)> errorHandler) {
          return buildStagePipeline(stage, pm, options, errorHandler);
        },
        [](llvm::function_ref<void(const mlir::detail::PassOptions &)> printOptions) {
          printOptions(QuillPipelineOptions());
        });
  }
}

} // namespace quill
