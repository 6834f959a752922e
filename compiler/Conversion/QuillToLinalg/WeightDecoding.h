// Reading weights in any encoding: one element decoded to f32 from its
// storage (f16, bf16, or GGUF blocks as bytes), and the generic products
// and embedding rows built on it. Targets with faster decoding kernels
// override KernelBuilder::decodingMatVecRows; these are the fallback and
// the definition.
#pragma once

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/Builders.h"

namespace mlir::quill {

/// Whether `weight` is stored as anything but f32.
bool isEncodedWeight(Value weight);

/// What holds `weight`'s data inside a kernel: the [rows, row bytes] i8
/// tensor behind a quill.weight_view, or the weight itself (f32, f16, bf16).
Value weightStorage(Value weight);

/// Fails, with an error on the op, where an op of the quill dialect under
/// `root` takes a tensor of GGUF blocks that has no bytes behind it (a
/// function argument, a quill.weight before kernel outlining, another
/// dialect's op): the kernels read a block weight's bytes (a
/// quill.weight_view), so lowering it would build invalid IR.
LogicalResult verifyBlockWeightsHaveBytes(Operation *root);

/// Weight (row, column) of `weightType` as f32, read from `storage` with
/// tensor.extract: the dequantization rules of GGUF's blocks, in ggml's
/// order of operations.
Value decodeWeightElement(OpBuilder &b, Location loc, Value storage, RankedTensorType weightType,
                          Value row, Value column);

/// Element `column` of the row of `storage` at indices `leading` (all but
/// the last), stored as `element` (a float type, or GGUF blocks whose bytes
/// `storage` holds), as f32. A weight's element is (row, column); a Q8_0
/// KV cache's is (position, kv head, d) in its bytes viewed by head.
Value decodeElement(OpBuilder &b, Location loc, Value storage, Type element, ValueRange leading,
                    Value column);

/// W[firstRow : firstRow + rows] @ x into `init` ([rows]), each weight
/// decoded where it is used.
Value decodingMatVec(OpBuilder &b, Location loc, Value weight, Value input, OpFoldResult firstRow,
                     OpFoldResult rows, Value init);

/// X[T, K] @ W[firstRow : firstRow + rows]^T into `init` ([T, rows]);
/// with `liveRows`, the live token rows only (the rest are zeros); with
/// `q8Input`, each X element rounded to its Q8_0 block where it is read;
/// with `bf16Input`, to bf16.
Value decodingMatMul(OpBuilder &b, Location loc, Value weight, Value input, OpFoldResult firstRow,
                     OpFoldResult rows, Value liveRows, Value init, bool q8Input = false,
                     bool bf16Input = false);

/// Rows [firstRow, firstRow + n) of `weight` decoded to f32, into `init`
/// ([n, columns]).
Value decodedRows(OpBuilder &b, Location loc, Value weight, Value firstRow, Value init);

/// Elements [first, first + count) of the decoded row `row` of `weight`,
/// into `init` ([count]).
Value decodedRow(OpBuilder &b, Location loc, Value weight, Value row, OpFoldResult first,
                 Value init);

} // namespace mlir::quill
