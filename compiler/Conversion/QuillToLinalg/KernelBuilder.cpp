// The target-neutral KernelBuilder: every reduction a linalg.generic.
#include "compiler/Conversion/QuillToLinalg/KernelBuilder.h"
#include "compiler/Conversion/QuillToLinalg/ActivationQuantization.h"
#include "compiler/Conversion/QuillToLinalg/LinalgBuilders.h"
#include "compiler/Conversion/QuillToLinalg/WeightDecoding.h"

#include "mlir/Dialect/Arith/Utils/Utils.h"

namespace mlir::quill {

KernelBuilder::~KernelBuilder() = default;

Value KernelBuilder::matVecRows(OpBuilder &b, Location loc, Value weight, Value input,
                                OpFoldResult firstRow, OpFoldResult rows, Value init) const {
  return rowByRowMatVec(b, loc, sliceRows(b, loc, weight, firstRow, rows), input, rows, init);
}

Value KernelBuilder::decodingMatVecRows(OpBuilder &b, Location loc, Value weight, Value input,
                                        OpFoldResult firstRow, OpFoldResult rows,
                                        Value init) const {
  return decodingMatVec(b, loc, weight, input, firstRow, rows, init);
}

Value KernelBuilder::decodingMatMulRows(OpBuilder &b, Location loc, Value weight, Value input,
                                        OpFoldResult firstRow, OpFoldResult rows, Value liveRows,
                                        Value init) const {
  return decodingMatMul(b, loc, weight, input, firstRow, rows, liveRows, init);
}

Value KernelBuilder::q8MatVecRows(OpBuilder &b, Location loc, Value weight, Value input,
                                  OpFoldResult firstRow, OpFoldResult rows, Value init) const {
  return decodingMatVecRows(b, loc, weight, q8RoundTrip(b, loc, input), firstRow, rows, init);
}

Value KernelBuilder::q8MatMulRows(OpBuilder &b, Location loc, Value weight, Value input,
                                  OpFoldResult firstRow, OpFoldResult rows, Value liveRows,
                                  Value init) const {
  // Rounded where the product reads it: no [T, K] copy of the input.
  return decodingMatMul(b, loc, weight, input, firstRow, rows, liveRows, init, /*q8Input=*/true);
}

Value KernelBuilder::bf16MatVecRows(OpBuilder &b, Location loc, Value weight, Value input,
                                    OpFoldResult firstRow, OpFoldResult rows, Value init) const {
  return decodingMatVecRows(b, loc, weight, bf16RoundTrip(b, loc, input), firstRow, rows, init);
}

Value KernelBuilder::bf16MatMulRows(OpBuilder &b, Location loc, Value weight, Value input,
                                    OpFoldResult firstRow, OpFoldResult rows, Value liveRows,
                                    Value init) const {
  // Rounded where the product reads it: no [T, K] copy of the input.
  return decodingMatMul(b, loc, weight, input, firstRow, rows, liveRows, init, /*q8Input=*/false,
                        /*bf16Input=*/true);
}

Value KernelBuilder::matMulRows(OpBuilder &b, Location loc, Value weight, Value input,
                                OpFoldResult firstRow, OpFoldResult rows, Value liveRows,
                                Value init) const {
  Value rowsOfWeight = sliceRows(b, loc, weight, firstRow, rows);
  if (!liveRows)
    return rowByRowMatMul(b, loc, rowsOfWeight, input, init);
  return overLiveRows(b, loc, input, liveRows, rows, init, [&](Value liveInput, Value liveOut) {
    return rowByRowMatMul(b, loc, rowsOfWeight, liveInput, liveOut);
  });
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
