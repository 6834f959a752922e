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
#include "compiler/Conversion/QuillToLinalg/LinalgBuilders.h"
#include "compiler/Conversion/QuillToLinalg/QuillToLinalg.h"
#include "dialects/Quill/IR/QuillDialect.h"

#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::quill;

namespace {

constexpr int64_t kRowBlock = 8; ///< Weight rows streamed together.
constexpr int64_t kLanes = 16;   ///< Partial sums per row: one AVX-512 vector.

using utils::IteratorType;

/// y[r] = sum_k W[r, k] * x[k] over all rows of `weight`, one row at a time.
Value rowByRowMatVec(OpBuilder &b, Location loc, Value weight, Value input, OpFoldResult rows) {
  MLIRContext *ctx = b.getContext();
  AffineExpr r, k;
  bindDims(ctx, r, k);
  auto fastMath = reductionFastMath(b);
  return buildGeneric(
      b, loc, ValueRange{weight, input}, filledTensor(b, loc, {rows}, 0.0f),
      {AffineMap::get(2, 0, {r, k}, ctx), AffineMap::get(2, 0, {k}, ctx),
       AffineMap::get(2, 0, {r}, ctx)},
      {IteratorType::parallel, IteratorType::reduction},
      [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
        Value product = arith::MulFOp::create(nb, l, args[0], args[1], fastMath);
        return arith::AddFOp::create(nb, l, args[2], product, fastMath);
      });
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

template <typename OpTy> struct LowerMatVec : OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;

  LogicalResult matchAndRewrite(OpTy op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    PatternRewriter &b = rewriter;
    Value weight = op.getWeight();
    auto weightType = cast<RankedTensorType>(weight.getType());
    int64_t width = weightType.getDimSize(1);
    Value first = arith::ConstantIndexOp::create(b, loc, 0);
    OpFoldResult rows = b.getIndexAttr(weightType.getDimSize(0));
    if (op.isTiled()) {
      // Only rows [begin, end) of the output.
      first = op.getTile()[0];
      rows = arith::SubIOp::create(b, loc, op.getTile()[1], first).getResult();
    }
    auto sliceRows = [&](Value from, OpFoldResult count) {
      return tensor::ExtractSliceOp::create(
                 b, loc, weight, ArrayRef<OpFoldResult>{from, b.getIndexAttr(0)},
                 ArrayRef<OpFoldResult>{count, b.getIndexAttr(width)},
                 ArrayRef<OpFoldResult>{b.getIndexAttr(1), b.getIndexAttr(1)})
          .getResult();
    };
    Value result;
    if (width % kLanes != 0) {
      result = rowByRowMatVec(b, loc, sliceRows(first, rows), op.getInput(), rows);
    } else {
      Value count = getValueOrCreateConstantIndexOp(b, loc, rows);
      Value blockRows = arith::ConstantIndexOp::create(b, loc, kRowBlock);
      Value blocks = arith::DivUIOp::create(b, loc, count, blockRows);
      Value blocked = arith::MulIOp::create(b, loc, blocks, blockRows);
      Value init = tensor::EmptyOp::create(b, loc, ArrayRef<OpFoldResult>{rows}, b.getF32Type());
      result = blockedMatVec(b, loc, weight, op.getInput(), first, blocks, init);
      // The rows after the last whole block, one at a time.
      OpFoldResult tailRows = arith::SubIOp::create(b, loc, count, blocked).getResult();
      Value tailFirst = arith::AddIOp::create(b, loc, first, blocked);
      Value tail = rowByRowMatVec(b, loc, sliceRows(tailFirst, tailRows), op.getInput(), tailRows);
      result = tensor::InsertSliceOp::create(b, loc, tail, result,
                                             ArrayRef<OpFoldResult>{blocked},
                                             ArrayRef<OpFoldResult>{tailRows},
                                             ArrayRef<OpFoldResult>{b.getIndexAttr(1)});
    }
    rewriter.replaceOp(op, castTo(b, loc, result, op.getType()));
    return success();
  }
};

} // namespace

void mlir::quill::populateLowerMatVecPatterns(RewritePatternSet &patterns) {
  patterns.add<LowerMatVec<LinearOp>, LowerMatVec<LogitsOp>>(patterns.getContext());
}
