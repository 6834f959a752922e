// What a compile gathers for its HTML lowering report (--report DIR): the
// passes as they run, the module at the kernels stage, the text after the
// MLIR stages; then the page, written into DIR.
#pragma once

#include "compiler/Driver/Compiler.h"
#include "compiler/Inspect/LoweringReport.h"
#include "compiler/Target/Target.h"

#include "mlir/Pass/PassManager.h"

namespace quill {

class ReportSession {
public:
  ReportSession(const CompileOptions &options, const Target &target, std::string model);
  /// Creates the directory; an error names it.
  Status prepare();
  /// Records every pass `pm` runs.
  void instrument(mlir::PassManager &pm);
  /// After each stage's passes: marks the stage's end, and at the kernels
  /// stage reads the dispatch graph and the kernel table.
  void afterStage(mlir::OpPassManager &stagePasses, llvm::StringRef stage);
  /// Text the target produced after the MLIR stages.
  void addText(llvm::StringRef text, llvm::StringRef what);
  /// Draws the graph, lists every target's stages, probes the ceilings and
  /// writes DIR/index.html and DIR/dispatch-graph.dot.
  Status write(const ModelConfig &config);

private:
  const CompileOptions &options_;
  const Target &target_;
  PassRecorder *recorder_ = nullptr; ///< Owned by the pass manager.
  LoweringReport report_;
};

} // namespace quill
