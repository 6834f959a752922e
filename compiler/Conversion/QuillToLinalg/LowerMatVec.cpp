// quill.linear / quill.logits -> matrix-vector linalg.generic ops over the
// (possibly tiled) rows of the weight.
//
// Decode streams every weight once per token, so this kernel decides decode
// speed. One row at a time is a single sequential read stream, which tops
// out well below the memory bandwidth; so rows are taken in blocks of
// kRowBlock, each row keeping kLanes partial sums:
//   for each block: for k by kLanes: for row in block: acc[row] += W[row, k:] * x[k:]
// built directly as vector ops: kRowBlock vector accumulators (registers)
// fed by kRowBlock concurrent weight streams. Rows left over after the last whole block, and
// widths that are not a multiple of kLanes, take the plain one-row form.
#include "compiler/Conversion/QuillToLinalg/LaneReduction.h"
#include "compiler/Conversion/QuillToLinalg/LinalgBuilders.h"
#include "compiler/Conversion/QuillToLinalg/QuillToLinalg.h"
#include "dialects/Quill/IR/QuillDialect.h"

#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::quill;

namespace {

constexpr int64_t kRowBlock = 8; ///< Weight rows streamed together.
constexpr int64_t kLanes = 16;   ///< Partial sums per row: one AVX-512 vector.

using utils::IteratorType;

/// Index arithmetic that stays a static attribute when its inputs are.
OpFoldResult indexOp(OpBuilder &b, Location loc, OpFoldResult x, OpFoldResult y,
                     function_ref<int64_t(int64_t, int64_t)> fold,
                     function_ref<Value(Value, Value)> build) {
  auto cx = getConstantIntValue(x), cy = getConstantIntValue(y);
  if (cx && cy)
    return b.getIndexAttr(fold(*cx, *cy));
  return build(getValueOrCreateConstantIndexOp(b, loc, x),
               getValueOrCreateConstantIndexOp(b, loc, y));
}
OpFoldResult mulIndex(OpBuilder &b, Location loc, OpFoldResult x, int64_t k) {
  if (k == 1)
    return x;
  return indexOp(b, loc, x, b.getIndexAttr(k), [](int64_t p, int64_t q) { return p * q; },
                 [&](Value p, Value q) { return arith::MulIOp::create(b, loc, p, q).getResult(); });
}
OpFoldResult divIndex(OpBuilder &b, Location loc, OpFoldResult x, int64_t k) {
  return indexOp(b, loc, x, b.getIndexAttr(k), [](int64_t p, int64_t q) { return p / q; },
                 [&](Value p, Value q) { return arith::DivUIOp::create(b, loc, p, q).getResult(); });
}
OpFoldResult addIndex(OpBuilder &b, Location loc, OpFoldResult x, OpFoldResult y) {
  return indexOp(b, loc, x, y, [](int64_t p, int64_t q) { return p + q; },
                 [&](Value p, Value q) { return arith::AddIOp::create(b, loc, p, q).getResult(); });
}
OpFoldResult subIndex(OpBuilder &b, Location loc, OpFoldResult x, OpFoldResult y) {
  return indexOp(b, loc, x, y, [](int64_t p, int64_t q) { return p - q; },
                 [&](Value p, Value q) { return arith::SubIOp::create(b, loc, p, q).getResult(); });
}

/// y[r] = sum_k W[r, k] * x[k] over all rows of `weight`, one row at a time.
Value rowByRowMatVec(OpBuilder &b, Location loc, Value weight, Value input, OpFoldResult rows,
                     Value init) {
  MLIRContext *ctx = b.getContext();
  AffineExpr r, k;
  bindDims(ctx, r, k);
  auto fastMath = reductionFastMath(b);
  return buildGeneric(
      b, loc, ValueRange{weight, input},
      linalg::FillOp::create(b, loc, ValueRange{f32Constant(b, loc, 0.0f)}, ValueRange{init})
          ->getResult(0),
      {AffineMap::get(2, 0, {r, k}, ctx), AffineMap::get(2, 0, {k}, ctx),
       AffineMap::get(2, 0, {r}, ctx)},
      {IteratorType::parallel, IteratorType::reduction},
      multiplyAccumulate(fastMath));
}

/// Rows [first, first + blocks * kRowBlock) of W @ x into `init`, the width
/// a multiple of kLanes: per block of rows, one vector accumulator per row
/// carried through the loop over the width (in registers), fed by one
/// vector load per row and step; then each row's lanes are summed.
Value blockedMatVec(OpBuilder &b, Location loc, Value weight, Value input, Value first,
                    Value blocks, Value init) {
  int64_t width = cast<RankedTensorType>(weight.getType()).getDimSize(1);
  auto f32 = b.getF32Type();
  auto lanes = VectorType::get({kLanes}, f32);
  auto fastMath = reductionFastMath(b);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value blockRows = arith::ConstantIndexOp::create(b, loc, kRowBlock);
  Value laneCount = arith::ConstantIndexOp::create(b, loc, kLanes);
  Value steps = arith::ConstantIndexOp::create(b, loc, width / kLanes);
  Value padding = f32Constant(b, loc, 0.0f);
  Value zeros = arith::ConstantOp::create(b, loc, DenseElementsAttr::get(lanes, 0.0f));
  SmallVector<bool> inBounds = {true};
  auto rows = scf::ForOp::create(
      b, loc, zero, blocks, one, ValueRange{init},
      [&](OpBuilder &nb, Location l, Value block, ValueRange carried) {
        Value offset = arith::MulIOp::create(nb, l, block, blockRows);
        Value row = arith::AddIOp::create(nb, l, first, offset);
        SmallVector<Value> rowIndex;
        for (int64_t r = 0; r < kRowBlock; ++r)
          rowIndex.push_back(
              arith::AddIOp::create(nb, l, row, arith::ConstantIndexOp::create(nb, l, r)));
        SmallVector<Value> accInit(kRowBlock, zeros);
        auto columns = scf::ForOp::create(
            nb, l, zero, steps, one, accInit,
            [&](OpBuilder &ib, Location il, Value step, ValueRange acc) {
              Value column = arith::MulIOp::create(ib, il, step, laneCount);
              Value x = vector::TransferReadOp::create(ib, il, lanes, input, ValueRange{column},
                                                       padding, inBounds);
              SmallVector<Value> next;
              for (int64_t r = 0; r < kRowBlock; ++r) {
                Value w = vector::TransferReadOp::create(
                    ib, il, lanes, weight, ValueRange{rowIndex[r], column}, padding, inBounds);
                next.push_back(vector::FMAOp::create(ib, il, lanes, w, x, acc[r]));
              }
              scf::YieldOp::create(ib, il, next);
            });
        SmallVector<Value> sums;
        for (int64_t r = 0; r < kRowBlock; ++r)
          sums.push_back(vector::ReductionOp::create(nb, l, vector::CombiningKind::ADD,
                                                     columns.getResult(r), Value(), fastMath.getValue()));
        Value block8 = vector::FromElementsOp::create(
            nb, l, VectorType::get({kRowBlock}, f32), sums);
        Value y = vector::TransferWriteOp::create(nb, l, block8, carried[0], ValueRange{offset},
                                                  inBounds)
                      .getResult();
        scf::YieldOp::create(nb, l, ValueRange{y});
      });
  return rows.getResult(0);
}

constexpr int64_t kTokenBlock = 2; ///< Token rows per register tile of a matmul.
constexpr int64_t kMatMulRows = 8;  ///< Weight rows per register tile of a matmul.
constexpr int64_t kPanel = 1024;    ///< Columns per panel of a matmul (4 KiB rows).

/// out[t, r] = sum_k X[t, k] * W[r, k] over all of `weight`'s rows.
Value rowByRowMatMul(OpBuilder &b, Location loc, Value weight, Value input, Value init) {
  MLIRContext *ctx = b.getContext();
  AffineExpr t, r, k;
  bindDims(ctx, t, r, k);
  auto fastMath = reductionFastMath(b);
  return buildGeneric(
      b, loc, ValueRange{input, weight},
      linalg::FillOp::create(b, loc, ValueRange{f32Constant(b, loc, 0.0f)}, ValueRange{init})
          ->getResult(0),
      {AffineMap::get(3, 0, {t, k}, ctx), AffineMap::get(3, 0, {r, k}, ctx),
       AffineMap::get(3, 0, {t, r}, ctx)},
      {IteratorType::parallel, IteratorType::parallel, IteratorType::reduction},
      multiplyAccumulate(fastMath));
}

/// Rows [first, first + blocks * kMatMulRows) of W times the first
/// `tokenBlocks` * kTokenBlock (+ `tailTokens`, when given) token rows of X,
/// into columns
/// [0, blocks * kMatMulRows) of `init` ([T, rows]): register
/// tiles of kTokenBlock tokens x kMatMulRows weight rows, each a vector of
/// kLanes partial sums carried through the loop over the width. Each weight
/// row is read from memory once per chunk of T tokens: the prefill's gain.
Value blockedMatMul(OpBuilder &b, Location loc, Value weight, Value input, Value first,
                    Value blocks, Value tokenBlocks, Value tailTokens, Value init, bool prefetch) {
  // The width is taken in panels of kPanel columns (the outermost loop), so
  // the token rows' panel stays in L2 while every weight block passes over
  // it; each panel's dot products are added into the output.
  int64_t width = cast<RankedTensorType>(weight.getType()).getDimSize(1);
  auto f32 = b.getF32Type();
  auto lanes = VectorType::get({kLanes}, f32);
  auto fastMath = reductionFastMath(b);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value padding = f32Constant(b, loc, 0.0f);
  Value zeros = arith::ConstantOp::create(b, loc, DenseElementsAttr::get(lanes, 0.0f));
  SmallVector<bool> inBounds = {true};
  auto constant = [&](OpBuilder &nb, Location l, int64_t v) -> Value {
    return arith::ConstantIndexOp::create(nb, l, v);
  };
  const int64_t totalSteps = width / kLanes, panelSteps = kPanel / kLanes;
  // The weight's memref, to prefetch the next block of rows while this one
  // is computed (the hardware prefetcher does not run ahead across the
  // block's 8 strided row streams).
  Value weightMemref;
  if (auto toTensor = weight.getDefiningOp<bufferization::ToTensorOp>(); toTensor && prefetch)
    weightMemref = toTensor.getBuffer();
  const int64_t weightRows = cast<RankedTensorType>(weight.getType()).getDimSize(0);
  const int64_t panels = (totalSteps + panelSteps - 1) / panelSteps;
  init = linalg::FillOp::create(b, loc, ValueRange{f32Constant(b, loc, 0.0f)}, ValueRange{init})
             ->getResult(0);
  auto panelLoop = scf::ForOp::create(
      b, loc, zero, constant(b, loc, panels), one, ValueRange{init},
      [&](OpBuilder &pb, Location pl, Value panel, ValueRange panelCarried) {
  Value stepBegin = arith::MulIOp::create(pb, pl, panel, constant(pb, pl, panelSteps));
  Value stepEnd = arith::MinUIOp::create(
      pb, pl, arith::AddIOp::create(pb, pl, stepBegin, constant(pb, pl, panelSteps)),
      constant(pb, pl, totalSteps));
  auto rowBlocks = scf::ForOp::create(
      pb, pl, zero, blocks, one, ValueRange{panelCarried[0]},
      [&](OpBuilder &nb, Location l, Value block, ValueRange rowCarried) {
        Value column = arith::MulIOp::create(nb, l, block, constant(nb, l, kMatMulRows));
        Value row = arith::AddIOp::create(nb, l, first, column);
        // Register tiles of `tile` tokens: `count` of them from token `from`.
        auto tokenTiles = [&](Value out, Value from, Value count, int64_t tile) {
        auto tokenLoop = scf::ForOp::create(
            nb, l, zero, count, one, ValueRange{out},
            [&](OpBuilder &tb, Location tl, Value tokenBlock, ValueRange carried) {
              Value token0 = arith::AddIOp::create(
                  tb, tl, from, arith::MulIOp::create(tb, tl, tokenBlock, constant(tb, tl, tile)));
              SmallVector<Value> tokenIndex, rowIndex;
              for (int64_t i = 0; i < tile; ++i)
                tokenIndex.push_back(arith::AddIOp::create(tb, tl, token0, constant(tb, tl, i)));
              for (int64_t j = 0; j < kMatMulRows; ++j)
                rowIndex.push_back(arith::AddIOp::create(tb, tl, row, constant(tb, tl, j)));
              SmallVector<Value> accInit(tile * kMatMulRows, zeros);
              auto steps = scf::ForOp::create(
                  tb, tl, stepBegin, stepEnd, one, accInit,
                  [&](OpBuilder &ib, Location il, Value step, ValueRange acc) {
                    Value k = arith::MulIOp::create(ib, il, step, constant(ib, il, kLanes));
                    if (weightMemref) {
                      // Token tile t fetches row t % 8 of the next block.
                      Value ahead = arith::AddIOp::create(
                          ib, il, row,
                          arith::AddIOp::create(
                              ib, il, constant(ib, il, kMatMulRows),
                              arith::RemUIOp::create(ib, il, tokenBlock,
                                                     constant(ib, il, kMatMulRows))));
                      ahead = arith::MinUIOp::create(ib, il, ahead,
                                                     constant(ib, il, weightRows - 1));
                      memref::PrefetchOp::create(ib, il, weightMemref, ValueRange{ahead, k},
                                                 /*isWrite=*/false, /*localityHint=*/3,
                                                 /*isDataCache=*/true);
                    }
                    SmallVector<Value> x, w, next;
                    for (int64_t i = 0; i < tile; ++i)
                      x.push_back(vector::TransferReadOp::create(
                          ib, il, lanes, input, ValueRange{tokenIndex[i], k}, padding, inBounds));
                    for (int64_t j = 0; j < kMatMulRows; ++j)
                      w.push_back(vector::TransferReadOp::create(
                          ib, il, lanes, weight, ValueRange{rowIndex[j], k}, padding, inBounds));
                    for (int64_t i = 0; i < tile; ++i)
                      for (int64_t j = 0; j < kMatMulRows; ++j)
                        next.push_back(vector::FMAOp::create(ib, il, lanes, w[j], x[i],
                                                             acc[i * kMatMulRows + j]));
                    scf::YieldOp::create(ib, il, next);
                  });
              Value out = carried[0];
              for (int64_t i = 0; i < tile; ++i) {
                SmallVector<Value> sums;
                for (int64_t j = 0; j < kMatMulRows; ++j)
                  sums.push_back(vector::ReductionOp::create(
                      tb, tl, vector::CombiningKind::ADD, steps.getResult(i * kMatMulRows + j),
                      Value(), fastMath.getValue()));
                auto tileType = VectorType::get({kMatMulRows}, f32);
                Value sum = vector::FromElementsOp::create(tb, tl, tileType, sums);
                Value before = vector::TransferReadOp::create(
                    tb, tl, tileType, out, ValueRange{tokenIndex[i], column}, padding, inBounds);
                sum = arith::AddFOp::create(tb, tl, before, sum);
                out = vector::TransferWriteOp::create(tb, tl, sum, out,
                                                      ValueRange{tokenIndex[i], column}, inBounds)
                          .getResult();
              }
              scf::YieldOp::create(tb, tl, ValueRange{out});
            });
        return tokenLoop.getResult(0);
        };
        Value out = tokenTiles(rowCarried[0], zero, tokenBlocks, kTokenBlock);
        // The live rows past the last whole tile, one token per tile: each
        // element is summed exactly as in a whole tile.
        if (tailTokens)
          out = tokenTiles(out, arith::MulIOp::create(nb, l, tokenBlocks, constant(nb, l, kTokenBlock)),
                           tailTokens, 1);
        scf::YieldOp::create(nb, l, ValueRange{out});
      });
  scf::YieldOp::create(pb, pl, ValueRange{rowBlocks.getResult(0)});
      });
  return panelLoop.getResult(0);
}

/// X[T, K] @ W[firstRow : firstRow + rows]^T -> [T, rows]: register tiles
/// where the shapes allow, the leftover weight rows with a plain generic.
/// With `liveRows`, the register tiles cover just the live token rows (a
/// batch step's later rows are unused): whole tiles, then one-token tiles;
/// each element is summed the same way whichever rows are live.
Value matMulRows(OpBuilder &b, Location loc, Value weight, Value input,
                          OpFoldResult firstRow, OpFoldResult rows, int64_t width,
                          bool intermediate, Value liveRows, bool prefetch, LaneMode lanes) {
    int64_t tokens = cast<RankedTensorType>(input.getType()).getDimSize(0);
    int64_t weightRows = cast<RankedTensorType>(weight.getType()).getDimSize(0);
    auto sliceRows = [&](OpFoldResult from, OpFoldResult count) {
      return tensor::ExtractSliceOp::create(
                 b, loc, weight, ArrayRef<OpFoldResult>{from, b.getIndexAttr(0)},
                 ArrayRef<OpFoldResult>{count, b.getIndexAttr(width)},
                 ArrayRef<OpFoldResult>{b.getIndexAttr(1), b.getIndexAttr(1)})
          .getResult();
    };
    auto emptyRows = [&](OpFoldResult count) -> Value {
      return tensor::EmptyOp::create(b, loc, ArrayRef<OpFoldResult>{b.getIndexAttr(tokens), count},
                                     b.getF32Type());
    };
    Value init = intermediate ? scratchSlice(b, loc, {tokens, weightRows},
                                             {b.getIndexAttr(tokens), rows}, std::nullopt)
                              : emptyRows(rows);
    if (lanes != LaneMode::None)
      return laneMatMulRows(b, loc, lanes, weight, input, firstRow, rows, liveRows, init);
    // The plain form for shapes the register tiles do not fit: with live
    // rows, over those rows only (a batch of one must not pay for 64).
    auto plainRows = [&](Value rowsOfWeight, OpFoldResult count, Value out) -> Value {
      if (!liveRows)
        return rowByRowMatMul(b, loc, rowsOfWeight, input, out);
      OpFoldResult live =
          arith::MinUIOp::create(b, loc, liveRows, arith::ConstantIndexOp::create(b, loc, tokens))
              .getResult();
      SmallVector<OpFoldResult> zeros = {b.getIndexAttr(0), b.getIndexAttr(0)};
      SmallVector<OpFoldResult> ones = {b.getIndexAttr(1), b.getIndexAttr(1)};
      // Filled first: the dead rows get zeros, and the output stays the
      // kernel's destination (an empty tensor sliced directly would not).
      out = linalg::FillOp::create(b, loc, ValueRange{f32Constant(b, loc, 0.0f)}, ValueRange{out})
                ->getResult(0);
      Value liveInput = tensor::ExtractSliceOp::create(
          b, loc, input, zeros, ArrayRef<OpFoldResult>{live, b.getIndexAttr(width)}, ones);
      SmallVector<OpFoldResult> outSizes = {live, count};
      Value liveOut = tensor::ExtractSliceOp::create(b, loc, out, zeros, outSizes, ones);
      Value part = rowByRowMatMul(b, loc, rowsOfWeight, liveInput, liveOut);
      return tensor::InsertSliceOp::create(b, loc, part, out, zeros, outSizes, ones);
    };
    if (width % kLanes != 0 || tokens % kTokenBlock != 0)
      return plainRows(sliceRows(firstRow, rows), rows, init);
    OpFoldResult blocks = divIndex(b, loc, rows, kMatMulRows);
    OpFoldResult blocked = mulIndex(b, loc, blocks, kMatMulRows);
    Value tokenBlocks = arith::ConstantIndexOp::create(b, loc, tokens / kTokenBlock);
    Value tailTokens;
    if (liveRows) {
      // floor(live rows / kTokenBlock) whole tiles, the rest one by one.
      Value live = arith::MinUIOp::create(b, loc, liveRows,
                                          arith::ConstantIndexOp::create(b, loc, tokens));
      tokenBlocks = arith::DivUIOp::create(
          b, loc, live, arith::ConstantIndexOp::create(b, loc, kTokenBlock));
      tailTokens = arith::RemUIOp::create(
          b, loc, live, arith::ConstantIndexOp::create(b, loc, kTokenBlock));
    }
    Value result = blockedMatMul(b, loc, weight, input,
                                 getValueOrCreateConstantIndexOp(b, loc, firstRow),
                                 getValueOrCreateConstantIndexOp(b, loc, blocks), tokenBlocks,
                                 tailTokens, init, prefetch);
    OpFoldResult tailRows = subIndex(b, loc, rows, blocked);
    if (getConstantIntValue(tailRows) == 0)
      return result;
    // The leftover columns of the result, computed in place.
    Value tailOut = tensor::ExtractSliceOp::create(
        b, loc, result, ArrayRef<OpFoldResult>{b.getIndexAttr(0), blocked},
        ArrayRef<OpFoldResult>{b.getIndexAttr(tokens), tailRows},
        ArrayRef<OpFoldResult>{b.getIndexAttr(1), b.getIndexAttr(1)});
    Value tail =
        plainRows(sliceRows(addIndex(b, loc, firstRow, blocked), tailRows), tailRows, tailOut);
    return tensor::InsertSliceOp::create(
        b, loc, tail, result, ArrayRef<OpFoldResult>{b.getIndexAttr(0), blocked},
        ArrayRef<OpFoldResult>{b.getIndexAttr(tokens), tailRows},
        ArrayRef<OpFoldResult>{b.getIndexAttr(1), b.getIndexAttr(1)});
  }

  /// W[firstRow : firstRow + rowCount] @ x: in row blocks where the width
  /// allows, the leftover rows one at a time.
Value matVecRows(OpBuilder &b, Location loc, Value weight, Value input,
                          OpFoldResult firstRow, OpFoldResult rows, int64_t width,
                          bool intermediate, LaneMode lanes) {
    auto sliceRows = [&](OpFoldResult from, OpFoldResult count) {
      return tensor::ExtractSliceOp::create(
                 b, loc, weight, ArrayRef<OpFoldResult>{from, b.getIndexAttr(0)},
                 ArrayRef<OpFoldResult>{count, b.getIndexAttr(width)},
                 ArrayRef<OpFoldResult>{b.getIndexAttr(1), b.getIndexAttr(1)})
          .getResult();
    };
    int64_t weightRows = cast<RankedTensorType>(weight.getType()).getDimSize(0);
    auto outputInit = [&]() -> Value {
      if (intermediate)
        return scratchSlice(b, loc, {weightRows}, {rows}, std::nullopt);
      return tensor::EmptyOp::create(b, loc, ArrayRef<OpFoldResult>{rows}, b.getF32Type());
    };
    if (lanes != LaneMode::None)
      return laneMatVecRows(b, loc, lanes, weight, input, firstRow, rows, outputInit());
    if (width % kLanes != 0)
      return rowByRowMatVec(b, loc, sliceRows(firstRow, rows), input, rows, outputInit());
    OpFoldResult blocks = divIndex(b, loc, rows, kRowBlock);
    OpFoldResult blocked = mulIndex(b, loc, blocks, kRowBlock);
    Value result = blockedMatVec(b, loc, weight, input,
                                 getValueOrCreateConstantIndexOp(b, loc, firstRow),
                                 getValueOrCreateConstantIndexOp(b, loc, blocks), outputInit());
    OpFoldResult tailRows = subIndex(b, loc, rows, blocked);
    if (getConstantIntValue(tailRows) == 0)
      return result;
    OpFoldResult tailFirst = addIndex(b, loc, firstRow, blocked);
    Value tail = rowByRowMatVec(
        b, loc, sliceRows(tailFirst, tailRows), input, tailRows,
        tensor::EmptyOp::create(b, loc, ArrayRef<OpFoldResult>{tailRows}, b.getF32Type()));
    return tensor::InsertSliceOp::create(b, loc, tail, result, ArrayRef<OpFoldResult>{blocked},
                                         ArrayRef<OpFoldResult>{tailRows},
                                         ArrayRef<OpFoldResult>{b.getIndexAttr(1)});
  }

template <typename OpTy> struct LowerMatVec : OpRewritePattern<OpTy> {
  LowerMatVec(MLIRContext *ctx, bool prefetch, LaneMode lanes)
      : OpRewritePattern<OpTy>(ctx), prefetch(prefetch), lanes(lanes) {}
  bool prefetch; ///< Matmuls prefetch the next block of weight rows.
  LaneMode lanes; ///< How the dot products' reductions are spread.

  LogicalResult matchAndRewrite(OpTy op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    PatternRewriter &b = rewriter;
    Value weight = op.getWeight();
    auto weightType = cast<RankedTensorType>(weight.getType());
    int64_t width = weightType.getDimSize(1);
    int64_t perOutput = op.getRowsPerOutput();
    // Outputs [first, first + outputs); weight rows perOutput times that.
    // Sizes stay static attributes when the op is not tiled.
    OpFoldResult first = b.getIndexAttr(0);
    OpFoldResult outputs = b.getIndexAttr(weightType.getDimSize(0) / perOutput);
    if (op.isTiled()) {
      first = op.getTile()[0];
      outputs = arith::SubIOp::create(b, loc, op.getTile()[1], op.getTile()[0]).getResult();
    }
    OpFoldResult firstRow = mulIndex(b, loc, first, perOutput);
    OpFoldResult rowCount = mulIndex(b, loc, outputs, perOutput);
    // With an epilogue the rows are an intermediate: they go to a fixed-size
    // (stack) buffer instead of the kernel's output.
    auto inputType = cast<RankedTensorType>(op.getInput().getType());
    bool rows = inputType.getRank() == 2; // T token rows: a matmul.
    int64_t tokens = rows ? inputType.getDimSize(0) : 1;
    // A warp's 32 lanes all store the same values: they build the rows in a
    // private (stack) buffer and write the kernel's output once, never
    // reading back what another lane may be rewriting.
    const bool intermediate = op.getSwiglu() || lanes != LaneMode::None;
    Value result = rows ? matMulRows(b, loc, weight, op.getInput(), firstRow, rowCount, width,
                                     intermediate, op.getRows(), prefetch, lanes)
                        : matVecRows(b, loc, weight, op.getInput(), firstRow, rowCount, width,
                                     intermediate, lanes);
    // With live rows, the epilogues run on those rows only (the result's
    // other rows are left undefined): a slice with a dynamic row count.
    Value live = rows ? op.getRows() : Value();
    // (Slices and the final insert use the same size values, so that
    // bufferization sees them as one subset, updated in place.)
    auto liveRows = [&](Value full, std::optional<OpFoldResult> columns) -> Value {
      if (!live)
        return full;
      SmallVector<OpFoldResult> sizes = {live};
      if (columns)
        sizes.push_back(*columns);
      SmallVector<OpFoldResult> zeros(sizes.size(), b.getIndexAttr(0));
      SmallVector<OpFoldResult> ones(sizes.size(), b.getIndexAttr(1));
      return tensor::ExtractSliceOp::create(b, loc, full, zeros, sizes, ones).getResult();
    };
    // The tensor the live rows go back into at the end: the whole result,
    // or (with the SwiGLU epilogue, whose output is narrower) a new one.
    Value whole = result;
    result = liveRows(result, rowCount);
    if (std::optional<APFloat> eps = op.getNormEps()) {
      // The folded RMSNorm: (W' x) times 1/rms(x), row by row. Every tile
      // recomputes the scale from the whole input (a small reduction).
      Value scales = rmsScales(b, loc, lanes, op.getInput(), eps->convertToFloat());
      result = scaleRows(b, loc, result, liveRows(scales, std::nullopt));
    }
    if (op.getSwiglu()) {
      // Rows alternate gate and up: output i = silu(row 2i) * row 2i+1.
      Value raw = result;
      Value two = arith::ConstantIndexOp::create(b, loc, 2);
      Value one = arith::ConstantIndexOp::create(b, loc, 1);
      SmallVector<OpFoldResult> shape;
      if (rows)
        shape.push_back(live ? OpFoldResult(live) : b.getIndexAttr(tokens));
      shape.push_back(outputs);
      Value init = tensor::EmptyOp::create(b, loc, shape, b.getF32Type());
      if (live) {
        // A fixed-size (stack) buffer for all rows, the live ones written.
        int64_t weightRows = cast<RankedTensorType>(weight.getType()).getDimSize(0);
        whole = scratchSlice(b, loc, {tokens, weightRows / 2}, {b.getIndexAttr(tokens), outputs},
                             std::nullopt);
      }
      result = buildElementwise(b, loc, ValueRange{}, init,
                                [&](OpBuilder &nb, Location l, ValueRange) -> Value {
                                  Value i = linalg::IndexOp::create(nb, l, rows ? 1 : 0);
                                  Value g = arith::MulIOp::create(nb, l, i, two);
                                  Value u = arith::AddIOp::create(nb, l, g, one);
                                  SmallVector<Value> at, atUp;
                                  if (rows) {
                                    Value t = linalg::IndexOp::create(nb, l, 0);
                                    at.push_back(t);
                                    atUp.push_back(t);
                                  }
                                  at.push_back(g);
                                  atUp.push_back(u);
                                  return swigluScalar(nb, l, tensor::ExtractOp::create(nb, l, raw, at),
                                                      tensor::ExtractOp::create(nb, l, raw, atUp));
                                });
    }
    if (Value residual = op.getResidual()) {
      // The residual connection: this op's outputs plus the same elements of r.
      Value part =
          rows ? tensor::ExtractSliceOp::create(
                     b, loc, residual, ArrayRef<OpFoldResult>{b.getIndexAttr(0), first},
                     ArrayRef<OpFoldResult>{live ? OpFoldResult(live) : b.getIndexAttr(tokens),
                                            outputs},
                     ArrayRef<OpFoldResult>{b.getIndexAttr(1), b.getIndexAttr(1)})
                     .getResult()
               : tensor::ExtractSliceOp::create(b, loc, residual, ArrayRef<OpFoldResult>{first},
                                                ArrayRef<OpFoldResult>{outputs},
                                                ArrayRef<OpFoldResult>{b.getIndexAttr(1)})
                     .getResult();
      result = buildElementwise(b, loc, ValueRange{part}, result,
                                [](OpBuilder &nb, Location l, ValueRange args) -> Value {
                                  return arith::AddFOp::create(nb, l, args[0], args[1]);
                                });
    }
    if (live) {
      // Back to the op's row count, in place (so no temporary is needed).
      result = tensor::InsertSliceOp::create(
          b, loc, result, whole, ArrayRef<OpFoldResult>{b.getIndexAttr(0), b.getIndexAttr(0)},
          ArrayRef<OpFoldResult>{live, outputs},
          ArrayRef<OpFoldResult>{b.getIndexAttr(1), b.getIndexAttr(1)});
    }
    if (lanes == LaneMode::Gpu)
      markWarpKernel(op);
    rewriter.replaceOp(op, castTo(b, loc, result, op.getType()));
    return success();
  }

};

/// quill.project_qkv: the rows [first, first + count) (a tile's pairs of
/// rows) of W x (normalized
/// first with norm_eps), Q and K rows rotated, and the K and V rows among
/// them stored into row pos of the caches.
struct LowerProjectQKV : OpRewritePattern<ProjectQKVOp> {
  LowerProjectQKV(MLIRContext *ctx, LaneMode lanes) : OpRewritePattern(ctx), lanes(lanes) {}
  LaneMode lanes; ///< How the dot products' reductions are spread.

  LogicalResult matchAndRewrite(ProjectQKVOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    PatternRewriter &b = rewriter;
    Value weight = op.getWeight();
    int64_t rows = op.getWeight().getType().getDimSize(0);
    int64_t width = op.getWeight().getType().getDimSize(1);
    int64_t queryRows = op.getQueryRows(), kvWidth = op.getKvWidth();
    int64_t headDim = op.getHeadDim();
    float theta = op.getTheta().convertToFloat();
    OpFoldResult first = b.getIndexAttr(0), count = b.getIndexAttr(rows);
    if (op.isTiled()) {
      // The tile counts pairs of rows.
      Value two = arith::ConstantIndexOp::create(b, loc, 2);
      first = arith::MulIOp::create(b, loc, op.getTile()[0], two).getResult();
      count = arith::MulIOp::create(
                  b, loc, arith::SubIOp::create(b, loc, op.getTile()[1], op.getTile()[0]), two)
                  .getResult();
    }
    Value raw = matVecRows(b, loc, weight, op.getInput(), first, count, width,
                           /*intermediate=*/true, lanes);
    if (std::optional<APFloat> eps = op.getNormEps())
      raw = scaleRows(b, loc, raw, rmsScales(b, loc, lanes, op.getInput(), eps->convertToFloat()));

    // Rotate the Q and K rows; V rows pass through.
    Value firstValue = getValueOrCreateConstantIndexOp(b, loc, first);
    Value pos = op.getPos();
    Value init = tensor::EmptyOp::create(b, loc, ArrayRef<OpFoldResult>{count}, b.getF32Type());
    Value y = buildElementwise(
        b, loc, ValueRange{}, init, [&](OpBuilder &nb, Location l, ValueRange) -> Value {
          auto constant = [&](int64_t v) { return arith::ConstantIndexOp::create(nb, l, v); };
          Value i = linalg::IndexOp::create(nb, l, 0);
          Value row = arith::AddIOp::create(nb, l, firstValue, i);
          // Tiles are whole pairs, so a pair never straddles two tiles.
          Value parity = arith::RemUIOp::create(nb, l, i, constant(2));
          Value pairStart = arith::SubIOp::create(nb, l, i, parity);
          Value v0 = tensor::ExtractOp::create(nb, l, raw, ValueRange{pairStart});
          Value v1 = tensor::ExtractOp::create(
              nb, l, raw, ValueRange{arith::AddIOp::create(nb, l, pairStart, constant(1))});
          Value rowPairStart = arith::SubIOp::create(nb, l, row, parity);
          Value d = arith::RemUIOp::create(nb, l, rowPairStart, constant(headDim));
          Value rotated = rotatePair(nb, l, v0, v1, parity, d, pos, headDim, theta);
          Value self = tensor::ExtractOp::create(nb, l, raw, ValueRange{i});
          Value isRotated = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::ult, row,
                                                  constant(queryRows + kvWidth));
          return arith::SelectOp::create(nb, l, isRotated, rotated, self);
        });

    // The K rows [queryRows, queryRows + kvWidth) and V rows after them that
    // fall in this tile go to the caches (possibly none).
    Value last = arith::AddIOp::create(b, loc, firstValue,
                                       getValueOrCreateConstantIndexOp(b, loc, count));
    auto store = [&](Value cache, int64_t partStart, int64_t partEnd) {
      auto clamp = [&](Value v) {
        Value low = arith::ConstantIndexOp::create(b, loc, partStart);
        Value high = arith::ConstantIndexOp::create(b, loc, partEnd);
        return arith::MinSIOp::create(b, loc, arith::MaxSIOp::create(b, loc, v, low), high)
            .getResult();
      };
      Value start = clamp(firstValue), stop = clamp(last);
      Value size = arith::SubIOp::create(b, loc, stop, start);
      Value part = tensor::ExtractSliceOp::create(
          b, loc, y, ArrayRef<OpFoldResult>{arith::SubIOp::create(b, loc, start, firstValue).getResult()},
          ArrayRef<OpFoldResult>{size}, ArrayRef<OpFoldResult>{b.getIndexAttr(1)});
      Value column = arith::SubIOp::create(b, loc, start,
                                           arith::ConstantIndexOp::create(b, loc, partStart));
      return tensor::InsertSliceOp::create(
                 b, loc, part, cache, ArrayRef<OpFoldResult>{pos, column},
                 ArrayRef<OpFoldResult>{b.getIndexAttr(1), size},
                 ArrayRef<OpFoldResult>{b.getIndexAttr(1), b.getIndexAttr(1)})
          .getResult();
    };
    Value keys = store(op.getKeys(), queryRows, queryRows + kvWidth);
    Value values = store(op.getValues(), queryRows + kvWidth, rows);
    if (lanes == LaneMode::Gpu)
      markWarpKernel(op);
    rewriter.replaceOp(op, {castTo(b, loc, y, op.getResult().getType()), keys, values});
    return success();
  }
};

} // namespace

void mlir::quill::populateLowerMatVecPatterns(RewritePatternSet &patterns,
                                              bool prefetchWeights, LaneMode lanes) {
  patterns.add<LowerMatVec<LinearOp>, LowerMatVec<LogitsOp>>(patterns.getContext(),
                                                              prefetchWeights, lanes);
  patterns.add<LowerProjectQKV>(patterns.getContext(), lanes);
}
