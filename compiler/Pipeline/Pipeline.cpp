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
    {Stage::Asm, "asm"}};
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

const char *stageNames() {
  return "quill|kernels|linalg|loops|llvm-dialect|llvm|asm";
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
    return "quill-outline-kernels{matvec-grain=" +
           std::to_string(options.matvecGrain) + "}";
  case Stage::Linalg:
    return "quill-lower-to-linalg,canonicalize,cse";
  case Stage::Loops:
    // Temporaries are fixed-size, so they all live on the stack: a step
    // allocates no heap memory.
    return "eliminate-empty-tensors,one-shot-bufferize,canonicalize,cse,"
           "func.func(buffer-hoisting,buffer-loop-hoisting,promote-buffers-to-stack{max-alloc-size-in-bytes=4194304 "
           "max-rank-of-allocated-memref=4}),quill-check-static-memory,"
           "quill-copies-to-linalg,convert-linalg-to-loops,canonicalize,cse";
  case Stage::LLVMDialect:
    return "convert-vector-to-scf{full-unroll=1},lower-affine,convert-scf-to-cf,"
           "expand-strided-metadata,lower-affine,"
           "convert-vector-to-llvm{reassociate-fp-reductions=1},finalize-memref-to-llvm,convert-math-to-llvm,convert-arith-to-llvm,"
           "convert-index-to-llvm,"
           "convert-func-to-llvm{use-bare-ptr-memref-call-conv=1},"
           "convert-cf-to-llvm,convert-ub-to-llvm,reconcile-unrealized-casts,"
           "quill-emit-kernel-abi,canonicalize";
  case Stage::LLVMIR:
  case Stage::Asm:
    return "";
  }
  return "";
}

mlir::LogicalResult addLoweringPasses(mlir::OpPassManager &pm, Stage last,
                                      const PipelineOptions &options) {
  for (const StageInfo &info : kStages) {
    if (info.stage > last || info.stage > Stage::LLVMDialect)
      break;
    if (mlir::failed(mlir::parsePassPipeline(stagePipeline(info.stage, options), pm,
                                             llvm::errs())))
      return mlir::failure();
  }
  return mlir::success();
}

} // namespace quill
