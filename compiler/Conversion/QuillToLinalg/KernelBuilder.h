// The seam between the target-neutral lowering and a target's code
// generation: the reductions at the heart of the kernels (matrix-vector and
// matrix-matrix products, RMS scales, attention scores and weighted sums),
// which the lowering patterns build through a KernelBuilder. The neutral
// builder emits linalg.generic ops; a target (compiler/Target/<target>/)
// derives its own, e.g. register-tiled vector microkernels or warp-shared
// sums, and runs the same patterns with it.
#pragma once

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpDefinition.h"

#include <memory>

namespace mlir::quill {

class KernelBuilder {
public:
  virtual ~KernelBuilder();

  /// W[firstRow : firstRow + rows] @ x into `init` ([rows]).
  virtual Value matVecRows(OpBuilder &b, Location loc, Value weight, Value input,
                           OpFoldResult firstRow, OpFoldResult rows, Value init) const;

  /// X[T, K] @ W[firstRow : firstRow + rows]^T into `init` ([T, rows]);
  /// with `liveRows`, token rows [0, liveRows) at least (the others may be
  /// left as zeros).
  virtual Value matMulRows(OpBuilder &b, Location loc, Value weight, Value input,
                           OpFoldResult firstRow, OpFoldResult rows, Value liveRows,
                           Value init) const;

  /// matVecRows for a weight stored as anything but f32 (f16, bf16, GGUF
  /// blocks; its storage behind weightStorage()): decoded where it is read.
  virtual Value decodingMatVecRows(OpBuilder &b, Location loc, Value weight, Value input,
                                   OpFoldResult firstRow, OpFoldResult rows, Value init) const;
  /// matMulRows for such a weight.
  virtual Value decodingMatMulRows(OpBuilder &b, Location loc, Value weight, Value input,
                                   OpFoldResult firstRow, OpFoldResult rows, Value liveRows,
                                   Value init) const;

  /// decodingMatVecRows over the input rounded to Q8_0 blocks (an op's
  /// `q8_input`: a Q8_0 or Q4_0 weight). The neutral form rounds the input
  /// (q8RoundTrip) and decodes the weights as usual; a target may instead
  /// multiply the int8 values of both.
  virtual Value q8MatVecRows(OpBuilder &b, Location loc, Value weight, Value input,
                             OpFoldResult firstRow, OpFoldResult rows, Value init) const;
  /// decodingMatMulRows likewise, each token row rounded (the neutral form
  /// rounds each element where the product reads it).
  virtual Value q8MatMulRows(OpBuilder &b, Location loc, Value weight, Value input,
                             OpFoldResult firstRow, OpFoldResult rows, Value liveRows,
                             Value init) const;

  /// decodingMatVecRows over the input rounded to bf16 (an op's
  /// `bf16_input`: a bf16 weight). The neutral form rounds the input
  /// (bf16RoundTrip) and decodes the weights as usual; a target may
  /// instead multiply bf16 pairs.
  virtual Value bf16MatVecRows(OpBuilder &b, Location loc, Value weight, Value input,
                               OpFoldResult firstRow, OpFoldResult rows, Value init) const;
  /// decodingMatMulRows likewise (the neutral form rounds each element
  /// where the product reads it).
  virtual Value bf16MatMulRows(OpBuilder &b, Location loc, Value weight, Value input,
                               OpFoldResult firstRow, OpFoldResult rows, Value liveRows,
                               Value init) const;

  /// 1 / sqrt(mean(x^2) + eps) of each row of `input` (a 0-d tensor for a
  /// vector, [T] for T rows), in llama2.c's order.
  virtual Value rmsScales(OpBuilder &b, Location loc, Value input, float eps) const;

  /// Adds q[k, g, :] . K[t, k, :] into `init` [k, g, t]. The cache views
  /// (keys here, values below) are [position, kv head, head width] slices of
  /// a headsView (CacheAccess.h): f32, f16 or bf16 elements, or the i8 bytes
  /// of a Q8_0 cache's heads.
  virtual Value attentionScores(OpBuilder &b, Location loc, Value query, Value keys,
                                Value init) const;

  /// Adds sum_t p[k, g, t] * V[t, k, d] into `init` [k, g, d].
  virtual Value attentionWeightedSum(OpBuilder &b, Location loc, Value probs, Value values,
                                     Value init) const;

  /// Query rows of a prefill's attention taken together at each kv head of
  /// `group` query heads of `headDim`, so that each key and value row read
  /// serves them all: 1 where the scores and weighted sums would not keep
  /// several rows' work in registers.
  virtual int64_t attentionRowBlock(int64_t group, int64_t headDim) const { return 1; }

  /// Whether product rows are built in a private (stack) buffer and stored
  /// once, instead of in the kernel's output: needed where several threads
  /// compute the same unit (a warp's lanes) and must not read back what
  /// another rewrites.
  virtual bool privateRows() const { return false; }

  /// Whether a decode projection's rotary embedding computes the cos and
  /// sin of each of a head's head_dim / 2 pairs once per call (a table the
  /// heads share), instead of once per rotated row: worth it where a call
  /// computes many rows (a CPU thread's tile), not where it computes one
  /// unit of a few (a GPU thread's).
  virtual bool ropeTablePerCall() const { return false; }

  /// Called with each op lowered through this builder's reductions, so a
  /// target can mark the kernel around it (e.g. as run by a warp).
  virtual void noteLowered(Operation *op) const {}
};

/// The target-neutral builder: linalg.generic ops whose reductions carry
/// fastmath<reassoc, contract>.
std::shared_ptr<const KernelBuilder> genericKernelBuilder();

} // namespace mlir::quill
