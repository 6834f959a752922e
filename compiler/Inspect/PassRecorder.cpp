// The lowering's passes, diffed one by one.
#include "compiler/Inspect/PassRecorder.h"

#include "compiler/Inspect/LineDiff.h"

#include "mlir/IR/OperationSupport.h"
#include "mlir/Pass/Pass.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>

namespace quill {

std::string elidedText(mlir::Operation *op) {
  mlir::OpPrintingFlags flags;
  // As --mlir-elide-elementsattrs-if-larger=16 prints them.
  flags.elideLargeElementsAttrs(16);
  flags.elideLargeResourceString(64);
  std::string text;
  llvm::raw_string_ostream os(text);
  op->print(os, flags);
  return text;
}

namespace {

size_t lineCount(const std::string &text) {
  return size_t(std::count(text.begin(), text.end(), '\n')) +
         (!text.empty() && text.back() != '\n');
}

} // namespace

bool PassRecorder::recorded(mlir::Pass *pass, mlir::Operation *op) const {
  // Passes nested under an op (func.func(...)) are their adaptor's part.
  return !op->getParentOp() && pass->getArgument() != skip_;
}

void PassRecorder::endStage(llvm::StringRef stage) {
  for (PassRecord &record : passes_)
    if (record.stage.empty())
      record.stage = stage.str();
}

void PassRecorder::runBeforePass(mlir::Pass *pass, mlir::Operation *op) {
  if (!recorded(pass, op))
    return;
  // Nothing changes the module between two top-level passes, so the text
  // after one is the text before the next.
  if (current_.empty()) {
    current_ = elidedText(op);
    importLines_ = lineCount(current_);
  }
  started_ = std::chrono::steady_clock::now();
}

void PassRecorder::runAfterPass(mlir::Pass *pass, mlir::Operation *op) {
  if (!recorded(pass, op))
    return;
  PassRecord record;
  record.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  llvm::raw_string_ostream pipeline(record.pipeline);
  pass->printAsTextualPipeline(pipeline);
  record.description = pass->getDescription().str();
  std::string after = elidedText(op);
  record.linesBefore = lineCount(current_);
  record.linesAfter = lineCount(after);
  // Value numbers shift after any inserted op: lines that differ only in
  // them are kept, so a pass's diff shows what it changed.
  std::vector<DiffHunk> hunks =
      lineDiff(current_, after, 3, 1000, &record.minimal, LineMatch::IgnoringNames);
  std::tie(record.removed, record.added) = diffCounts(hunks);
  size_t kept = 0;
  auto keep = [&](const std::string &line) {
    if (kept == kMaxDiffLines) {
      ++record.diffLinesLeftOut;
      return;
    }
    ++kept;
    record.diff += line;
    record.diff += '\n';
  };
  for (const DiffHunk &hunk : hunks) {
    keep("@@ -" + std::to_string(hunk.beforeLine) + " +" + std::to_string(hunk.afterLine) + " @@");
    for (const DiffLine &line : hunk.lines)
      keep(line.kind + line.text.str());
  }
  current_ = std::move(after);
  passes_.push_back(std::move(record));
}

void PassRecorder::runAfterPassFailed(mlir::Pass *pass, mlir::Operation *op) {
  if (!recorded(pass, op))
    return;
  PassRecord record;
  llvm::raw_string_ostream pipeline(record.pipeline);
  pass->printAsTextualPipeline(pipeline);
  record.description = "failed: " + pass->getDescription().str();
  passes_.push_back(std::move(record));
}

} // namespace quill
