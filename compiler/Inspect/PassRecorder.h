// Records what every pass of the lowering did, for the HTML report
// (quill-compile --report): its stage, its time, and the diff of the IR
// before and after it with large constants elided.
#pragma once

#include "mlir/IR/Operation.h"
#include "mlir/Pass/PassInstrumentation.h"

#include <chrono>
#include <string>
#include <vector>

namespace quill {

/// One top-level pass as it ran.
struct PassRecord {
  std::string pipeline;    ///< Its textual pipeline, options and nested passes included.
  std::string description; ///< What it does, from its registration.
  std::string stage;       ///< The stage it belongs to (empty: past the last marked).
  double seconds = 0;
  size_t linesBefore = 0, linesAfter = 0;
  size_t removed = 0, added = 0; ///< Lines of the diff.
  bool minimal = true;           ///< Else a rewrite: the differing middle given whole.
  std::string diff;              ///< Unified hunks ("@@ -a +b @@", then ' ', '-', '+' lines).
  size_t diffLinesLeftOut = 0;   ///< Lines past the cap, not kept.
};

/// A pass instrumentation that diffs the module around each top-level pass.
/// Passes named `skip` (the driver's module readers) are not recorded.
class PassRecorder : public mlir::PassInstrumentation {
public:
  explicit PassRecorder(std::string skip) : skip_(std::move(skip)) {}
  /// The passes not yet given a stage belong to `stage`.
  void endStage(llvm::StringRef stage);
  const std::vector<PassRecord> &passes() const { return passes_; }
  /// The module as the first pass received it (elided), and its lines.
  size_t importLines() const { return importLines_; }

  void runBeforePass(mlir::Pass *pass, mlir::Operation *op) override;
  void runAfterPass(mlir::Pass *pass, mlir::Operation *op) override;
  void runAfterPassFailed(mlir::Pass *pass, mlir::Operation *op) override;

  /// The most diff lines kept per pass: a lowering that rewrites every
  /// kernel would otherwise make a report of hundreds of megabytes.
  static constexpr size_t kMaxDiffLines = 800;

private:
  bool recorded(mlir::Pass *pass, mlir::Operation *op) const;
  std::string skip_;
  std::vector<PassRecord> passes_;
  std::string current_; ///< The module's text now (elided).
  size_t importLines_ = 0;
  std::chrono::steady_clock::time_point started_;
};

/// The module's text with large constants and resources elided.
std::string elidedText(mlir::Operation *op);

} // namespace quill
