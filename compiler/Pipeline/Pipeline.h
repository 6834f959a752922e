// The one lowering pipeline shared by quill-compile and quill-opt: a
// target's MLIR stages, in order, up to the one asked for.
#pragma once

#include "compiler/Pipeline/PipelineOptions.h"
#include "compiler/Target/Target.h"

#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/StringRef.h"

#include <functional>

namespace quill {

/// Adds the passes taking a freshly imported module through `target`'s MLIR
/// stages up to `last` (an MLIR stage of it; past the MLIR stages: all of
/// them). Fails with a message on `errors` for a stage the target lacks.
/// `afterStage`, when given, may add passes after each stage's (to read
/// the module there).
mlir::LogicalResult addLoweringPasses(
    mlir::OpPassManager &pm, const Target &target, llvm::StringRef last,
    const PipelineOptions &options, llvm::raw_ostream &errors,
    const std::function<void(mlir::OpPassManager &, llvm::StringRef)> &afterStage = {});

} // namespace quill
