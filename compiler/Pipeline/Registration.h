// Registers everything a Quill tool needs from MLIR: dialects, passes, and
// the named pipelines.
#pragma once

namespace mlir {
class DialectRegistry;
class MLIRContext;
} // namespace mlir

namespace quill {

/// The quill dialect plus every upstream dialect and interface model.
void registerDialects(mlir::DialectRegistry &registry);

/// Loads the dialects an imported step is built of (quill, func, arith,
/// tensor); every pass loads the ones it creates (its dependent dialects).
void loadPipelineDialects(mlir::MLIRContext &context);

/// Every upstream pass, every quill pass, and the pipelines
/// `quill-pipeline-to-<stage>` (one per stage) for replay in quill-opt.
void registerPasses();

} // namespace quill
