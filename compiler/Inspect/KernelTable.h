// Every step's kernels with their work, for the report's kernel table and
// roofline (quill-compile --report).
#pragma once

#include "compiler/Inspect/DispatchCost.h"
#include "runtime/artifact/KernelCosts.h"

#include "mlir/IR/BuiltinOps.h"

#include <string>
#include <vector>

namespace quill {

/// One kernel of one step: what a launch costs and how often it runs.
struct KernelRow {
  std::string step;     ///< The schedule ("step", "prefill", "batch").
  std::string kernel;   ///< Its symbol.
  DispatchCost cost;    ///< Of one launch.
  int64_t launches = 0; ///< Per run of the step.
};

/// The kernels of every schedule of `module` (at the "kernels" stage), in
/// the order each step first launches them.
std::vector<KernelRow> kernelTable(mlir::ModuleOp module);

/// Whether products over `weightType` run as int8 dot products on the CPU
/// (block-quantized weights with quantized activations), so that their
/// ceiling is the int8 peak.
bool usesInt8Products(const std::string &weightType);

/// The table as the artifact's KernelCosts section holds it, for the
/// runtime's measured roofline (quill-run --profile --report).
std::vector<KernelCost> kernelCosts(const std::vector<KernelRow> &rows);

} // namespace quill
