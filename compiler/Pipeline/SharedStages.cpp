// The stages every target shares (see SharedStages.h).
#include "compiler/Pipeline/SharedStages.h"

#include "compiler/Conversion/Passes.h"
#include "dialects/Quill/Transforms/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVMPass.h"
#include "mlir/Conversion/VectorToSCF/VectorToSCF.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Transforms/Passes.h"

#include <functional>
#include <memory>
#include <utility>

namespace quill {

const std::vector<std::string> &fusionNames() {
  static const std::vector<std::string> names = {"gate-up", "qkv", "residual", "rmsnorm",
                                                 "rope-kv"};
  return names;
}

const std::vector<std::string> &quantizationSchemes() {
  static const std::vector<std::string> names = {"f16", "bf16", "q8_0", "q4_0", "q4_k_m"};
  return names;
}

void addQuillStage(mlir::OpPassManager &pm, const PipelineOptions &options,
                   int64_t attentionChunk) {
  using Create = std::unique_ptr<mlir::Pass> (*)();
  static const std::pair<const char *, Create> fusions[] = {
      {"gate-up", mlir::quill::createFuseGateUp},
      {"qkv", mlir::quill::createFuseQKV},
      {"residual", mlir::quill::createFuseResidual},
      {"rmsnorm", mlir::quill::createFuseRMSNorm},
      {"rope-kv", mlir::quill::createFuseRopeKV}};
  pm.addPass(mlir::quill::createVerifyStep());
  if (!options.quantize.empty()) {
    mlir::quill::QuantizeWeightsOptions quantize;
    quantize.scheme = options.quantize;
    pm.addPass(mlir::quill::createQuantizeWeights(quantize));
  }
  for (const auto &[name, create] : fusions)
    if (!options.disabledFusions.count(name))
      pm.addPass(create());
  if (options.shareWeights)
    pm.addPass(mlir::quill::createShareWeightPacks());
  if (options.quantizeActivations)
    pm.addPass(mlir::quill::createQuantizeActivations());
  mlir::quill::SplitAttentionOptions split;
  split.chunk = attentionChunk;
  pm.addPass(mlir::quill::createSplitAttention(split));
  pm.addPass(mlir::createCSEPass());
}

void addOutlineKernels(mlir::OpPassManager &pm, const PipelineOptions &options) {
  mlir::quill::OutlineKernelsOptions outline;
  outline.matvecGrain = options.matvecGrain;
  pm.addPass(mlir::quill::createOutlineKernels(outline));
}

void addNeutralLowering(mlir::OpPassManager &pm) { pm.addPass(mlir::quill::createLowerToLinalg()); }

void addCleanup(mlir::OpPassManager &pm) {
  pm.addPass(mlir::createCanonicalizerPass());
  pm.addPass(mlir::createCSEPass());
}

void addLoopsStage(mlir::OpPassManager &pm) {
  namespace bufferization = mlir::bufferization;
  pm.addPass(bufferization::createEmptyTensorEliminationPass());
  pm.addPass(bufferization::createOneShotBufferizePass());
  addCleanup(pm);
  mlir::OpPassManager &functions = pm.nest<mlir::func::FuncOp>();
  functions.addPass(bufferization::createBufferHoistingPass());
  functions.addPass(bufferization::createBufferLoopHoistingPass());
  // Temporaries are fixed-size, so they all live on the stack.
  bufferization::PromoteBuffersToStackPassOptions stack;
  stack.maxAllocSizeInBytes = kMaxKernelTemporaryBytes;
  stack.maxRankOfAllocatedMemRef = 4;
  functions.addPass(bufferization::createPromoteBuffersToStackPass(stack));
  pm.addPass(mlir::quill::createCheckStaticMemory());
  pm.addPass(mlir::quill::createCopiesToLinalg());
  pm.addPass(mlir::createConvertLinalgToLoopsPass());
  addCleanup(pm);
}

void addVectorAndLoopLowering(mlir::OpPassManager &pm, bool reassociateFPReductions) {
  pm.addPass(mlir::createConvertVectorToSCFPass(
      mlir::VectorTransferToSCFOptions().enableFullUnroll(true)));
  pm.addPass(mlir::createLowerAffinePass());
  pm.addPass(mlir::createSCFToControlFlowPass());
  pm.addPass(mlir::memref::createExpandStridedMetadataPass());
  pm.addPass(mlir::createLowerAffinePass());
  mlir::ConvertVectorToLLVMPassOptions vectors;
  vectors.reassociateFPReductions = reassociateFPReductions;
  pm.addPass(mlir::createConvertVectorToLLVMPass(vectors));
}

} // namespace quill
