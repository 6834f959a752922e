// The target-neutral KernelBuilder: every reduction a linalg.generic.
#include "compiler/Conversion/QuillToLinalg/KernelBuilder.h"
#include "compiler/Conversion/QuillToLinalg/LinalgBuilders.h"

#include "mlir/Dialect/Arith/Utils/Utils.h"

namespace mlir::quill {

KernelBuilder::~KernelBuilder() = default;

Value KernelBuilder::matVecRows(OpBuilder &b, Location loc, Value weight, Value input,
                                OpFoldResult firstRow, OpFoldResult rows, Value init) const {
  return rowByRowMatVec(b, loc, sliceRows(b, loc, weight, firstRow, rows), input, rows, init);
}

Value KernelBuilder::matMulRows(OpBuilder &b, Location loc, Value weight, Value input,
                                OpFoldResult firstRow, OpFoldResult rows, Value liveRows,
                                Value init) const {
  Value rowsOfWeight = sliceRows(b, loc, weight, firstRow, rows);
  if (!liveRows)
    return rowByRowMatMul(b, loc, rowsOfWeight, input, init);
  // Over the live rows only: a batch of one must not pay for 64.
  const int64_t tokens = cast<RankedTensorType>(input.getType()).getDimSize(0);
  const int64_t width = cast<RankedTensorType>(input.getType()).getDimSize(1);
  OpFoldResult live =
      arith::MinUIOp::create(b, loc, liveRows, arith::ConstantIndexOp::create(b, loc, tokens))
          .getResult();
  SmallVector<OpFoldResult> zeros = {b.getIndexAttr(0), b.getIndexAttr(0)};
  SmallVector<OpFoldResult> ones = {b.getIndexAttr(1), b.getIndexAttr(1)};
  // Filled first: the dead rows get zeros, and the output stays the
  // kernel's destination (an empty tensor sliced directly would not).
  Value out =
      linalg::FillOp::create(b, loc, ValueRange{f32Constant(b, loc, 0.0f)}, ValueRange{init})
          ->getResult(0);
  Value liveInput = tensor::ExtractSliceOp::create(
      b, loc, input, zeros, ArrayRef<OpFoldResult>{live, b.getIndexAttr(width)}, ones);
  SmallVector<OpFoldResult> outSizes = {live, rows};
  Value liveOut = tensor::ExtractSliceOp::create(b, loc, out, zeros, outSizes, ones);
  Value part = rowByRowMatMul(b, loc, rowsOfWeight, liveInput, liveOut);
  return tensor::InsertSliceOp::create(b, loc, part, out, zeros, outSizes, ones);
}

Value KernelBuilder::rmsScales(OpBuilder &b, Location loc, Value input, float eps) const {
  return buildRmsScales(b, loc, input, eps);
}

Value KernelBuilder::attentionScores(OpBuilder &b, Location loc, Value query, Value keys,
                                     Value init) const {
  return attentionScoresGeneric(b, loc, query, keys, init);
}

Value KernelBuilder::attentionWeightedSum(OpBuilder &b, Location loc, Value probs, Value values,
                                          Value init) const {
  return attentionWeightedSumGeneric(b, loc, probs, values, init);
}

std::shared_ptr<const KernelBuilder> genericKernelBuilder() {
  static const auto builder = std::make_shared<const KernelBuilder>();
  return builder;
}

} // namespace mlir::quill
