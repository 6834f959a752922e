// Small builders shared by the quill-to-linalg lowerings.
#pragma once

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <functional>
#include <utility>

namespace mlir::quill {

/// The body of a generic: block arguments in, the value to yield out.
using ScalarBody = std::function<Value(OpBuilder &, Location, ValueRange)>;

/// Flags that let a reduction be reassociated (vectorized) and contracted
/// into FMAs. Results then depend on the vector width but never on threads.
arith::FastMathFlagsAttr reductionFastMath(OpBuilder &b);

/// A tensor of `sizes` filled with `value`.
Value filledTensor(OpBuilder &b, Location loc, ArrayRef<OpFoldResult> sizes, float value);

/// A tensor of static `shape` (a fixed-size, stack-promotable buffer) of
/// which the leading `sizes` part is returned, filled with `value` when given.
Value scratchSlice(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
                   ArrayRef<OpFoldResult> sizes, std::optional<float> value);

/// A linalg.generic over `numLoops` loops with the given maps and iterators,
/// yielding `body`'s value into `init`.
Value buildGeneric(OpBuilder &b, Location loc, ValueRange inputs, Value init,
                   ArrayRef<AffineMap> maps, ArrayRef<utils::IteratorType> iterators,
                   const ScalarBody &body);

/// An elementwise generic over rank-`rank` operands all shaped like `init`.
Value buildElementwise(OpBuilder &b, Location loc, ValueRange inputs, Value init,
                       const ScalarBody &body);

/// The body `acc + a * b` of a dot-product generic whose block arguments
/// are (a, b, acc), with the reduction's fast-math flags; an f16 or bf16
/// operand (a KV cache's element) is widened to f32 first.
ScalarBody multiplyAccumulate(arith::FastMathFlagsAttr fastMath);

/// `value` (a scalar or a vector of f32, f16 or bf16) as f32: an
/// arith.extf where it is narrower. Where attention reads a KV cache.
Value widenToF32(OpBuilder &b, Location loc, Value value);

/// The f32 tensor `rows` rounded to `element` (f16 or bf16: arith.truncf,
/// to nearest even) by an elementwise generic; `rows` itself for f32. What
/// a KV-cache write stores.
Value roundToElement(OpBuilder &b, Location loc, Value rows, Type element);

/// The element type of a (shaped) value.
inline Type elementTypeOf(Value value) {
  return cast<ShapedType>(value.getType()).getElementType();
}

/// How a rotary embedding turns a pair's index into its angle's frequency:
/// llama2.c's 1 / theta^(d / head_dim), or a compile-time table (`table`,
/// head_dim / 2 inverse frequencies) where a RoPE scaling changed them; cos
/// and sin are multiplied by `attentionFactor` (YaRN).
struct RopeFrequencies {
  int64_t headDim = 0;
  float theta = 10000.0f;
  Value table;
  float attentionFactor = 1.0f;
};

/// The frequencies of a quill.rope or quill.project_qkv.
template <typename OpTy> RopeFrequencies ropeFrequencies(OpTy op) {
  RopeFrequencies f;
  f.headDim = op.getHeadDim();
  f.theta = op.getTheta().convertToFloat();
  f.table = op.getFreqs();
  if (auto factor = op.getAttentionFactor())
    f.attentionFactor = factor->convertToFloat();
  return f;
}

/// Rotary embedding of one element of the pair (v0, v1): `parity` 0 gives
/// the first output, 1 the second; `d` is the pair's first index within its
/// head, `position` the token's position (all index values).
Value rotatePair(OpBuilder &b, Location loc, Value v0, Value v1, Value parity, Value d,
                 Value position, const RopeFrequencies &frequencies);
/// rotatePair's two halves: the pair's cos and sin (times the attention
/// factor), which every head at that position shares...
std::pair<Value, Value> ropeCosSin(OpBuilder &b, Location loc, Value d, Value position,
                                   const RopeFrequencies &frequencies);
/// Both as tables of a head's head_dim / 2 pairs (tensor<head_dim/2 x f32>
/// each) at `position`: entry j is ropeCosSin's for pair d = 2j.
std::pair<Value, Value> ropeCosSinTables(OpBuilder &b, Location loc, Value position,
                                         const RopeFrequencies &frequencies);
/// ... and the rotation by them.
Value rotateWith(OpBuilder &b, Location loc, Value v0, Value v1, Value parity, Value cos,
                 Value sin);

/// The first position a query at `pos` attends to: 0, or with a sliding
/// window of `window` positions max(0, pos + 1 - window).
Value windowStart(OpBuilder &b, Location loc, Value pos, std::optional<int64_t> window);

/// `values` ([n] or [T, n], the weight rows [first, first + n)) plus
/// bias[first + i] in every row: a linear layer's bias epilogue.
Value addBias(OpBuilder &b, Location loc, Value values, Value bias, OpFoldResult first);

/// silu(gate) * up = gate / (1 + exp(-gate)) * up, in llama2.c's order.
Value swigluScalar(OpBuilder &b, Location loc, Value gate, Value up);

/// 1 / sqrt(mean(x^2) + eps) of each row of `input` (the last dimension
/// reduced): a 0-d tensor for one vector, [T] for T rows.
Value buildRmsScales(OpBuilder &b, Location loc, Value input, float eps);

/// `values` ([..., n]) times the per-row `scales` ([...]).
Value scaleRows(OpBuilder &b, Location loc, Value values, Value scales);

/// Adds q[k, g, :] . K[t, k, :] into `init` [k, g, t] (zero-filled):
/// attention scores of query heads [kv head, group, d] over keys
/// [position, kv head, head width] (a headsView: elements, or a Q8_0 head's
/// bytes), as a linalg.generic.
Value attentionScoresGeneric(OpBuilder &b, Location loc, Value query, Value keys, Value init);
/// Adds sum_t p[k, g, t] * V[t, k, d] into `init` [k, g, d], as a
/// linalg.generic whose loops run (k, g, t, d): the innermost along
/// contiguous rows of V and the output.
Value attentionWeightedSumGeneric(OpBuilder &b, Location loc, Value probs, Value values,
                                  Value init);
/// The query heads [kv head, group, d] times 1/sqrt(head_dim): scores of
/// the scaled query are the scaled scores, for a pass over head_dim
/// elements instead of one over every position.
Value scaleQuery(OpBuilder &b, Location loc, Value query, int64_t kvHeads, int64_t group,
                 OpFoldResult units, int64_t headDim);
/// The softmax of scores [kv head, group, positions] (the leading `units`
/// kv heads of a scratch of `kvHeads`) before normalization: exp(s - max)
/// in place, and each row's sum. Attention divides its weighted sum by the
/// sums at the end (divideRows): head_dim divisions per row instead of one
/// per position.
std::pair<Value, Value> softmaxNumerators(OpBuilder &b, Location loc, Value scores, int64_t kvHeads,
                                          int64_t group, OpFoldResult units);
/// out[k, g, d] / sums[k, g], in place.
Value divideRows(OpBuilder &b, Location loc, Value out, Value sums);
/// A constant f32.
Value f32Constant(OpBuilder &b, Location loc, float value);

/// `row` ([width]) into row `at` of the 2-D tensor `into`.
Value insertRow(OpBuilder &b, Location loc, Value row, Value into, OpFoldResult at,
                OpFoldResult width);

/// Index arithmetic that stays a static attribute when its inputs are.
OpFoldResult mulIndex(OpBuilder &b, Location loc, OpFoldResult x, int64_t k);
OpFoldResult divIndex(OpBuilder &b, Location loc, OpFoldResult x, int64_t k);
OpFoldResult addIndex(OpBuilder &b, Location loc, OpFoldResult x, OpFoldResult y);
OpFoldResult subIndex(OpBuilder &b, Location loc, OpFoldResult x, OpFoldResult y);

/// Rows [from, from + count) of the matrix `weight` ([rows, width]).
Value sliceRows(OpBuilder &b, Location loc, Value weight, OpFoldResult from, OpFoldResult count);

/// y[r] = sum_k W[r, k] * x[k] over all `rows` rows of `weight`, one row at
/// a time, into `init` (zero-filled first).
Value rowByRowMatVec(OpBuilder &b, Location loc, Value weight, Value input, OpFoldResult rows,
                     Value init);

/// out[t, r] = sum_k X[t, k] * W[r, k] over all of `weight`'s rows, into
/// `init` (zero-filled first).
Value rowByRowMatMul(OpBuilder &b, Location loc, Value weight, Value input, Value init);

/// A product over token rows, from `input` ([T, K]) into `out` ([T, rows]).
using RowProduct = std::function<Value(Value input, Value out)>;
/// `product` over the first min(liveRows, T) token rows of `input` into
/// `init` (zero-filled first, so the dead rows are zeros and the result
/// stays the kernel's destination): a batch of one must not pay for 64.
Value overLiveRows(OpBuilder &b, Location loc, Value input, Value liveRows, OpFoldResult rows,
                   Value init, const RowProduct &product);

/// `value` as the op's declared result type (a tensor.cast where they differ).
Value castTo(OpBuilder &b, Location loc, Value value, Type type);

} // namespace mlir::quill
