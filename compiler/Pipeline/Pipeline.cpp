// The lowering pipeline: quill -> kernels -> linalg -> loops -> LLVM dialect.
#include "compiler/Pipeline/Pipeline.h"

#include "mlir/Pass/PassRegistry.h"

namespace quill {

namespace {
struct StageInfo {
  Stage stage;
  const char *name;
};
constexpr StageInfo kStages[] = {
    {Stage::Quill, "quill"},   {Stage::Kernels, "kernels"},
    {Stage::Linalg, "linalg"}, {Stage::Loops, "loops"},
    {Stage::LLVMDialect, "llvm-dialect"}, {Stage::LLVMIR, "llvm"},
    {Stage::Asm, "asm"}, {Stage::Gpu, "gpu"}, {Stage::NVVM, "nvvm"}, {Stage::Ptx, "ptx"}};
} // namespace

std::optional<Stage> parseStage(llvm::StringRef name) {
  for (const StageInfo &info : kStages)
    if (name == info.name)
      return info.stage;
  return std::nullopt;
}

const char *stageName(Stage stage) {
  for (const StageInfo &info : kStages)
    if (info.stage == stage)
      return info.name;
  return "?";
}

const std::vector<Stage> &targetStages(Target target) {
  static const std::vector<Stage> cpu = {Stage::Quill,       Stage::Kernels, Stage::Linalg,
                                         Stage::Loops,       Stage::LLVMDialect,
                                         Stage::LLVMIR,      Stage::Asm};
  static const std::vector<Stage> cuda = {Stage::Quill, Stage::Kernels, Stage::Linalg,
                                          Stage::Loops, Stage::Gpu,     Stage::NVVM,
                                          Stage::Ptx};
  return target == Target::Cuda ? cuda : cpu;
}

std::string stageNames(Target target) {
  std::string names;
  for (Stage stage : targetStages(target))
    names += (names.empty() ? "" : "|") + std::string(stageName(stage));
  return names;
}

const std::vector<std::string> &fusionNames() {
  static const std::vector<std::string> names = {"gate-up", "qkv", "residual", "rmsnorm",
                                                 "rope-kv"};
  return names;
}

std::string stagePipeline(Stage stage, const PipelineOptions &options) {
  switch (stage) {
  case Stage::Quill: {
    // The import contract, the fusions (gate/up before QKV, which would
    // otherwise take the gate and up projections as siblings), then sharing
    // of repeated weight references.
    std::string pipeline = "quill-verify-step";
    for (const std::string &fusion : fusionNames())
      if (!options.disabledFusions.count(fusion))
        pipeline += ",quill-fuse-" + fusion;
    pipeline += ",quill-split-attention{chunk=" + std::to_string(options.attentionChunk) + "}";
    return pipeline + ",cse";
  }
  case Stage::Kernels:
    // On the GPU (and in its emulation) prefill attention's units are query
    // rows (kv heads are too few threads), and row-wise ops get a unit per
    // row or element instead of one for all.
    return "quill-outline-kernels{matvec-grain=" + std::to_string(options.matvecGrain) +
           (options.target == Target::Cuda || options.emulateCudaKernels
                ? " attention-rows=1 row-units=1}"
                : "}");
  case Stage::Linalg: {
    // On the GPU a kernel call is one unit of work: one thread, or one warp
    // for matrix-vector kernels (lane-reductions). Prefetching is the
    // CPU's: GPUs hide latency with threads instead.
    const bool gpuKernels = options.target == Target::Cuda || options.emulateCudaKernels;
    std::string lanes = !gpuKernels || !options.warpReductions ? "none"
                        : options.target == Target::Cuda       ? "gpu"
                                                               : "emulate";
    const bool prefetch = options.prefetchWeights && options.target == Target::Cpu;
    std::string lower = "quill-lower-to-linalg{prefetch-weights=" + std::string(prefetch ? "1" : "0") +
                        " lane-reductions=" + lanes + "}";
    if (options.target == Target::Cuda)
      return lower + ",quill-specialize-gpu-units,canonicalize,cse";
    if (options.emulateCudaKernels)
      return lower + ",quill-specialize-gpu-units{loop-units=1},canonicalize,cse";
    return lower + ",canonicalize,cse";
  }
  case Stage::Loops:
    // Temporaries are fixed-size, so they all live on the stack: a step
    // allocates no heap memory.
    return "eliminate-empty-tensors,one-shot-bufferize,canonicalize,cse,"
           "func.func(buffer-hoisting,buffer-loop-hoisting,promote-buffers-to-stack{max-alloc-size-in-bytes=4194304 "
           "max-rank-of-allocated-memref=4}),quill-check-static-memory,"
           "quill-copies-to-linalg,convert-linalg-to-loops,canonicalize,cse";
  case Stage::LLVMDialect:
    return std::string(options.emulateCudaKernels ? "quill-approximate-math{everywhere=1}," : "") +
           "convert-vector-to-scf{full-unroll=1},lower-affine,convert-scf-to-cf,"
           "expand-strided-metadata,lower-affine,"
           "convert-vector-to-llvm{reassociate-fp-reductions=1},finalize-memref-to-llvm,convert-math-to-llvm,convert-arith-to-llvm,"
           "convert-index-to-llvm,"
           "convert-func-to-llvm{use-bare-ptr-memref-call-conv=1},"
           "convert-cf-to-llvm,convert-ub-to-llvm,reconcile-unrealized-casts,"
           "quill-emit-kernel-abi,canonicalize";
  case Stage::Gpu:
    return "quill-wrap-gpu-kernels";
  case Stage::NVVM:
    // Inside the GPU module: the units inlined into their launches, math
    // without libdevice, vectors and strided memrefs lowered, then NVVM with
    // bare-pointer kernel parameters; the target attached for serialization.
    return "quill-approximate-math,"
           "gpu.module(inline,symbol-dce,convert-vector-to-scf{full-unroll=1},lower-affine,"
           "convert-scf-to-cf,expand-strided-metadata,lower-affine,convert-vector-to-llvm),"
           "gpu.module(convert-gpu-to-nvvm{use-bare-ptr-memref-call-conv=1}),"
           "reconcile-unrealized-casts,nvvm-attach-target{chip=" +
           options.gpuArch + " O=3}";
  case Stage::Ptx:
    // PTX text through LLVM's NVPTX backend, in process: no CUDA toolkit.
    return "gpu-module-to-binary{format=isa}";
  case Stage::LLVMIR:
  case Stage::Asm:
    return "";
  }
  return "";
}

mlir::LogicalResult addLoweringPasses(mlir::OpPassManager &pm, Stage last,
                                      const PipelineOptions &options) {
  for (Stage stage : targetStages(options.target)) {
    // LLVMIR and Asm are the CPU target's, outside MLIR.
    if (stage == Stage::LLVMIR || stage == Stage::Asm)
      break;
    if (mlir::failed(mlir::parsePassPipeline(stagePipeline(stage, options), pm, llvm::errs())))
      return mlir::failure();
    if (stage == last)
      break;
  }
  return mlir::success();
}

} // namespace quill
