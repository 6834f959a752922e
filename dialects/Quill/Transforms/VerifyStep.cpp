// quill-verify-step: checks the IR contract between the importer and the passes.
#include "dialects/Quill/IR/QuillDialect.h"
#include "dialects/Quill/Transforms/Passes.h"

namespace mlir::quill {
#define GEN_PASS_DEF_VERIFYSTEP
#include "dialects/Quill/Transforms/Passes.h.inc"
} // namespace mlir::quill

using namespace mlir;
using namespace mlir::quill;

namespace {
struct VerifyStepPass : mlir::quill::impl::VerifyStepBase<VerifyStepPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto step = module.lookupSymbol<func::FuncOp>("step");
    if (!step) {
      module.emitError("quill contract: no func.func @step in the module");
      return signalPassFailure();
    }
    FunctionType type = step.getFunctionType();
    auto index = IndexType::get(&getContext());
    if (type.getNumInputs() != 2 || type.getInput(0) != index ||
        type.getInput(1) != index || type.getNumResults() != 1 ||
        !isa<RankedTensorType>(type.getResult(0))) {
      step.emitError("quill contract: @step must be (index token, index pos) "
                     "-> tensor of logits, got ")
          << type;
      return signalPassFailure();
    }
    if (!step.getBody().hasOneBlock()) {
      step.emitError("quill contract: @step must be a single block");
      return signalPassFailure();
    }
    for (Operation &op : step.getBody().front()) {
      if (isa_and_nonnull<QuillDialect>(op.getDialect()) || isa<func::ReturnOp>(op))
        continue;
      op.emitError("quill contract: only quill ops may appear in @step, found '")
          << op.getName() << "'";
      return signalPassFailure();
    }
  }
};
} // namespace
