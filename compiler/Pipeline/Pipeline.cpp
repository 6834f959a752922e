// The lowering pipeline: a target's MLIR stages in order.
#include "compiler/Pipeline/Pipeline.h"

namespace quill {

mlir::LogicalResult
addLoweringPasses(mlir::OpPassManager &pm, const Target &target, llvm::StringRef last,
                  const PipelineOptions &options, llvm::raw_ostream &errors,
                  const std::function<void(mlir::OpPassManager &, llvm::StringRef)> &afterStage) {
  std::optional<size_t> lastIndex = target.stageIndex(last);
  if (!lastIndex) {
    errors << "unknown stage '" << last << "' for target " << target.name() << " (expected "
           << target.stageList() << ")\n";
    return mlir::failure();
  }
  if (Status status = target.checkOptions(options); !status) {
    errors << status.message() << "\n";
    return mlir::failure();
  }
  const size_t end = std::min(*lastIndex + 1, target.numMlirStages());
  for (size_t i = 0; i < end; ++i) {
    if (mlir::failed(target.addStagePasses(pm, target.stages()[i], options))) {
      errors << "cannot build the passes of stage '" << target.stages()[i] << "'\n";
      return mlir::failure();
    }
    if (afterStage)
      afterStage(pm, target.stages()[i]);
  }
  return mlir::success();
}

} // namespace quill
