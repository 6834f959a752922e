// The CPU's KernelBuilder: the target-neutral lowering's reductions as
// register-tiled vector microkernels sized for the instruction set (16 f32
// lanes per register with AVX-512, 8 with AVX2), and small-head attention
// microkernels. Shapes they do not fit take the generic forms.
#pragma once

#include "compiler/Conversion/QuillToLinalg/KernelBuilder.h"

namespace mlir::quill {

/// Columns per panel of a register-tiled matmul (4 KiB of f32 rows): each
/// panel's dot products are summed apart, then added in panel order.
constexpr int64_t kMatMulPanel = 1024;

/// The register tile of a matrix-matrix product.
struct MatMulTile {
  int64_t tokens; ///< Token rows per tile.
  int64_t rows;   ///< Weight rows per tile.
  int64_t lanes;  ///< f32 lanes per vector accumulator.
};

/// The instructions the int8 products take.
enum class Int8DotForm {
  /// vpdpbusd (AVX-512 VNNI, AVX-VNNI): four products of unsigned weight
  /// bytes and signed input bytes added to each i32 lane.
  Vnni,
  /// AVX2's vpmaddubsw (two such products to each i16, saturating) and
  /// vpmaddwd (pairs of i16 to each i32). Exact on the bytes the products
  /// take: weight bytes below 64 (Q4_0, Q4_K, Q6_K) and Q8_0's signed
  /// bytes (through vpabsb and vpsignb), times inputs within +-127.
  Avx2,
};

struct CpuKernelOptions {
  /// f32 lanes per vector register: 16 (AVX-512), 8 (AVX2), 4 (SSE).
  int64_t vectorWidth = 16;
  /// Matmuls prefetch the next block of weight rows.
  bool prefetchWeights = true;
  /// Products over Q8_0 activations run as int8 dot products: vpdpbusd
  /// (AVX-512 VNNI with VL, or AVX-VNNI) or AVX2's (int8Form).
  bool int8Dot = false;
  /// Which instructions they take.
  Int8DotForm int8Form = Int8DotForm::Vnni;
  /// The CPU has the 512-bit vpdpbusd (AVX-512 VNNI): prefill's and the
  /// batch step's int8 products take groups of 16 rows, not 8.
  bool int8Dot512 = false;
  /// Prefill's and the batch step's products over Q8_0, Q4_0, Q4_K and
  /// Q6_K weights with q8_input run as int8 dot products over transposed
  /// row groups
  /// (with int8Dot; off for A/B: the weights decoded to f32 tiles).
  bool int8MatMul = true;
  /// The CPU has vdpbf16ps (AVX512_BF16): prefill's and the batch step's
  /// products over bf16 weights with bf16_input multiply bf16 pairs.
  bool bf16Dot = false;
  /// A prefill's attention over wide heads takes blocks of query rows
  /// together (attentionRowBlock; off for A/B: one row at a time).
  bool attentionRowBlocks = true;
  /// With prefetchWeights: bytes ahead that decode's products over row
  /// groups prefetch, for every type (0: none); -1: the choice per type.
  int64_t rowGroupPrefetchBytes = -1;
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
  Value q8MatVecRows(OpBuilder &b, Location loc, Value weight, Value input, OpFoldResult firstRow,
                     OpFoldResult rows, Value init) const override;
  Value q8MatMulRows(OpBuilder &b, Location loc, Value weight, Value input, OpFoldResult firstRow,
                     OpFoldResult rows, Value liveRows, Value init) const override;
  Value bf16MatMulRows(OpBuilder &b, Location loc, Value weight, Value input, OpFoldResult firstRow,
                       OpFoldResult rows, Value liveRows, Value init) const override;
  Value attentionScores(OpBuilder &b, Location loc, Value query, Value keys,
                        Value init) const override;
  Value attentionWeightedSum(OpBuilder &b, Location loc, Value probs, Value values,
                             Value init) const override;
  int64_t attentionRowBlock(int64_t group, int64_t headDim) const override;
  /// A tile of a decode projection holds hundreds of rows: 110m's 1,536
  /// rotated rows per layer took about 1.5% of a Q4_0 decode step in
  /// libmvec's powf, cosf and sinf alone.
  bool ropeTablePerCall() const override { return true; }

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
/// into `init` ([T, rows]), in register tiles (RegisterTiles.cpp). With
/// `bf16Pairs`, W and X are bf16 and each step multiplies pairs of them
/// (vdpbf16ps, tile.lanes 16 or 8) into the f32 lanes.
Value blockedMatMul(OpBuilder &b, Location loc, const MatMulTile &tile, Value weight, Value input,
                    Value first, Value blocks, Value tokenBlocks, Value tailTokens, Value init,
                    bool prefetch, bool bf16Pairs = false);

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
/// Rows [first, first + blocks * rowBlock) of an encoded W times row 0 of
/// X ([T, K]), into `init`, summed exactly as the register tiles sum one
/// token over W's rows decoded into a buffer (decodeRowsInRegisters): each
/// weight decoded to f32 in registers, one vectorWidth-lane FMA chain per
/// row and panel in column order, its lanes summed, the panels added in
/// order. A batch step with one live row streams W once with it, and its
/// logits stay those it would have among other rows.
Value decodedWeightsMatVec(OpBuilder &b, Location loc, int64_t vectorWidth, int64_t rowBlock,
                           Value weight, Value input, Value first, Value blocks, Value init);

Value decodeRowsInRegisters(OpBuilder &b, Location loc, int64_t vectorWidth, Value weight,
                            Value first, Value count, Value init);

/// `n` elements of type `element` of `source` from `indices` (a vector).
Value readVector(OpBuilder &b, Location loc, Value source, ValueRange indices, int64_t n,
                 Type element);
/// The fp16 value at byte `offset` of row `row` of a weight's bytes
/// (`storage`), as an f32 scalar.
Value halfScalarAt(OpBuilder &b, Location loc, Value storage, Value row, Value offset);
/// The 32 unsigned nibbles of the Q4_0 block at byte `base` of `row`, in
/// weight order (the low nibbles, then the high ones), as vector<32xi8>.
Value q4_0Nibbles(OpBuilder &b, Location loc, Value storage, Value row, Value base);
/// Prefetches, for each of `rows`, step `step` (of `stepElements` storage
/// elements) of the row `rowBlock` further on, clamped to the last row:
/// every cache line of the step.
/// (prefetchDistance gives a distance far enough ahead for short rows.)
void prefetchNextRows(OpBuilder &b, Location loc, Value storage, ArrayRef<Value> rows,
                      int64_t rowBlock, Value step, int64_t stepElements);
/// How many rows ahead a matrix-vector product over rows of `rowBytes`,
/// `rowBlock` at a time, prefetches: whole row blocks, at least 8 KiB
/// ahead, so that short rows (a few hundred bytes of blocks) keep as many
/// bytes in flight as DRAM's latency needs.
int64_t prefetchDistance(int64_t rowBlock, int64_t rowBytes);

/// Whether int8DotMatVec takes weights of `weightType`: Q8_0 or Q4_0 rows
/// of whole blocks, Q4_K or Q6_K rows of whole super-blocks.
bool fitsInt8Dot(Type weightType);
/// A Q8_0-rounded input of an int8 product (Int8DotMatVec.cpp).
struct Int8Input {
  Value values;   ///< tensor<K x i8>: the rounded values q.
  Value scales;   ///< tensor<K / 32 x f32>: each block's d.
  Value halfSums; ///< tensor<K / 16 x i32>: the sum of q over each half block.
};
/// One block of 32 inputs rounded to Q8_0 (ActivationQuantization.h's
/// rules), in vector registers.
struct Q8Block {
  Value values;      ///< vector<32 x i8>: q.
  Value scale;       ///< f32: d.
  Value halfSums[2]; ///< i32: the sums of q over each half.
};
/// `x` (vector<32 x f32>) so rounded: shared by decode's and the matmuls'
/// rounding of their inputs.
Q8Block roundQ8Block(OpBuilder &b, Location loc, Value x);
/// Input blocks rounded together by roundQ8Blocks.
constexpr int64_t kQ8BlockGroup = 8;
/// kQ8BlockGroup blocks rounded to Q8_0 together.
struct Q8Blocks {
  SmallVector<Value> values; ///< vector<32 x i8> per block: q.
  Value scales;              ///< vector<N x f32>: each block's d.
  Value halfSums;            ///< vector<2N x i32>: each block's sums of q over its halves.
};
/// `xs` (kQ8BlockGroup vector<32 x f32>) rounded as roundQ8Block rounds
/// each, to the same bits (maxima and integer sums are exact in any order,
/// the scales' divisions the same IEEE operations), their maxima and sums
/// taken by shuffle trees for all the blocks at once and their scales by
/// one vector division, where each block alone takes three horizontal
/// reductions and two scalar divisions.
Q8Blocks roundQ8Blocks(OpBuilder &b, Location loc, ArrayRef<Value> xs);
/// Blocks [0, blocks) of `input`'s row `row` (its indices but the last;
/// none for a vector) rounded to Q8_0 into `outs` = {values, scales,
/// halfSums} at the same leading indices: values as bytes (vector<32 x i8>
/// per block) or, with `words`, as 8 i32 words per block. Whole groups of
/// kQ8BlockGroup blocks take roundQ8Blocks, the rest roundQ8Block. Returns
/// the outs so written.
SmallVector<Value> roundQ8Row(OpBuilder &b, Location loc, Value input, ValueRange row,
                              int64_t blocks, ValueRange outs, bool words);
/// `input` ([K]) rounded to Q8_0 blocks (ActivationQuantization.h's rules).
Int8Input quantizeInt8Input(OpBuilder &b, Location loc, Value input);
/// `input` ([T, K], K a multiple of 32) rounded to Q8_0 blocks and back to
/// f32, as q8RoundTrip rounds it (ActivationQuantization.h), in vector
/// registers (Int8DotMatVec.cpp); with `liveRows`, only the first
/// min(liveRows, T) rows (the others are left undefined, as a product over
/// live rows never reads them).
Value q8RoundTripRows(OpBuilder &b, Location loc, Value input, Value liveRows);
/// Rows [first, first + blocks * rowBlock) of W @ x into `init` as int8
/// dot products (vpdpbusd) of the weights' blocks with `input`'s, each
/// block's int32 sum scaled by both scales into f32 partial sums.
Value int8DotMatVec(OpBuilder &b, Location loc, Int8DotForm form, int64_t rowBlock, Value weight,
                    const Int8Input &input, Value first, Value blocks, Value init);

/// Whether int8DotMatMul takes weights of `weightType`: Q8_0 or Q4_0 rows
/// of whole blocks, Q4_K or Q6_K rows of whole super-blocks.
bool fitsInt8MatMul(Type weightType);
/// Weight rows per group of the int8 matmuls and of the row-group layout:
/// 16 i32 lanes with 512-bit vpdpbusd and 16-wide vectors, else 8 (AVX2's
/// products included).
inline int64_t int8GroupLanes(bool int8Dot512, int64_t vectorWidth) {
  return int8Dot512 && vectorWidth >= 16 ? 16 : 8;
}
/// X[T, K] (its first min(liveRows, T) rows, or all) times rows [firstRow,
/// firstRow + rows) of a Q8_0, Q4_0, Q4_K or Q6_K W into `init` ([T,
/// rows]), the token rows rounded to Q8_0 blocks, as int8 dot products over
/// groups of `lanes` rows (16 with AVX-512 VNNI, 8 with AVX-VNNI)
/// transposed so that one vpdpbusd serves every row of a group
/// (Int8DotMatMul.cpp).
Value int8DotMatMul(OpBuilder &b, Location loc, Int8DotForm form, int64_t lanes, Value weight,
                    Value input, OpFoldResult firstRow, OpFoldResult rows, Value liveRows,
                    Value init);

/// A weight stored in row groups (#quill.row_groups), read by the int8
/// products (Int8RowGroups.cpp).
/// Its bytes as one [rows * row bytes] tensor: a group is contiguous.
Value flatWeightBytes(OpBuilder &b, Location loc, Value weight);
/// One step (32 columns) of a group of `lanes` rows: a Q8_0 or Q4_0 block,
/// a K-quant's sub-block.
struct RowGroupBlock {
  SmallVector<Value> words; ///< 8 vector<lanes x i32>: lane r, row r's unsigned bytes.
  Value scales;             ///< vector<lanes x f32>: each row's scale (Q6_K: of words 0-3).
  Value second;             ///< Q4_K: each row's dmin * min; Q6_K: the scale of words 4-7.
};
/// Steps a chunk of a row holds: a block (1), a K-quant super-block (8).
int64_t rowGroupStepsPerChunk(Type element);
/// Chunk `chunk` of the group whose bytes start at `groupBase` of `flat`,
/// read on demand: each of its words is loaded at its first use (or all
/// at once, loadAll: decode's choice, so that their misses overlap) and
/// decoded where asked, just before the products that take it.
class RowGroupChunk {
public:
  RowGroupChunk(OpBuilder &b, Location loc, Value flat, Type element, int64_t lanes,
                Value groupBase, Value chunk);
  /// Word j (0-7) of step s: lane r, row r's four unsigned bytes.
  Value word(int64_t s, int64_t j);
  /// Step s's scales (Q6_K: of words 0-3).
  Value scales(int64_t s);
  /// Q4_K: step s's dmin * min; Q6_K: the scales of words 4-7; else null.
  Value second(int64_t s);
  /// All of step s.
  RowGroupBlock block(int64_t s);
  /// Loads every word of the chunk now (the loads in flight together).
  void loadAll();
  /// Where the chunk's bytes start in `flat`.
  Value offset() const { return at; }

private:
  Value bytesAt(int64_t offset, int64_t n);
  Value raw(int64_t j);
  Value halfScales();
  void readScales(int64_t s);

  OpBuilder &b;
  Location loc;
  Value flat;
  Type element;
  int64_t lanes;
  Value at;
  llvm::DenseMap<int64_t, Value> rawWords;
  Value halves;
  SmallVector<Value> scaleVectors, secondVectors;
};
/// The i32 lanes (8 or 16) of int8 products added word by word
/// (Int8DotSums.cpp): each word one vpdpbusd, or, with AVX2's form, one
/// vpmaddubsw whose i16 pairs are summed over as many words as cannot
/// overflow (8 for nibbles, 2 for Q6_K's six bits, 1 for Q8_0), then
/// widened by one vpmaddwd. The integer sums are the same in both forms.
class Int8Sums {
public:
  /// Sums over `element`'s weight bytes, from `start` (vector<L x i32>).
  Int8Sums(Int8DotForm form, Type element, Value start);
  /// Adds the products of `weights` (vector<L x i32>: lane r's four
  /// unsigned bytes, Q8_0's sign bits flipped) and `input` (four signed
  /// bytes per lane).
  void add(OpBuilder &b, Location loc, Value weights, Value input);
  /// The lanes so far.
  Value sums(OpBuilder &b, Location loc);

private:
  void widenPending(OpBuilder &b, Location loc);

  Int8DotForm form;
  Type element;
  Value acc;
  Value pending; ///< AVX2: i16 pair sums not yet widened.
  int64_t pendingWords = 0;
};
/// The offset of the unsigned bytes the int8 products multiply: 128
/// (Q8_0's flipped sign bits; 0 with AVX2's form, which multiplies the
/// signed bytes), 8 (Q4_0), 32 (Q6_K), 0 (Q4_K, whose minimum is a term
/// of its own).
int64_t int8WeightOffset(Int8DotForm form, Type element);
/// One step's input: a block of 32 values rounded to Q8_0.
struct Int8StepInput {
  SmallVector<Value> words; ///< 8 i32: the int8 values, four to a word.
  Value scale;              ///< f32: the block's d.
  Value halfSums[2];        ///< i32: the sums of the values of each half.
};
/// The integer sums of a step's products, in `runs` independent runs of
/// vpdpbusd (Q6_K: always its two halves): their starting values, -offset
/// * sum(q_x) (which takes the weight bytes' offset off exactly) in the
/// first run (Q6_K: -32 * each half's sum), 0 in the others.
SmallVector<Int8Sums> startGroupSums(OpBuilder &b, Location loc, Int8DotForm form, Type element,
                                     const Int8StepInput &x, int64_t lanes, int64_t runs);
/// Which run word j (0-7) of a step adds to.
int64_t groupSumRun(Type element, int64_t j, int64_t runs);
/// `lanes` (vector<L x f32>, a row per lane) plus the step whose integer
/// sums are `ints`: scale_w * d_x * (q_w . q_x); Q4_K then takes off dmin
/// * min * d_x * sum(q_x), Q6_K adds its halves apart.
Value finishGroupStep(OpBuilder &b, Location loc, Type element, Value scales, Value second,
                      MutableArrayRef<Int8Sums> ints, const Int8StepInput &x, Value lanes);
/// One step whole: startGroupSums, the 8 words, finishGroupStep.
Value accumulateGroupStep(OpBuilder &b, Location loc, Int8DotForm form, Type element,
                          const RowGroupBlock &block, const Int8StepInput &x, Value lanes,
                          int64_t runs);
/// Runs of vpdpbusd a lone token's step over a row group is summed in
/// (Q6_K: its halves), so that it does not wait on their latency: on 2 Zen
/// 4 threads four runs of 2 decoded Q4_K_M 6-9%, Q8_0 3-5% and Q4_0 0-5%
/// faster than two of 4 (eight of 1 lost 2-8%). The integer sums, and so
/// the results, do not depend on it.
constexpr int64_t kLoneTokenRuns = 4;
/// Rows [first, first + groups * lanes) of W @ x into `init`: each group's
/// steps as vpdpbusd of its word vectors with the input's words
/// broadcast, one FMA per step (two for Q4_K and Q6_K) into one f32 lane
/// per row. `prefetchBytes` > 0: each chunk's lines are prefetched that
/// many bytes ahead in the weight's storage.
Value int8RowGroupMatVec(OpBuilder &b, Location loc, Int8DotForm form, int64_t lanes, Value weight,
                         const Int8Input &input, Value first, Value groups, Value init,
                         int64_t prefetchBytes);

/// Attention scores and weighted sums of heads of 8 or 16 dimensions as
/// vector microkernels, or a null Value where the shapes do not fit
/// (AttentionMicrokernels.cpp).
Value smallHeadScores(OpBuilder &b, Location loc, Value query, Value keys, Value init);
Value smallHeadWeightedSum(OpBuilder &b, Location loc, Value probs, Value values, Value init);
/// The same for heads of more than 16 dimensions, a multiple of 8
/// (WideHeadAttention.cpp).
Value wideHeadScores(OpBuilder &b, Location loc, Value query, Value keys, Value init);
Value wideHeadWeightedSum(OpBuilder &b, Location loc, Value probs, Value values, Value init);
/// The query rows those take together (attentionRowBlock): as many as the
/// weighted sum's accumulators hold, 1 where the shapes are not theirs.
int64_t wideHeadRowBlock(int64_t group, int64_t headDim);

} // namespace mlir::quill
