// The quill dialect's markers, through the helpers TableGen generates for
// its discardable attributes.
#include "dialects/Quill/IR/QuillMarkers.h"

#include "dialects/Quill/IR/QuillDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace mlir::quill {

namespace {
QuillDialect *dialectOf(Operation *op) {
  return op->getContext()->getOrLoadDialect<QuillDialect>();
}
} // namespace

bool isKernel(Operation *function) {
  return dialectOf(function)->getKernelAttrHelper().isAttrPresent(function);
}

void setKernel(Operation *function) {
  dialectOf(function)->getKernelAttrHelper().setAttr(function,
                                                     UnitAttr::get(function->getContext()));
}

void clearKernel(Operation *function) {
  dialectOf(function)->getKernelAttrHelper().removeAttr(function);
}

std::optional<int64_t> warpLanes(Operation *function) {
  auto helper = dialectOf(function)->getWarpLanesAttrHelper();
  if (!helper.isAttrPresent(function))
    return std::nullopt;
  return helper.getAttr(function).getInt();
}

void setWarpLanes(Operation *function, int64_t lanes) {
  dialectOf(function)->getWarpLanesAttrHelper().setAttr(
      function, OpBuilder(function).getI64IntegerAttr(lanes));
}

void clearWarpLanes(Operation *function) {
  dialectOf(function)->getWarpLanesAttrHelper().removeAttr(function);
}

void markEnclosingWarpKernel(Operation *op, int64_t lanes) {
  if (auto kernel = op->getParentOfType<func::FuncOp>())
    setWarpLanes(kernel, lanes);
}

UnitSplit unitSplit(Operation *op) {
  auto helper = dialectOf(op)->getUnitsAttrHelper();
  if (!helper.isAttrPresent(op))
    return UnitSplit::Default;
  StringRef value = helper.getAttr(op).getValue();
  if (value == "rows")
    return UnitSplit::Rows;
  if (value == "query-rows")
    return UnitSplit::QueryRows;
  return UnitSplit::Default;
}

void setUnitSplit(Operation *op, UnitSplit split) {
  auto helper = dialectOf(op)->getUnitsAttrHelper();
  if (split == UnitSplit::Default) {
    helper.removeAttr(op);
    return;
  }
  helper.setAttr(
      op, StringAttr::get(op->getContext(), split == UnitSplit::Rows ? "rows" : "query-rows"));
}

} // namespace mlir::quill
