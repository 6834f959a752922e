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
    auto index = IndexType::get(&getContext());
    if (failed(verifyFunction(step, [&](Type t) { return t == index; }, "index token")))
      return signalPassFailure();
    if (auto prefill = module.lookupSymbol<func::FuncOp>("prefill"))
      if (failed(verifyFunction(
              prefill,
              [](Type t) {
                auto tensor = dyn_cast<RankedTensorType>(t);
                return tensor && tensor.getRank() == 1 && tensor.hasStaticShape() &&
                       tensor.getElementType().isInteger(32);
              },
              "tensor<Txi32> tokens")))
        return signalPassFailure();
    if (auto batch = module.lookupSymbol<func::FuncOp>("batch"))
      if (failed(verifyBatch(batch)))
        return signalPassFailure();
  }

  /// A step: (tokens, index pos) -> logits tensor, one block of quill ops.
  LogicalResult verifyFunction(func::FuncOp function, function_ref<bool(Type)> isTokens,
                               StringRef tokens) {
    FunctionType type = function.getFunctionType();
    auto index = IndexType::get(&getContext());
    if (type.getNumInputs() != 2 || !isTokens(type.getInput(0)) || type.getInput(1) != index ||
        type.getNumResults() != 1 || !isa<RankedTensorType>(type.getResult(0)))
      return function.emitError("quill contract: @")
             << function.getName() << " must be (" << tokens
             << ", index pos) -> tensor of logits, got " << type;
    return verifyBody(function);
  }

  /// The batch step: (tensor<Rxi32> tokens, tensor<Rxi32> positions,
  /// tensor<RxMBxi32> block tables, index rows, index logit rows) ->
  /// tensor<RxVOCAB> logits.
  LogicalResult verifyBatch(func::FuncOp function) {
    FunctionType type = function.getFunctionType();
    auto index = IndexType::get(&getContext());
    auto ints = [&](unsigned i, int64_t rank) {
      auto tensor = dyn_cast<RankedTensorType>(type.getInput(i));
      return tensor && tensor.getRank() == rank && tensor.hasStaticShape() &&
             tensor.getElementType().isInteger(32);
    };
    auto result = type.getNumResults() == 1 ? dyn_cast<RankedTensorType>(type.getResult(0))
                                            : RankedTensorType();
    if (type.getNumInputs() != 5 || !ints(0, 1) || !ints(1, 1) || !ints(2, 2) ||
        type.getInput(3) != index || type.getInput(4) != index || !result || result.getRank() != 2)
      return function.emitError("quill contract: @batch must be (tensor<Rxi32> tokens, "
                                "tensor<Rxi32> positions, tensor<RxMBxi32> tables, index rows, "
                                "index logit_rows) -> tensor<RxVOCABxf32>, got ")
             << type;
    return verifyBody(function);
  }

  /// One block of quill ops.
  LogicalResult verifyBody(func::FuncOp function) {
    if (!function.getBody().hasOneBlock())
      return function.emitError("quill contract: @")
             << function.getName() << " must be a single block";
    for (Operation &op : function.getBody().front()) {
      if (isa_and_nonnull<QuillDialect>(op.getDialect()) || isa<func::ReturnOp>(op))
        continue;
      return op.emitError("quill contract: only quill ops may appear in @")
             << function.getName() << ", found '" << op.getName() << "'";
    }
    return success();
  }
};
} // namespace
