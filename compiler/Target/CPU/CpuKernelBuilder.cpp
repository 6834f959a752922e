// The CPU's KernelBuilder: register tiles where the shapes fit them, the
// generic forms for the leftover rows and widths.
#include "compiler/Target/CPU/CpuKernelBuilder.h"

#include "compiler/Conversion/QuillToLinalg/ActivationQuantization.h"
#include "compiler/Conversion/QuillToLinalg/LinalgBuilders.h"
#include "compiler/Conversion/QuillToLinalg/WeightDecoding.h"
#include "dialects/Quill/IR/QuillDialect.h"
#include "dialects/Quill/IR/WeightFormats.h"

#include "mlir/Dialect/SCF/IR/SCF.h"

#include "mlir/Dialect/Arith/Utils/Utils.h"

#include <functional>

namespace mlir::quill {

namespace {
constexpr int64_t kRowBlock = 8;       ///< Weight rows a matvec streams together.
constexpr int64_t kDecodeRowBlock = 4; ///< Encoded rows a matvec decodes together.
constexpr int64_t kDecodedRows = 32;   ///< Encoded rows a matmul decodes at a time.
/// How far ahead a decode matvec over row groups prefetches its weights:
/// 110m on 2 Zen 5 threads decoded Q4_0 15-40% and Q4_K_M 1.8x faster
/// with 8 KiB than with none (2-16 KiB all helped; 1 KiB barely).
constexpr int64_t kRowGroupPrefetchBytes = 8 << 10;

/// The prefetch distance a decode matvec over row groups of `element` uses
/// (0: none): the options' where they set one, else per type. Not Q8_0:
/// its decode does the least work per byte, the hardware prefetchers keep
/// up with it, and the prefetches (9 per 8 products) cost 0-12% of its
/// step in the measurements.
int64_t rowGroupPrefetchBytes(Type element, const CpuKernelOptions &options) {
  if (!options.prefetchWeights)
    return 0;
  if (options.rowGroupPrefetchBytes >= 0)
    return options.rowGroupPrefetchBytes;
  return isa<Q8_0Type>(element) ? 0 : kRowGroupPrefetchBytes;
}
} // namespace

CpuKernelBuilder::CpuKernelBuilder(CpuKernelOptions options) : options_(options) {}

MatMulTile CpuKernelBuilder::matMulTile() const {
  return {/*tokens=*/2, /*rows=*/options_.vectorWidth >= 16 ? 8 : 4,
          /*lanes=*/options_.vectorWidth};
}

namespace {

/// Rows of a matrix-vector product in blocks of `rowBlock` by `blocked`
/// (first row, block count, init), then the leftover rows by `tail` (first
/// row, row count, init).
Value blocksThenTail(OpBuilder &b, Location loc, OpFoldResult firstRow, OpFoldResult rows,
                     int64_t rowBlock, Value init,
                     const std::function<Value(Value, Value, Value)> &blocked,
                     const std::function<Value(OpFoldResult, OpFoldResult, Value)> &tail) {
  OpFoldResult blocks = divIndex(b, loc, rows, rowBlock);
  OpFoldResult blockedRows = mulIndex(b, loc, blocks, rowBlock);
  Value result = blocked(getValueOrCreateConstantIndexOp(b, loc, firstRow),
                         getValueOrCreateConstantIndexOp(b, loc, blocks), init);
  OpFoldResult tailRows = subIndex(b, loc, rows, blockedRows);
  if (getConstantIntValue(tailRows) == 0)
    return result;
  Value rest =
      tail(addIndex(b, loc, firstRow, blockedRows), tailRows,
           tensor::EmptyOp::create(b, loc, ArrayRef<OpFoldResult>{tailRows}, b.getF32Type()));
  return tensor::InsertSliceOp::create(b, loc, rest, result, ArrayRef<OpFoldResult>{blockedRows},
                                       ArrayRef<OpFoldResult>{tailRows},
                                       ArrayRef<OpFoldResult>{b.getIndexAttr(1)});
}

} // namespace

Value CpuKernelBuilder::matVecRows(OpBuilder &b, Location loc, Value weight, Value input,
                                   OpFoldResult firstRow, OpFoldResult rows, Value init) const {
  const int64_t width = cast<RankedTensorType>(weight.getType()).getDimSize(1);
  if (width % options_.vectorWidth != 0)
    return KernelBuilder::matVecRows(b, loc, weight, input, firstRow, rows, init);
  // Blocks of rows streamed together, then the leftover rows one at a time.
  return blocksThenTail(
      b, loc, firstRow, rows, kRowBlock, init,
      [&](Value first, Value blocks, Value out) {
        return blockedMatVec(b, loc, options_.vectorWidth, weight, input, first, blocks, out);
      },
      [&](OpFoldResult first, OpFoldResult count, Value out) {
        return KernelBuilder::matVecRows(b, loc, weight, input, first, count, out);
      });
}

Value CpuKernelBuilder::decodingMatVecRows(OpBuilder &b, Location loc, Value weight, Value input,
                                           OpFoldResult firstRow, OpFoldResult rows,
                                           Value init) const {
  if (!decodesInRegisters(weight.getType(), options_.vectorWidth))
    return KernelBuilder::decodingMatVecRows(b, loc, weight, input, firstRow, rows, init);
  // Blocks of 4 rows decoded together, then the leftover rows one by one
  // with the same kernel (never the generic form's byte gathers).
  return blocksThenTail(
      b, loc, firstRow, rows, kDecodeRowBlock, init,
      [&](Value first, Value blocks, Value out) {
        return blockedDecodingMatVec(b, loc, options_.vectorWidth, kDecodeRowBlock, weight, input,
                                     first, blocks, out);
      },
      [&](OpFoldResult first, OpFoldResult count, Value out) {
        return blockedDecodingMatVec(b, loc, options_.vectorWidth, 1, weight, input,
                                     getValueOrCreateConstantIndexOp(b, loc, first),
                                     getValueOrCreateConstantIndexOp(b, loc, count), out);
      });
}

Value CpuKernelBuilder::q8MatVecRows(OpBuilder &b, Location loc, Value weight, Value input,
                                     OpFoldResult firstRow, OpFoldResult rows, Value init) const {
  if (!options_.int8Dot || !fitsInt8Dot(weight.getType()))
    return KernelBuilder::q8MatVecRows(b, loc, weight, input, firstRow, rows, init);
  // The input rounded once per call.
  Int8Input rounded = quantizeInt8Input(b, loc, input);
  if (int64_t lanes = rowGroupsOf(weight.getType())) {
    // Whole groups: the tiles split on them (TilingPolicy.cpp).
    return int8RowGroupMatVec(
        b, loc, options_.int8Form, lanes, weight, rounded,
        getValueOrCreateConstantIndexOp(b, loc, firstRow),
        getValueOrCreateConstantIndexOp(b, loc, divIndex(b, loc, rows, lanes)), init,
        rowGroupPrefetchBytes(getElementTypeOrSelf(weight.getType()), options_));
  }
  // Blocks of 4 rows, then the leftover rows one by one with the same
  // kernel.
  return blocksThenTail(
      b, loc, firstRow, rows, kDecodeRowBlock, init,
      [&](Value first, Value blocks, Value out) {
        return int8DotMatVec(b, loc, options_.int8Form, kDecodeRowBlock, weight, rounded, first,
                             blocks, out);
      },
      [&](OpFoldResult first, OpFoldResult count, Value out) {
        return int8DotMatVec(b, loc, options_.int8Form, 1, weight, rounded,
                             getValueOrCreateConstantIndexOp(b, loc, first),
                             getValueOrCreateConstantIndexOp(b, loc, count), out);
      });
}

Value CpuKernelBuilder::q8MatMulRows(OpBuilder &b, Location loc, Value weight, Value input,
                                     OpFoldResult firstRow, OpFoldResult rows, Value liveRows,
                                     Value init) const {
  if (options_.int8Dot && options_.int8MatMul && fitsInt8MatMul(weight.getType()))
    return int8DotMatMul(b, loc, options_.int8Form,
                         int8GroupLanes(options_.int8Dot512, options_.vectorWidth), weight, input,
                         firstRow, rows, liveRows, init);
  // The live token rows rounded in vector registers (the neutral form's
  // scalar loops cost a tenth of a prefill), then the decoding matmul: a
  // batch of one rounds one row, not the step's T.
  return decodingMatMulRows(b, loc, weight, q8RoundTripRows(b, loc, input, liveRows), firstRow,
                            rows, liveRows, init);
}

bool CpuKernelBuilder::fitsMatMulTile(Value weight, Value input) const {
  const MatMulTile tile = matMulTile();
  const int64_t tokens = cast<RankedTensorType>(input.getType()).getDimSize(0);
  const int64_t width = cast<RankedTensorType>(weight.getType()).getDimSize(1);
  return width % tile.lanes == 0 && tokens % tile.tokens == 0;
}

namespace {

/// Rows [firstRow, firstRow + rows) of W (`weight`, f32 or, with
/// `bf16Pairs`, bf16) times X (`input`, likewise) into `init` through
/// blockedMatMul's register tiles, then the rows past the last whole tile
/// by `tail` (first row, row count, that part of the output).
Value registerTiledRows(OpBuilder &b, Location loc, const MatMulTile &tile, Value weight,
                        Value input, OpFoldResult firstRow, OpFoldResult rows, Value liveRows,
                        Value init, bool prefetch, bool bf16Pairs,
                        const std::function<Value(OpFoldResult, OpFoldResult, Value)> &tail) {
  const int64_t tokens = cast<RankedTensorType>(input.getType()).getDimSize(0);
  OpFoldResult blocks = divIndex(b, loc, rows, tile.rows);
  OpFoldResult blocked = mulIndex(b, loc, blocks, tile.rows);
  Value tokenBlocks = arith::ConstantIndexOp::create(b, loc, tokens / tile.tokens);
  Value tailTokens;
  if (liveRows) {
    // floor(live rows / tile.tokens) whole tiles, the rest one by one: each
    // element is summed the same way whichever rows are live.
    Value live =
        arith::MinUIOp::create(b, loc, liveRows, arith::ConstantIndexOp::create(b, loc, tokens));
    tokenBlocks =
        arith::DivUIOp::create(b, loc, live, arith::ConstantIndexOp::create(b, loc, tile.tokens));
    tailTokens =
        arith::RemUIOp::create(b, loc, live, arith::ConstantIndexOp::create(b, loc, tile.tokens));
  }
  Value result =
      blockedMatMul(b, loc, tile, weight, input, getValueOrCreateConstantIndexOp(b, loc, firstRow),
                    getValueOrCreateConstantIndexOp(b, loc, blocks), tokenBlocks, tailTokens, init,
                    prefetch, bf16Pairs);
  OpFoldResult tailRows = subIndex(b, loc, rows, blocked);
  if (getConstantIntValue(tailRows) == 0)
    return result;
  // The leftover columns of the result, computed in place.
  SmallVector<OpFoldResult> offsets = {b.getIndexAttr(0), blocked};
  SmallVector<OpFoldResult> sizes = {b.getIndexAttr(tokens), tailRows};
  SmallVector<OpFoldResult> strides = {b.getIndexAttr(1), b.getIndexAttr(1)};
  Value tailOut = tensor::ExtractSliceOp::create(b, loc, result, offsets, sizes, strides);
  Value rest = tail(addIndex(b, loc, firstRow, blocked), tailRows, tailOut);
  return tensor::InsertSliceOp::create(b, loc, rest, result, offsets, sizes, strides);
}

} // namespace

Value CpuKernelBuilder::matMulRows(OpBuilder &b, Location loc, Value weight, Value input,
                                   OpFoldResult firstRow, OpFoldResult rows, Value liveRows,
                                   Value init) const {
  if (!fitsMatMulTile(weight, input))
    return KernelBuilder::matMulRows(b, loc, weight, input, firstRow, rows, liveRows, init);
  return registerTiledRows(
      b, loc, matMulTile(), weight, input, firstRow, rows, liveRows, init, options_.prefetchWeights,
      /*bf16Pairs=*/false, [&](OpFoldResult first, OpFoldResult count, Value out) {
        return KernelBuilder::matMulRows(b, loc, weight, input, first, count, liveRows, out);
      });
}

Value CpuKernelBuilder::bf16MatMulRows(OpBuilder &b, Location loc, Value weight, Value input,
                                       OpFoldResult firstRow, OpFoldResult rows, Value liveRows,
                                       Value init) const {
  const MatMulTile tile = matMulTile();
  const int64_t tokens = cast<RankedTensorType>(input.getType()).getDimSize(0);
  const int64_t width = cast<RankedTensorType>(weight.getType()).getDimSize(1);
  if (!options_.bf16Dot || tile.lanes < 8 || width % (2 * tile.lanes) != 0 ||
      tokens % tile.tokens != 0)
    // The rounded rows through the decoding matmul (a stack copy: the
    // neutral form's per-element rounding in scalar loops is slower).
    return decodingMatMulRows(b, loc, weight, bf16RoundTrip(b, loc, input), firstRow, rows,
                              liveRows, init);
  // The token rows rounded to bf16 once; register tiles of bf16 pairs; the
  // rows past the last whole tile in the neutral form, rounded alike.
  return registerTiledRows(
      b, loc, tile, weightStorage(weight), roundToElement(b, loc, input, b.getBF16Type()), firstRow,
      rows, liveRows, init, options_.prefetchWeights, /*bf16Pairs=*/true,
      [&](OpFoldResult first, OpFoldResult count, Value out) {
        return KernelBuilder::bf16MatMulRows(b, loc, weight, input, first, count, liveRows, out);
      });
}

Value CpuKernelBuilder::decodingMatMulRows(OpBuilder &b, Location loc, Value weight, Value input,
                                           OpFoldResult firstRow, OpFoldResult rows, Value liveRows,
                                           Value init) const {
  if (!fitsMatMulTile(weight, input))
    return KernelBuilder::decodingMatMulRows(b, loc, weight, input, firstRow, rows, liveRows, init);
  const int64_t tokens = cast<RankedTensorType>(input.getType()).getDimSize(0);
  const int64_t width = cast<RankedTensorType>(weight.getType()).getDimSize(1);
  const bool inRegisters = decodesInRegisters(weight.getType(), options_.vectorWidth);
  // Weight rows decoded kDecodedRows at a time into a stack buffer, once
  // for all T token rows, then multiplied by the f32 register tiles: the
  // decoding costs a T-th of what decoding each weight per token would.
  auto tiled = [&](OpBuilder &ob, Location ol, OpFoldResult from, OpFoldResult count,
                   Value out) -> Value {
    const int64_t chunk = kDecodedRows;
    Value buffer = scratchSlice(ob, ol, {chunk, width},
                                {ob.getIndexAttr(chunk), ob.getIndexAttr(width)}, std::nullopt);
    Value zero = arith::ConstantIndexOp::create(ob, ol, 0);
    Value step = arith::ConstantIndexOp::create(ob, ol, chunk);
    Value total = getValueOrCreateConstantIndexOp(ob, ol, count);
    Value first = getValueOrCreateConstantIndexOp(ob, ol, from);
    auto loop = scf::ForOp::create(
        ob, ol, zero, total, step, ValueRange{out, buffer},
        [&](OpBuilder &nb, Location l, Value at, ValueRange carried) {
          Value n = arith::MinUIOp::create(nb, l, step, arith::SubIOp::create(nb, l, total, at));
          SmallVector<OpFoldResult> origin = {nb.getIndexAttr(0), nb.getIndexAttr(0)};
          SmallVector<OpFoldResult> ones = {nb.getIndexAttr(1), nb.getIndexAttr(1)};
          SmallVector<OpFoldResult> rowSizes = {n, nb.getIndexAttr(width)};
          Value rowsOf = tensor::ExtractSliceOp::create(nb, l, carried[1], origin, rowSizes, ones);
          Value row = arith::AddIOp::create(nb, l, first, at);
          Value decoded = inRegisters ? decodeRowsInRegisters(nb, l, options_.vectorWidth, weight,
                                                              row, n, rowsOf)
                                      : decodedRows(nb, l, weight, row, rowsOf);
          Value chunkRows =
              tensor::InsertSliceOp::create(nb, l, decoded, carried[1], origin, rowSizes, ones);
          SmallVector<OpFoldResult> outOffsets = {nb.getIndexAttr(0), at};
          SmallVector<OpFoldResult> outSizes = {nb.getIndexAttr(tokens), n};
          Value outPart =
              tensor::ExtractSliceOp::create(nb, l, carried[0], outOffsets, outSizes, ones);
          Value product =
              matMulRows(nb, l, chunkRows, input, nb.getIndexAttr(0), n, liveRows, outPart);
          Value result =
              tensor::InsertSliceOp::create(nb, l, product, carried[0], outOffsets, outSizes, ones);
          scf::YieldOp::create(nb, l, ValueRange{result, chunkRows});
        });
    return loop.getResult(0);
  };
  if (!liveRows || !inRegisters)
    return tiled(b, loc, firstRow, rows, init);
  // A batch step with one live row (one sequence decoding): its whole tiles'
  // rows as a matrix-vector product that decodes in registers and sums as
  // the tiles do (no buffer, no tile over absent tokens), the rows past
  // them as before; the logits are those the row gets among others.
  // (Straight-line code whose trip counts depend on the row count: an
  // scf.if between the two forms would copy the output. The fill gives the
  // output one use, so that it still bufferizes into the kernel's.)
  init = linalg::FillOp::create(b, loc, ValueRange{f32Constant(b, loc, 0.0f)}, ValueRange{init})
             ->getResult(0);
  const int64_t tileRows = matMulTile().rows;
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value single = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, liveRows, one);
  Value whole = getValueOrCreateConstantIndexOp(
      b, loc, mulIndex(b, loc, divIndex(b, loc, rows, tileRows), tileRows));
  Value blocked =
      arith::SelectOp::create(b, loc, single, whole, arith::ConstantIndexOp::create(b, loc, 0));
  SmallVector<OpFoldResult> zeros = {b.getIndexAttr(0), b.getIndexAttr(0)};
  SmallVector<OpFoldResult> ones = {b.getIndexAttr(1), b.getIndexAttr(1)};
  SmallVector<OpFoldResult> firstRowSizes = {b.getIndexAttr(1), blocked};
  auto vectorType = RankedTensorType::get({ShapedType::kDynamic}, b.getF32Type());
  Value rowOut =
      tensor::ExtractSliceOp::create(b, loc, vectorType, init, zeros, firstRowSizes, ones);
  Value sums = decodedWeightsMatVec(
      b, loc, options_.vectorWidth, kDecodeRowBlock, weight, input,
      getValueOrCreateConstantIndexOp(b, loc, firstRow),
      arith::DivUIOp::create(b, loc, blocked,
                             arith::ConstantIndexOp::create(b, loc, kDecodeRowBlock)),
      rowOut);
  Value out = tensor::InsertSliceOp::create(b, loc, sums, init, zeros, firstRowSizes, ones);
  // The other rows (all of them with more live rows) through the tiles.
  Value rest =
      arith::SubIOp::create(b, loc, getValueOrCreateConstantIndexOp(b, loc, rows), blocked);
  SmallVector<OpFoldResult> offsets = {b.getIndexAttr(0), blocked};
  SmallVector<OpFoldResult> sizes = {b.getIndexAttr(tokens), rest};
  Value restOut = tensor::ExtractSliceOp::create(b, loc, out, offsets, sizes, ones);
  Value restRows = tiled(b, loc, addIndex(b, loc, firstRow, blocked), rest, restOut);
  return tensor::InsertSliceOp::create(b, loc, restRows, out, offsets, sizes, ones);
}

Value CpuKernelBuilder::attentionScores(OpBuilder &b, Location loc, Value query, Value keys,
                                        Value init) const {
  if (Value scores = smallHeadScores(b, loc, query, keys, init))
    return scores;
  if (Value scores = wideHeadScores(b, loc, query, keys, init))
    return scores;
  return KernelBuilder::attentionScores(b, loc, query, keys, init);
}

Value CpuKernelBuilder::attentionWeightedSum(OpBuilder &b, Location loc, Value probs, Value values,
                                             Value init) const {
  if (Value sum = smallHeadWeightedSum(b, loc, probs, values, init))
    return sum;
  if (Value sum = wideHeadWeightedSum(b, loc, probs, values, init))
    return sum;
  return KernelBuilder::attentionWeightedSum(b, loc, probs, values, init);
}

int64_t CpuKernelBuilder::attentionRowBlock(int64_t group, int64_t headDim) const {
  return options_.attentionRowBlocks ? wideHeadRowBlock(group, headDim) : 1;
}

} // namespace mlir::quill
