// quill.linear / quill.logits / quill.project_qkv -> matrix-vector (decode)
// or matrix-matrix (prefill, batch) products over the (possibly tiled) rows
// of the weight, then their epilogues: the folded RMSNorm's scales, SwiGLU,
// the residual add, and for project_qkv the rotary embedding and the cache
// writes. The products themselves come from the KernelBuilder: generic
// linalg here, a target's microkernels or warp sums where it has them.
#include "compiler/Conversion/QuillToLinalg/CacheAccess.h"
#include "compiler/Conversion/QuillToLinalg/KernelBuilder.h"
#include "compiler/Conversion/QuillToLinalg/LinalgBuilders.h"
#include "compiler/Conversion/QuillToLinalg/QuillToLinalg.h"
#include "compiler/Conversion/QuillToLinalg/WeightDecoding.h"
#include "dialects/Quill/IR/QuillDialect.h"

#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <tuple>

using namespace mlir;
using namespace mlir::quill;

namespace {

/// W[firstRow : firstRow + rows] @ x, into the kernel's output or, when
/// `intermediate`, a fixed-size (stack) buffer; with `q8Input`, x rounded
/// to Q8_0 blocks, with `bf16Input` to bf16.
Value matVecRows(OpBuilder &b, Location loc, const KernelBuilder &builder, Value weight,
                 Value input, OpFoldResult firstRow, OpFoldResult rows, bool intermediate,
                 bool q8Input, bool bf16Input) {
  int64_t weightRows = cast<RankedTensorType>(weight.getType()).getDimSize(0);
  Value init = intermediate
                   ? scratchSlice(b, loc, {weightRows}, {rows}, std::nullopt)
                   : tensor::EmptyOp::create(b, loc, ArrayRef<OpFoldResult>{rows}, b.getF32Type())
                         .getResult();
  if (q8Input)
    return builder.q8MatVecRows(b, loc, weight, input, firstRow, rows, init);
  if (bf16Input)
    return builder.bf16MatVecRows(b, loc, weight, input, firstRow, rows, init);
  if (isEncodedWeight(weight))
    return builder.decodingMatVecRows(b, loc, weight, input, firstRow, rows, init);
  return builder.matVecRows(b, loc, weight, input, firstRow, rows, init);
}

/// X[T, K] @ W[firstRow : firstRow + rows]^T -> [T, rows], likewise; with
/// `liveRows`, the live token rows only (a batch step's later rows are
/// unused).
Value matMulRows(OpBuilder &b, Location loc, const KernelBuilder &builder, Value weight,
                 Value input, OpFoldResult firstRow, OpFoldResult rows, bool intermediate,
                 Value liveRows, bool q8Input, bool bf16Input) {
  int64_t tokens = cast<RankedTensorType>(input.getType()).getDimSize(0);
  int64_t weightRows = cast<RankedTensorType>(weight.getType()).getDimSize(0);
  Value init =
      intermediate
          ? scratchSlice(b, loc, {tokens, weightRows}, {b.getIndexAttr(tokens), rows}, std::nullopt)
          : tensor::EmptyOp::create(b, loc, ArrayRef<OpFoldResult>{b.getIndexAttr(tokens), rows},
                                    b.getF32Type())
                .getResult();
  if (q8Input)
    return builder.q8MatMulRows(b, loc, weight, input, firstRow, rows, liveRows, init);
  if (bf16Input)
    return builder.bf16MatMulRows(b, loc, weight, input, firstRow, rows, liveRows, init);
  if (isEncodedWeight(weight))
    return builder.decodingMatMulRows(b, loc, weight, input, firstRow, rows, liveRows, init);
  return builder.matMulRows(b, loc, weight, input, firstRow, rows, liveRows, init);
}

/// The folded RMSNorm's scales of [T, width] `input`'s first `live` rows
/// (all T without), into a [T] tensor, one row at a time, so that every
/// row's sum of squares is the same code whatever the row count and the
/// row's place in the batch. One reduction over [T, width] (whose sums may
/// reassociate) would leave LLVM free to unroll a short row and vectorize
/// across rows, summing some rows in another order than the rest: batch
/// invariance would then hang on its cost model (as it did for the rotary
/// table: LowerElementwise.cpp, liveRowsTable).
Value rowByRowRmsScales(OpBuilder &b, Location loc, const KernelBuilder &builder, Value input,
                        Value live, float eps) {
  auto type = cast<RankedTensorType>(input.getType());
  int64_t tokens = type.getDimSize(0), width = type.getDimSize(1);
  auto rowType = RankedTensorType::get({1, width}, b.getF32Type());
  SmallVector<OpFoldResult> ones = {b.getIndexAttr(1), b.getIndexAttr(1)};
  SmallVector<OpFoldResult> rowSizes = {b.getIndexAttr(1), b.getIndexAttr(width)};
  Value scales = tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{tokens}, b.getF32Type());
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value count = live ? live : arith::ConstantIndexOp::create(b, loc, tokens).getResult();
  auto loop = scf::ForOp::create(
      b, loc, zero, count, one, ValueRange{scales},
      [&](OpBuilder &nb, Location l, Value i, ValueRange carried) {
        Value row = tensor::ExtractSliceOp::create(
            nb, l, rowType, input, ArrayRef<OpFoldResult>{i, nb.getIndexAttr(0)}, rowSizes, ones);
        Value scale = builder.rmsScales(nb, l, row, eps);
        Value next = tensor::InsertSliceOp::create(
            nb, l, scale, carried[0], ArrayRef<OpFoldResult>{i},
            ArrayRef<OpFoldResult>{nb.getIndexAttr(1)}, ArrayRef<OpFoldResult>{nb.getIndexAttr(1)});
        scf::YieldOp::create(nb, l, next);
      });
  return loop.getResult(0);
}

template <typename OpTy> struct LowerMatVec : OpRewritePattern<OpTy> {
  LowerMatVec(MLIRContext *ctx, std::shared_ptr<const KernelBuilder> builder)
      : OpRewritePattern<OpTy>(ctx), builder(std::move(builder)) {}
  std::shared_ptr<const KernelBuilder> builder; ///< The products' reductions.

  LogicalResult matchAndRewrite(OpTy op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    PatternRewriter &b = rewriter;
    Value weight = op.getWeight();
    auto weightType = cast<RankedTensorType>(weight.getType());
    int64_t perOutput = op.getRowsPerOutput();
    // Outputs [first, first + outputs); weight rows perOutput times that.
    // Sizes stay static attributes when the op is not tiled.
    OpFoldResult first = b.getIndexAttr(0);
    OpFoldResult outputs = b.getIndexAttr(weightType.getDimSize(0) / perOutput);
    if (op.isTiled()) {
      // The tile counts units of outputs (a row group's over a grouped weight).
      const int64_t perUnit = op.getOutputsPerUnit();
      first = mulIndex(b, loc, op.getTile()[0], perUnit);
      outputs = mulIndex(
          b, loc, arith::SubIOp::create(b, loc, op.getTile()[1], op.getTile()[0]).getResult(),
          perUnit);
    }
    OpFoldResult firstRow = mulIndex(b, loc, first, perOutput);
    OpFoldResult rowCount = mulIndex(b, loc, outputs, perOutput);
    // With an epilogue the rows are an intermediate: they go to a fixed-size
    // (stack) buffer instead of the kernel's output.
    auto inputType = cast<RankedTensorType>(op.getInput().getType());
    bool rows = inputType.getRank() == 2; // T token rows: a matmul.
    int64_t tokens = rows ? inputType.getDimSize(0) : 1;
    // Where several threads compute one unit (a warp's lanes), they build
    // the rows in a private (stack) buffer and write the kernel's output
    // once, never reading back what another may be rewriting.
    const bool intermediate = op.getSwiglu() || builder->privateRows();
    Value result = rows ? matMulRows(b, loc, *builder, weight, op.getInput(), firstRow, rowCount,
                                     intermediate, op.getRows(), op.getQ8Input(), op.getBf16Input())
                        : matVecRows(b, loc, *builder, weight, op.getInput(), firstRow, rowCount,
                                     intermediate, op.getQ8Input(), op.getBf16Input());
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
      Value scales =
          rows ? rowByRowRmsScales(b, loc, *builder, op.getInput(), live, eps->convertToFloat())
               : builder->rmsScales(b, loc, op.getInput(), eps->convertToFloat());
      result = scaleRows(b, loc, result, liveRows(scales, std::nullopt));
    }
    if (Value bias = op.getBias())
      result = addBias(b, loc, result, bias, firstRow);
    if (op.getSwiglu()) {
      // Rows alternate gate and up: output i = silu(row 2i) * row 2i+1.
      Value raw = result;
      Value two = arith::ConstantIndexOp::create(b, loc, 2);
      Value one = arith::ConstantIndexOp::create(b, loc, 1);
      // Output i of row `t` (null: a vector) into `init`.
      auto swiglu = [&](OpBuilder &nb, Location nl, Value t, Value init) {
        return buildElementwise(
            nb, nl, ValueRange{}, init, [&](OpBuilder &eb, Location l, ValueRange) -> Value {
              Value i = linalg::IndexOp::create(eb, l, rows ? 1 : 0);
              Value g = arith::MulIOp::create(eb, l, i, two);
              Value u = arith::AddIOp::create(eb, l, g, one);
              SmallVector<Value> at, atUp;
              if (rows) {
                Value row = t ? t : linalg::IndexOp::create(eb, l, 0).getResult();
                at.push_back(row);
                atUp.push_back(row);
              }
              at.push_back(g);
              atUp.push_back(u);
              return swigluScalar(eb, l, tensor::ExtractOp::create(eb, l, raw, at),
                                  tensor::ExtractOp::create(eb, l, raw, atUp));
            });
      };
      if (live) {
        // The live rows one by one into the rows of one empty tensor of
        // all rows, carried through the loop: empty-tensor elimination
        // makes it the kernel's output itself, where a separate buffer had
        // all its rows copied out at every call (one sequence's gate and
        // up: 40% of the launch). (A slice of the empty tensor written by
        // one elementwise op and inserted back is not eliminated.)
        whole = tensor::EmptyOp::create(
            b, loc, ArrayRef<OpFoldResult>{b.getIndexAttr(tokens), outputs}, b.getF32Type());
        auto loop = scf::ForOp::create(
            b, loc, arith::ConstantIndexOp::create(b, loc, 0), live, one, ValueRange{whole},
            [&](OpBuilder &nb, Location l, Value t, ValueRange carried) {
              SmallVector<OpFoldResult> at = {t, nb.getIndexAttr(0)};
              SmallVector<OpFoldResult> size = {nb.getIndexAttr(1), outputs};
              SmallVector<OpFoldResult> unit(2, nb.getIndexAttr(1));
              Value row = tensor::ExtractSliceOp::create(nb, l, carried[0], at, size, unit);
              row = swiglu(nb, l, t, row);
              scf::YieldOp::create(
                  nb, l,
                  tensor::InsertSliceOp::create(nb, l, row, carried[0], at, size, unit)
                      .getResult());
            });
        whole = loop.getResult(0);
        result = liveRows(whole, outputs);
      } else {
        SmallVector<OpFoldResult> shape;
        if (rows)
          shape.push_back(b.getIndexAttr(tokens));
        shape.push_back(outputs);
        result = swiglu(b, loc, Value(), tensor::EmptyOp::create(b, loc, shape, b.getF32Type()));
      }
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
    builder->noteLowered(op);
    rewriter.replaceOp(op, castTo(b, loc, result, op.getType()));
    return success();
  }
};

/// quill.project_qkv: the rows [first, first + count) (a tile's units of
/// rows) of W x (normalized
/// first with norm_eps), Q and K rows rotated, and the K and V rows among
/// them stored into row pos of the caches.
struct LowerProjectQKV : OpRewritePattern<ProjectQKVOp> {
  LowerProjectQKV(MLIRContext *ctx, std::shared_ptr<const KernelBuilder> builder)
      : OpRewritePattern(ctx), builder(std::move(builder)) {}
  std::shared_ptr<const KernelBuilder> builder; ///< The products' reductions.

  LogicalResult matchAndRewrite(ProjectQKVOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    PatternRewriter &b = rewriter;
    Value weight = op.getWeight();
    int64_t rows = op.getWeight().getType().getDimSize(0);
    int64_t queryRows = op.getQueryRows(), kvWidth = op.getKvWidth();
    RopeFrequencies frequencies = ropeFrequencies(op);
    const int64_t headDim = frequencies.headDim;
    OpFoldResult first = b.getIndexAttr(0), count = b.getIndexAttr(rows);
    if (op.isTiled()) {
      // The tile counts pairs of rows (or Q8_0 blocks).
      Value perUnit = arith::ConstantIndexOp::create(b, loc, op.getRowsPerUnit());
      first = arith::MulIOp::create(b, loc, op.getTile()[0], perUnit).getResult();
      count = arith::MulIOp::create(
                  b, loc, arith::SubIOp::create(b, loc, op.getTile()[1], op.getTile()[0]), perUnit)
                  .getResult();
    }
    Value raw = matVecRows(b, loc, *builder, weight, op.getInput(), first, count,
                           /*intermediate=*/true, op.getQ8Input(), op.getBf16Input());
    if (std::optional<APFloat> eps = op.getNormEps())
      raw =
          scaleRows(b, loc, raw, builder->rmsScales(b, loc, op.getInput(), eps->convertToFloat()));
    if (Value bias = op.getBias())
      raw = addBias(b, loc, raw, bias, first);

    // Rotate the Q and K rows; V rows pass through.
    Value firstValue = getValueOrCreateConstantIndexOp(b, loc, first);
    Value pos = op.getPos();
    // Every head at this position shares its pairs' cos and sin.
    Value cosTable, sinTable;
    if (builder->ropeTablePerCall())
      std::tie(cosTable, sinTable) = ropeCosSinTables(b, loc, pos, frequencies);
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
          Value rotated;
          if (cosTable) {
            Value pair = arith::DivUIOp::create(nb, l, d, constant(2));
            rotated = rotateWith(nb, l, v0, v1, parity,
                                 tensor::ExtractOp::create(nb, l, cosTable, ValueRange{pair}),
                                 tensor::ExtractOp::create(nb, l, sinTable, ValueRange{pair}));
          } else {
            rotated = rotatePair(nb, l, v0, v1, parity, d, pos, frequencies);
          }
          Value self = tensor::ExtractOp::create(nb, l, raw, ValueRange{i});
          Value isRotated = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::ult, row,
                                                  constant(queryRows + kvWidth));
          return arith::SelectOp::create(nb, l, isRotated, rotated, self);
        });

    // The K rows [queryRows, queryRows + kvWidth) and V rows after them that
    // fall in this tile go to the caches (possibly none).
    Value last =
        arith::AddIOp::create(b, loc, firstValue, getValueOrCreateConstantIndexOp(b, loc, count));
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
          b, loc, y,
          ArrayRef<OpFoldResult>{arith::SubIOp::create(b, loc, start, firstValue).getResult()},
          ArrayRef<OpFoldResult>{size}, ArrayRef<OpFoldResult>{b.getIndexAttr(1)});
      Value column =
          arith::SubIOp::create(b, loc, start, arith::ConstantIndexOp::create(b, loc, partStart));
      // Tiles are whole Q8_0 blocks where the cache holds them (tilingOf).
      Value updated = storeCacheRows(b, loc, part, elementTypeOf(cache), cacheStorage(cache),
                                     ArrayRef<OpFoldResult>{pos, column});
      return asCache(b, loc, cache.getType(), updated);
    };
    Value keys = store(op.getKeys(), queryRows, queryRows + kvWidth);
    Value values = store(op.getValues(), queryRows + kvWidth, rows);
    builder->noteLowered(op);
    rewriter.replaceOp(op, {castTo(b, loc, y, op.getResult().getType()), keys, values});
    return success();
  }
};

} // namespace

void mlir::quill::populateLowerMatVecPatterns(RewritePatternSet &patterns,
                                              std::shared_ptr<const KernelBuilder> builder) {
  patterns.add<LowerMatVec<LinearOp>, LowerMatVec<LogitsOp>>(patterns.getContext(), builder);
  patterns.add<LowerProjectQKV>(patterns.getContext(), builder);
}
