// Registers dialects, passes and Quill's named pipelines.
#include "compiler/Pipeline/Registration.h"

#include "compiler/Conversion/Passes.h"
#include "compiler/Pipeline/Pipeline.h"
#include "dialects/Quill/IR/QuillDialect.h"
#include "dialects/Quill/Transforms/Passes.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"

namespace quill {

void registerDialects(mlir::DialectRegistry &registry) {
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  mlir::registerAllToLLVMIRTranslations(registry);
  // gpu-module-to-binary serializes through the NVVM target attribute.
  mlir::NVVM::registerNVVMTargetInterfaceExternalModels(registry);
  registry.insert<mlir::quill::QuillDialect>();
}

void registerPasses() {
  static bool done = false;
  if (done)
    return;
  done = true;
  mlir::registerAllPasses();
  mlir::quill::registerQuillTransformsPasses();
  mlir::quill::registerQuillConversionPasses();
  for (Stage stage : {Stage::Kernels, Stage::Linalg, Stage::Loops, Stage::LLVMDialect}) {
    std::string name = std::string("quill-pipeline-to-") + stageName(stage);
    std::string summary = std::string("Quill's pipeline from the imported step "
                                      "to the '") + stageName(stage) + "' stage";
    mlir::PassPipelineRegistration<>(
        name, summary, [stage](mlir::OpPassManager &pm) {
          (void)addLoweringPasses(pm, stage, PipelineOptions());
        });
  }
}

} // namespace quill
