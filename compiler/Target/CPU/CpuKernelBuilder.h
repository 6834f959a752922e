// The CPU's KernelBuilder: the target-neutral lowering's reductions as
// register-tiled vector microkernels sized for the instruction set (16 f32
// lanes per register with AVX-512, 8 with AVX2), and small-head attention
// microkernels. Shapes they do not fit take the generic forms.
#pragma once

#include "compiler/Conversion/QuillToLinalg/KernelBuilder.h"

namespace mlir::quill {

/// The register tile of a matrix-matrix product.
struct MatMulTile {
  int64_t tokens; ///< Token rows per tile.
  int64_t rows;   ///< Weight rows per tile.
  int64_t lanes;  ///< f32 lanes per vector accumulator.
};

struct CpuKernelOptions {
  /// f32 lanes per vector register: 16 (AVX-512), 8 (AVX2), 4 (SSE).
  int64_t vectorWidth = 16;
  /// Matmuls prefetch the next block of weight rows.
  bool prefetchWeights = true;
};

class CpuKernelBuilder : public KernelBuilder {
public:
  explicit CpuKernelBuilder(CpuKernelOptions options);

  Value matVecRows(OpBuilder &b, Location loc, Value weight, Value input, OpFoldResult firstRow,
                   OpFoldResult rows, Value init) const override;
  Value matMulRows(OpBuilder &b, Location loc, Value weight, Value input, OpFoldResult firstRow,
                   OpFoldResult rows, Value liveRows, Value init) const override;
  Value decodingMatVecRows(OpBuilder &b, Location loc, Value weight, Value input,
                           OpFoldResult firstRow, OpFoldResult rows, Value init) const override;
  Value decodingMatMulRows(OpBuilder &b, Location loc, Value weight, Value input,
                           OpFoldResult firstRow, OpFoldResult rows, Value liveRows,
                           Value init) const override;
  Value attentionScores(OpBuilder &b, Location loc, Value query, Value keys,
                        Value init) const override;
  Value attentionWeightedSum(OpBuilder &b, Location loc, Value probs, Value values,
                             Value init) const override;

  /// The matmul tile for this vector width: as many accumulators as leave
  /// registers for the loads (AVX-512's 32 registers: 2 x 8; AVX2's 16: 2 x 4).
  MatMulTile matMulTile() const;
  /// Whether X[T, K] @ W^T fits whole register tiles (K in vectors, T in
  /// token tiles).
  bool fitsMatMulTile(Value weight, Value input) const;

private:
  CpuKernelOptions options_;
};

/// Rows [first, first + blocks * 8) of W @ x into `init`, the width a
/// multiple of `vectorWidth` (RegisterTiles.cpp).
Value blockedMatVec(OpBuilder &b, Location loc, int64_t vectorWidth, Value weight, Value input,
                    Value first, Value blocks, Value init);

/// Rows [first, first + blocks * tile.rows) of W times the first
/// `tokenBlocks` * tile.tokens (+ `tailTokens`, when given) token rows of X
/// into `init` ([T, rows]), in register tiles (RegisterTiles.cpp).
Value blockedMatMul(OpBuilder &b, Location loc, const MatMulTile &tile, Value weight, Value input,
                    Value first, Value blocks, Value tokenBlocks, Value tailTokens, Value init,
                    bool prefetch);

/// Whether blockedDecodingMatVec handles weights of `weightType` at this
/// vector width (Q8_0, Q4_0, F16, BF16 rows of whole blocks/vectors).
bool decodesInRegisters(Type weightType, int64_t vectorWidth);
/// Rows [first, first + blocks * rowBlock) of an encoded W @ x into
/// `init`, `rowBlock` rows streamed together, each block decoded in
/// registers (DecodingMatVec.cpp).
Value blockedDecodingMatVec(OpBuilder &b, Location loc, int64_t vectorWidth, int64_t rowBlock,
                            Value weight, Value input, Value first, Value blocks, Value init);

/// Rows [first, first + count) of an encoded weight decoded to f32 into
/// `init` ([count, columns]), block by block in registers, each value
/// rounded as the generic decoding rounds it; the weights decodesInRegisters
/// takes (DecodingMatVec.cpp).
Value decodeRowsInRegisters(OpBuilder &b, Location loc, int64_t vectorWidth, Value weight,
                            Value first, Value count, Value init);

/// Attention scores and weighted sums of heads of 8 or 16 dimensions as
/// vector microkernels, or a null Value where the shapes do not fit
/// (AttentionMicrokernels.cpp).
Value smallHeadScores(OpBuilder &b, Location loc, Value query, Value keys, Value init);
Value smallHeadWeightedSum(OpBuilder &b, Location loc, Value probs, Value values, Value init);

} // namespace mlir::quill
