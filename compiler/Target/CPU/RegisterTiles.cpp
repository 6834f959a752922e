// The CPU's register-tiled products, built directly as vector ops (the
// microkernel approach, written in MLIR): decode's matrix-vector product
// streams blocks of weight rows together, each row keeping a vector of
// partial sums; prefill's and the batch step's matrix-matrix product keeps
// a tile of (tokens x weight rows) vector accumulators in registers over
// panels of the width, prefetching the next block of weight rows.
#include "compiler/Target/CPU/CpuKernelBuilder.h"

#include "compiler/Conversion/QuillToLinalg/LinalgBuilders.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace mlir::quill {

namespace {
constexpr int64_t kRowBlock = 8; ///< Weight rows streamed together by a matvec.
} // namespace

/// Rows [first, first + blocks * kRowBlock) of W @ x into `init`, the width
/// a multiple of vectorWidth: per block of rows, one vector accumulator per row
/// carried through the loop over the width (in registers), fed by one
/// vector load per row and step; then each row's lanes are summed.
Value blockedMatVec(OpBuilder &b, Location loc, int64_t vectorWidth, Value weight, Value input,
                    Value first, Value blocks, Value init) {
  int64_t width = cast<RankedTensorType>(weight.getType()).getDimSize(1);
  auto f32 = b.getF32Type();
  auto lanes = VectorType::get({vectorWidth}, f32);
  auto fastMath = reductionFastMath(b);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value blockRows = arith::ConstantIndexOp::create(b, loc, kRowBlock);
  Value laneCount = arith::ConstantIndexOp::create(b, loc, vectorWidth);
  Value steps = arith::ConstantIndexOp::create(b, loc, width / vectorWidth);
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
                                                     columns.getResult(r), Value(),
                                                     fastMath.getValue()));
        Value block8 =
            vector::FromElementsOp::create(nb, l, VectorType::get({kRowBlock}, f32), sums);
        Value y =
            vector::TransferWriteOp::create(nb, l, block8, carried[0], ValueRange{offset}, inBounds)
                .getResult();
        scf::YieldOp::create(nb, l, ValueRange{y});
      });
  return rows.getResult(0);
}

namespace {

/// acc + the pairwise products of two vectors of bf16 pairs (vdpbf16ps):
/// lane i adds w[2i] x[2i] + w[2i+1] x[2i+1], each product exact in f32.
Value bf16PairDot(OpBuilder &b, Location loc, Value acc, Value w, Value x) {
  const int64_t lanes = cast<VectorType>(acc.getType()).getDimSize(0);
  llvm::StringRef intrinsic =
      lanes == 16 ? "llvm.x86.avx512bf16.dpbf16ps.512" : "llvm.x86.avx512bf16.dpbf16ps.256";
  return LLVM::CallIntrinsicOp::create(b, loc, acc.getType(), b.getStringAttr(intrinsic),
                                       ValueRange{acc, w, x})
      .getResult(0);
}

} // namespace

/// Rows [first, first + blocks * tileRows) of W times the first
/// `tokenBlocks` * tileTokens (+ `tailTokens`, when given) token rows of X,
/// into columns
/// [0, blocks * tileRows) of `init` ([T, rows]): register
/// tiles of tileTokens tokens x tileRows weight rows, each a vector of
/// vectorWidth partial sums carried through the loop over the width. Each weight
/// row is read from memory once per chunk of T tokens: the prefill's gain.
Value blockedMatMul(OpBuilder &b, Location loc, const MatMulTile &tileShape, Value weight,
                    Value input, Value first, Value blocks, Value tokenBlocks, Value tailTokens,
                    Value init, bool prefetch, bool bf16Pairs) {
  const int64_t vectorWidth = tileShape.lanes, tileRows = tileShape.rows;
  // Columns per step: a vector of f32, or (bf16 pairs) twice as many bf16
  // that vdpbf16ps multiplies pairwise into the same f32 lanes.
  const int64_t stepColumns = bf16Pairs ? 2 * vectorWidth : vectorWidth;
  const int64_t tileTokens = tileShape.tokens;
  // The width is taken in panels of kMatMulPanel columns (the outermost loop), so
  // the token rows' panel stays in L2 while every weight block passes over
  // it; each panel's dot products are added into the output.
  int64_t width = cast<RankedTensorType>(weight.getType()).getDimSize(1);
  auto f32 = b.getF32Type();
  auto lanes = VectorType::get({vectorWidth}, f32);
  auto fastMath = reductionFastMath(b);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value padding = f32Constant(b, loc, 0.0f);
  auto loadType = VectorType::get({stepColumns}, bf16Pairs ? b.getBF16Type() : f32);
  Value loadPadding =
      bf16Pairs
          ? arith::ConstantOp::create(b, loc, b.getFloatAttr(b.getBF16Type(), 0.0)).getResult()
          : padding;
  Value zeros = arith::ConstantOp::create(b, loc, DenseElementsAttr::get(lanes, 0.0f));
  SmallVector<bool> inBounds = {true};
  auto constant = [&](OpBuilder &nb, Location l, int64_t v) -> Value {
    return arith::ConstantIndexOp::create(nb, l, v);
  };
  const int64_t totalSteps = width / stepColumns, panelSteps = kMatMulPanel / stepColumns;
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
              Value column = arith::MulIOp::create(nb, l, block, constant(nb, l, tileRows));
              Value row = arith::AddIOp::create(nb, l, first, column);
              // Register tiles of `tile` tokens: `count` of them from token `from`.
              auto tokenTiles = [&](Value out, Value from, Value count, int64_t tile) {
                auto tokenLoop = scf::ForOp::create(
                    nb, l, zero, count, one, ValueRange{out},
                    [&](OpBuilder &tb, Location tl, Value tokenBlock, ValueRange carried) {
                      Value token0 = arith::AddIOp::create(
                          tb, tl, from,
                          arith::MulIOp::create(tb, tl, tokenBlock, constant(tb, tl, tile)));
                      SmallVector<Value> tokenIndex, rowIndex;
                      for (int64_t i = 0; i < tile; ++i)
                        tokenIndex.push_back(
                            arith::AddIOp::create(tb, tl, token0, constant(tb, tl, i)));
                      for (int64_t j = 0; j < tileRows; ++j)
                        rowIndex.push_back(arith::AddIOp::create(tb, tl, row, constant(tb, tl, j)));
                      SmallVector<Value> accInit(tile * tileRows, zeros);
                      auto steps = scf::ForOp::create(
                          tb, tl, stepBegin, stepEnd, one, accInit,
                          [&](OpBuilder &ib, Location il, Value step, ValueRange acc) {
                            Value k =
                                arith::MulIOp::create(ib, il, step, constant(ib, il, stepColumns));
                            if (weightMemref) {
                              // Token tile t fetches row t % 8 of the next block.
                              Value ahead = arith::AddIOp::create(
                                  ib, il, row,
                                  arith::AddIOp::create(
                                      ib, il, constant(ib, il, tileRows),
                                      arith::RemUIOp::create(ib, il, tokenBlock,
                                                             constant(ib, il, tileRows))));
                              ahead = arith::MinUIOp::create(ib, il, ahead,
                                                             constant(ib, il, weightRows - 1));
                              memref::PrefetchOp::create(ib, il, weightMemref, ValueRange{ahead, k},
                                                         /*isWrite=*/false, /*localityHint=*/3,
                                                         /*isDataCache=*/true);
                            }
                            SmallVector<Value> x, w, next;
                            for (int64_t i = 0; i < tile; ++i)
                              x.push_back(vector::TransferReadOp::create(
                                  ib, il, loadType, input, ValueRange{tokenIndex[i], k},
                                  loadPadding, inBounds));
                            for (int64_t j = 0; j < tileRows; ++j)
                              w.push_back(vector::TransferReadOp::create(ib, il, loadType, weight,
                                                                         ValueRange{rowIndex[j], k},
                                                                         loadPadding, inBounds));
                            for (int64_t i = 0; i < tile; ++i)
                              for (int64_t j = 0; j < tileRows; ++j)
                                next.push_back(
                                    bf16Pairs
                                        ? bf16PairDot(ib, il, acc[i * tileRows + j], w[j], x[i])
                                        : vector::FMAOp::create(ib, il, lanes, w[j], x[i],
                                                                acc[i * tileRows + j])
                                              .getResult());
                            scf::YieldOp::create(ib, il, next);
                          });
                      Value out = carried[0];
                      for (int64_t i = 0; i < tile; ++i) {
                        SmallVector<Value> sums;
                        for (int64_t j = 0; j < tileRows; ++j)
                          sums.push_back(vector::ReductionOp::create(
                              tb, tl, vector::CombiningKind::ADD, steps.getResult(i * tileRows + j),
                              Value(), fastMath.getValue()));
                        auto tileType = VectorType::get({tileRows}, f32);
                        Value sum = vector::FromElementsOp::create(tb, tl, tileType, sums);
                        Value before = vector::TransferReadOp::create(
                            tb, tl, tileType, out, ValueRange{tokenIndex[i], column}, padding,
                            inBounds);
                        sum = arith::AddFOp::create(tb, tl, before, sum);
                        out = vector::TransferWriteOp::create(
                                  tb, tl, sum, out, ValueRange{tokenIndex[i], column}, inBounds)
                                  .getResult();
                      }
                      scf::YieldOp::create(tb, tl, ValueRange{out});
                    });
                return tokenLoop.getResult(0);
              };
              Value out = tokenTiles(rowCarried[0], zero, tokenBlocks, tileTokens);
              // The live rows past the last whole tile, one token per tile: each
              // element is summed exactly as in a whole tile.
              if (tailTokens)
                out = tokenTiles(
                    out, arith::MulIOp::create(nb, l, tokenBlocks, constant(nb, l, tileTokens)),
                    tailTokens, 1);
              scf::YieldOp::create(nb, l, ValueRange{out});
            });
        scf::YieldOp::create(pb, pl, ValueRange{rowBlocks.getResult(0)});
      });
  return panelLoop.getResult(0);
}

} // namespace mlir::quill
