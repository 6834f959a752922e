// Small builders shared by the quill-to-linalg lowerings.
#include "compiler/Conversion/QuillToLinalg/LinalgBuilders.h"

#include "compiler/Conversion/QuillToLinalg/CacheAccess.h"

#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Math/IR/Math.h"

#include <cmath>
#include <limits>

using namespace mlir;

namespace mlir::quill {

arith::FastMathFlagsAttr reductionFastMath(OpBuilder &b) {
  return arith::FastMathFlagsAttr::get(b.getContext(), arith::FastMathFlags::reassoc |
                                                           arith::FastMathFlags::contract);
}

Value f32Constant(OpBuilder &b, Location loc, float value) {
  return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(value));
}

Value filledTensor(OpBuilder &b, Location loc, ArrayRef<OpFoldResult> sizes, float value) {
  Value empty = tensor::EmptyOp::create(b, loc, sizes, b.getF32Type());
  return linalg::FillOp::create(b, loc, ValueRange{f32Constant(b, loc, value)}, ValueRange{empty})
      ->getResult(0);
}

Value scratchSlice(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
                   ArrayRef<OpFoldResult> sizes, std::optional<float> value) {
  // An allocation, not a tensor.empty: empties of one shape would be merged
  // by CSE and their slices folded into dynamically sized heap buffers.
  Value full = bufferization::AllocTensorOp::create(
      b, loc, RankedTensorType::get(shape, b.getF32Type()), ValueRange{});
  SmallVector<OpFoldResult> zeros(shape.size(), b.getIndexAttr(0));
  SmallVector<OpFoldResult> ones(shape.size(), b.getIndexAttr(1));
  Value slice = tensor::ExtractSliceOp::create(b, loc, full, zeros, sizes, ones);
  if (!value)
    return slice;
  return linalg::FillOp::create(b, loc, ValueRange{f32Constant(b, loc, *value)}, ValueRange{slice})
      ->getResult(0);
}

namespace {
/// A 4-loop (k, g, t, d) contraction of attention with the given maps.
Value attentionContraction(OpBuilder &b, Location loc, Value lhs, Value rhs, Value init,
                           bool reduceOverD) {
  MLIRContext *ctx = b.getContext();
  AffineExpr k, g, t, d;
  bindDims(ctx, k, g, t, d);
  auto map4 = [&](ArrayRef<AffineExpr> exprs) { return AffineMap::get(4, 0, exprs, ctx); };
  using utils::IteratorType;
  auto par = IteratorType::parallel, red = IteratorType::reduction;
  SmallVector<AffineMap> maps =
      reduceOverD ? SmallVector<AffineMap>{map4({k, g, d}), map4({t, k, d}), map4({k, g, t})}
                  : SmallVector<AffineMap>{map4({k, g, t}), map4({t, k, d}), map4({k, g, d})};
  SmallVector<IteratorType> iterators = reduceOverD ? SmallVector<IteratorType>{par, par, par, red}
                                                    : SmallVector<IteratorType>{par, par, red, par};
  auto fastMath = reductionFastMath(b);
  if (!isQuantizedCache(rhs))
    return buildGeneric(b, loc, ValueRange{lhs, rhs}, init, maps, iterators,
                        multiplyAccumulate(fastMath));
  // A Q8_0 cache's head rows are bytes: each element decoded where it is
  // read (the loops' extents come from the query or probabilities and the
  // output alone).
  maps.erase(maps.begin() + 1);
  return buildGeneric(b, loc, ValueRange{lhs}, init, maps, iterators,
                      [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
                        Value kIndex = linalg::IndexOp::create(nb, l, 0),
                              tIndex = linalg::IndexOp::create(nb, l, 2);
                        Value element = readHeadElement(nb, l, rhs, ValueRange{tIndex, kIndex},
                                                        linalg::IndexOp::create(nb, l, 3));
                        Value product = arith::MulFOp::create(nb, l, args[0], element, fastMath);
                        return arith::AddFOp::create(nb, l, args[1], product, fastMath);
                      });
}
} // namespace

Value attentionScoresGeneric(OpBuilder &b, Location loc, Value query, Value keys, Value init) {
  return attentionContraction(b, loc, query, keys, init, /*reduceOverD=*/true);
}

Value attentionWeightedSumGeneric(OpBuilder &b, Location loc, Value probs, Value values,
                                  Value init) {
  return attentionContraction(b, loc, probs, values, init, /*reduceOverD=*/false);
}

Value scaleQuery(OpBuilder &b, Location loc, Value query, int64_t kvHeads, int64_t group,
                 OpFoldResult units, int64_t headDim) {
  Value scale = f32Constant(b, loc, 1.0f / std::sqrt(float(headDim)));
  Value init = scratchSlice(b, loc, {kvHeads, group, headDim},
                            {units, b.getIndexAttr(group), b.getIndexAttr(headDim)}, std::nullopt);
  return buildElementwise(b, loc, ValueRange{query}, init,
                          [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
                            return arith::MulFOp::create(nb, l, args[0], scale);
                          });
}

std::pair<Value, Value> softmaxNumerators(OpBuilder &b, Location loc, Value scores, int64_t kvHeads,
                                          int64_t group, OpFoldResult units) {
  MLIRContext *ctx = b.getContext();
  AffineExpr k, g, t;
  bindDims(ctx, k, g, t);
  auto map3 = [&](ArrayRef<AffineExpr> exprs) { return AffineMap::get(3, 0, exprs, ctx); };
  SmallVector<utils::IteratorType> parallel(3, utils::IteratorType::parallel);
  SmallVector<utils::IteratorType> reduceLast = {
      utils::IteratorType::parallel, utils::IteratorType::parallel, utils::IteratorType::reduction};
  auto rowReduce = [&](Value input, float init, bool isMax) {
    Value acc = scratchSlice(b, loc, {kvHeads, group}, {units, b.getIndexAttr(group)}, init);
    return buildGeneric(b, loc, ValueRange{input}, acc, {map3({k, g, t}), map3({k, g})}, reduceLast,
                        [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
                          if (isMax)
                            return arith::MaximumFOp::create(nb, l, args[1], args[0]);
                          return arith::AddFOp::create(nb, l, args[1], args[0]);
                        });
  };
  Value max = rowReduce(scores, -std::numeric_limits<float>::infinity(), true);
  Value exps = buildGeneric(b, loc, ValueRange{max}, scores, {map3({k, g}), map3({k, g, t})},
                            parallel, [](OpBuilder &nb, Location l, ValueRange args) -> Value {
                              Value shifted = arith::SubFOp::create(nb, l, args[1], args[0]);
                              return math::ExpOp::create(nb, l, shifted).getResult();
                            });
  return {exps, rowReduce(exps, 0.0f, false)};
}

Value divideRows(OpBuilder &b, Location loc, Value out, Value sums) {
  MLIRContext *ctx = b.getContext();
  AffineExpr k, g, d;
  bindDims(ctx, k, g, d);
  SmallVector<utils::IteratorType> parallel(3, utils::IteratorType::parallel);
  return buildGeneric(b, loc, ValueRange{sums}, out,
                      {AffineMap::get(3, 0, {k, g}, ctx), AffineMap::get(3, 0, {k, g, d}, ctx)},
                      parallel, [](OpBuilder &nb, Location l, ValueRange args) -> Value {
                        return arith::DivFOp::create(nb, l, args[1], args[0]);
                      });
}

Value buildGeneric(OpBuilder &b, Location loc, ValueRange inputs, Value init,
                   ArrayRef<AffineMap> maps, ArrayRef<utils::IteratorType> iterators,
                   const ScalarBody &body) {
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{init.getType()}, inputs, ValueRange{init}, maps, iterators,
      [&](OpBuilder &nested, Location nestedLoc, ValueRange args) {
        linalg::YieldOp::create(nested, nestedLoc, ValueRange{body(nested, nestedLoc, args)});
      });
  return generic->getResult(0);
}

Value buildElementwise(OpBuilder &b, Location loc, ValueRange inputs, Value init,
                       const ScalarBody &body) {
  unsigned rank = cast<RankedTensorType>(init.getType()).getRank();
  AffineMap identity = b.getMultiDimIdentityMap(rank);
  SmallVector<AffineMap> maps(inputs.size() + 1, identity);
  SmallVector<utils::IteratorType> iterators(rank, utils::IteratorType::parallel);
  return buildGeneric(b, loc, inputs, init, maps, iterators, body);
}

ScalarBody multiplyAccumulate(arith::FastMathFlagsAttr fastMath) {
  return [fastMath](OpBuilder &b, Location loc, ValueRange args) -> Value {
    Value product = arith::MulFOp::create(b, loc, widenToF32(b, loc, args[0]),
                                          widenToF32(b, loc, args[1]), fastMath);
    return arith::AddFOp::create(b, loc, args[2], product, fastMath);
  };
}

Value widenToF32(OpBuilder &b, Location loc, Value value) {
  Type type = value.getType();
  Type element = getElementTypeOrSelf(type);
  if (element.isF32())
    return value;
  Type f32 = b.getF32Type();
  Type wide = f32;
  if (auto vector = dyn_cast<VectorType>(type))
    wide = vector.clone(f32);
  return arith::ExtFOp::create(b, loc, wide, value);
}

Value roundToElement(OpBuilder &b, Location loc, Value rows, Type element) {
  auto type = cast<RankedTensorType>(rows.getType());
  if (type.getElementType() == element)
    return rows;
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, rows);
  Value init = tensor::EmptyOp::create(b, loc, sizes, element);
  return buildElementwise(b, loc, ValueRange{rows}, init,
                          [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
                            return arith::TruncFOp::create(nb, l, element, args[0]);
                          });
}

std::pair<Value, Value> ropeCosSin(OpBuilder &b, Location loc, Value d, Value position,
                                   const RopeFrequencies &frequencies) {
  auto toF32 = [&](Value index) {
    Value i64 = arith::IndexCastOp::create(b, loc, b.getI64Type(), index);
    return arith::SIToFPOp::create(b, loc, b.getF32Type(), i64).getResult();
  };
  Value freq;
  if (frequencies.table) {
    // A scaled RoPE: the pair's entry of the compile-time table.
    Value pair = arith::DivUIOp::create(b, loc, d, arith::ConstantIndexOp::create(b, loc, 2));
    freq = tensor::ExtractOp::create(b, loc, frequencies.table, ValueRange{pair});
  } else {
    // llama2.c: freq = 1 / theta^(d / head_dim), angle = pos * freq.
    Value ratio =
        arith::DivFOp::create(b, loc, toF32(d), f32Constant(b, loc, float(frequencies.headDim)));
    Value power = math::PowFOp::create(b, loc, f32Constant(b, loc, frequencies.theta), ratio);
    freq = arith::DivFOp::create(b, loc, f32Constant(b, loc, 1.0f), power);
  }
  Value angle = arith::MulFOp::create(b, loc, toF32(position), freq);
  Value cos = math::CosOp::create(b, loc, angle);
  Value sin = math::SinOp::create(b, loc, angle);
  if (frequencies.attentionFactor != 1.0f) {
    Value factor = f32Constant(b, loc, frequencies.attentionFactor);
    cos = arith::MulFOp::create(b, loc, cos, factor);
    sin = arith::MulFOp::create(b, loc, sin, factor);
  }
  return {cos, sin};
}

std::pair<Value, Value> ropeCosSinTables(OpBuilder &b, Location loc, Value position,
                                         const RopeFrequencies &frequencies) {
  auto f32 = b.getF32Type();
  Value init = tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{frequencies.headDim / 2}, f32);
  AffineMap identity = b.getMultiDimIdentityMap(1);
  auto table = linalg::GenericOp::create(
      b, loc, TypeRange{init.getType(), init.getType()}, ValueRange{}, ValueRange{init, init},
      SmallVector<AffineMap>{identity, identity},
      SmallVector<utils::IteratorType>{utils::IteratorType::parallel},
      [&](OpBuilder &nb, Location l, ValueRange) {
        Value j = linalg::IndexOp::create(nb, l, 0);
        Value d = arith::MulIOp::create(nb, l, j, arith::ConstantIndexOp::create(nb, l, 2));
        auto [cos, sin] = ropeCosSin(nb, l, d, position, frequencies);
        linalg::YieldOp::create(nb, l, ValueRange{cos, sin});
      });
  return {table.getResult(0), table.getResult(1)};
}

Value rotateWith(OpBuilder &b, Location loc, Value v0, Value v1, Value parity, Value cos,
                 Value sin) {
  Value even = arith::SubFOp::create(b, loc, arith::MulFOp::create(b, loc, v0, cos),
                                     arith::MulFOp::create(b, loc, v1, sin));
  Value odd = arith::AddFOp::create(b, loc, arith::MulFOp::create(b, loc, v0, sin),
                                    arith::MulFOp::create(b, loc, v1, cos));
  Value isOdd = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, parity,
                                      arith::ConstantIndexOp::create(b, loc, 0));
  return arith::SelectOp::create(b, loc, isOdd, odd, even);
}

Value rotatePair(OpBuilder &b, Location loc, Value v0, Value v1, Value parity, Value d,
                 Value position, const RopeFrequencies &frequencies) {
  auto [cos, sin] = ropeCosSin(b, loc, d, position, frequencies);
  return rotateWith(b, loc, v0, v1, parity, cos, sin);
}

Value windowStart(OpBuilder &b, Location loc, Value pos, std::optional<int64_t> window) {
  if (!window)
    return arith::ConstantIndexOp::create(b, loc, 0);
  // pos + 1 - window, or 0 while the window still reaches position 0.
  Value end = arith::AddIOp::create(b, loc, pos, arith::ConstantIndexOp::create(b, loc, 1));
  Value width = arith::ConstantIndexOp::create(b, loc, *window);
  Value inside = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt, end, width);
  return arith::SelectOp::create(b, loc, inside, arith::SubIOp::create(b, loc, end, width),
                                 arith::ConstantIndexOp::create(b, loc, 0));
}

Value addBias(OpBuilder &b, Location loc, Value values, Value bias, OpFoldResult first) {
  Value start = getValueOrCreateConstantIndexOp(b, loc, first);
  unsigned rank = cast<RankedTensorType>(values.getType()).getRank();
  // The values are the generic's output, read and rewritten in place.
  return buildElementwise(b, loc, ValueRange{}, values,
                          [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
                            Value i = linalg::IndexOp::create(nb, l, rank - 1);
                            Value at = arith::AddIOp::create(nb, l, i, start);
                            Value term = tensor::ExtractOp::create(nb, l, bias, ValueRange{at});
                            return arith::AddFOp::create(nb, l, args[0], term);
                          });
}

Value swigluScalar(OpBuilder &b, Location loc, Value gate, Value up) {
  Value expNeg = math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, gate));
  Value one = f32Constant(b, loc, 1.0f);
  Value sigmoid = arith::DivFOp::create(b, loc, one, arith::AddFOp::create(b, loc, one, expNeg));
  Value silu = arith::MulFOp::create(b, loc, gate, sigmoid);
  return arith::MulFOp::create(b, loc, silu, up);
}

namespace {
/// Maps of a rank-`rank` loop nest: all dims, and all but the last.
std::pair<AffineMap, AffineMap> rowMaps(OpBuilder &b, unsigned rank) {
  SmallVector<AffineExpr> rowDims;
  for (unsigned i = 0; i + 1 < rank; ++i)
    rowDims.push_back(b.getAffineDimExpr(i));
  return {b.getMultiDimIdentityMap(rank), AffineMap::get(rank, 0, rowDims, b.getContext())};
}
} // namespace

Value buildRmsScales(OpBuilder &b, Location loc, Value input, float eps) {
  auto type = cast<RankedTensorType>(input.getType());
  unsigned rank = type.getRank();
  int64_t width = type.getDimSize(rank - 1);
  auto fastMath = reductionFastMath(b);
  auto [identity, toRow] = rowMaps(b, rank);
  SmallVector<utils::IteratorType> reduceLast(rank, utils::IteratorType::parallel);
  reduceLast.back() = utils::IteratorType::reduction;
  // Leading sizes, dynamic ones (a tile's rows) read off the input.
  SmallVector<OpFoldResult> rowSizes;
  for (unsigned d = 0; d + 1 < rank; ++d)
    rowSizes.push_back(tensor::getMixedSize(b, loc, input, d));
  // sum(x^2) per row.
  Value sums = buildGeneric(
      b, loc, ValueRange{input}, filledTensor(b, loc, rowSizes, 0.0f), {identity, toRow},
      reduceLast, [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
        Value square = arith::MulFOp::create(nb, l, args[0], args[0], fastMath);
        return arith::AddFOp::create(nb, l, args[1], square, fastMath);
      });
  // 1 / sqrt(sum / width + eps), in llama2.c's order.
  return buildElementwise(
      b, loc, ValueRange{sums}, tensor::EmptyOp::create(b, loc, rowSizes, b.getF32Type()),
      [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
        Value mean = arith::DivFOp::create(nb, l, args[0], f32Constant(nb, l, float(width)));
        Value shifted = arith::AddFOp::create(nb, l, mean, f32Constant(nb, l, eps));
        Value root = math::SqrtOp::create(nb, l, shifted);
        return arith::DivFOp::create(nb, l, f32Constant(nb, l, 1.0f), root);
      });
}

Value scaleRows(OpBuilder &b, Location loc, Value values, Value scales) {
  unsigned rank = cast<RankedTensorType>(values.getType()).getRank();
  auto [identity, toRow] = rowMaps(b, rank);
  SmallVector<utils::IteratorType> parallel(rank, utils::IteratorType::parallel);
  return buildGeneric(b, loc, ValueRange{scales}, values, {toRow, identity}, parallel,
                      [](OpBuilder &nb, Location l, ValueRange args) -> Value {
                        return arith::MulFOp::create(nb, l, args[1], args[0]);
                      });
}

Value insertRow(OpBuilder &b, Location loc, Value row, Value into, OpFoldResult at,
                OpFoldResult width) {
  return tensor::InsertSliceOp::create(
      b, loc, row, into, ArrayRef<OpFoldResult>{at, b.getIndexAttr(0)},
      ArrayRef<OpFoldResult>{b.getIndexAttr(1), width},
      ArrayRef<OpFoldResult>{b.getIndexAttr(1), b.getIndexAttr(1)});
}

Value castTo(OpBuilder &b, Location loc, Value value, Type type) {
  if (value.getType() == type)
    return value;
  return tensor::CastOp::create(b, loc, type, value);
}

namespace {
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
} // namespace

OpFoldResult mulIndex(OpBuilder &b, Location loc, OpFoldResult x, int64_t k) {
  if (k == 1)
    return x;
  return indexOp(
      b, loc, x, b.getIndexAttr(k), [](int64_t p, int64_t q) { return p * q; },
      [&](Value p, Value q) { return arith::MulIOp::create(b, loc, p, q).getResult(); });
}
OpFoldResult divIndex(OpBuilder &b, Location loc, OpFoldResult x, int64_t k) {
  return indexOp(
      b, loc, x, b.getIndexAttr(k), [](int64_t p, int64_t q) { return p / q; },
      [&](Value p, Value q) { return arith::DivUIOp::create(b, loc, p, q).getResult(); });
}
OpFoldResult addIndex(OpBuilder &b, Location loc, OpFoldResult x, OpFoldResult y) {
  return indexOp(
      b, loc, x, y, [](int64_t p, int64_t q) { return p + q; },
      [&](Value p, Value q) { return arith::AddIOp::create(b, loc, p, q).getResult(); });
}
OpFoldResult subIndex(OpBuilder &b, Location loc, OpFoldResult x, OpFoldResult y) {
  return indexOp(
      b, loc, x, y, [](int64_t p, int64_t q) { return p - q; },
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
      {utils::IteratorType::parallel, utils::IteratorType::reduction},
      multiplyAccumulate(fastMath));
}

Value sliceRows(OpBuilder &b, Location loc, Value weight, OpFoldResult from, OpFoldResult count) {
  int64_t width = cast<RankedTensorType>(weight.getType()).getDimSize(1);
  return tensor::ExtractSliceOp::create(
             b, loc, weight, ArrayRef<OpFoldResult>{from, b.getIndexAttr(0)},
             ArrayRef<OpFoldResult>{count, b.getIndexAttr(width)},
             ArrayRef<OpFoldResult>{b.getIndexAttr(1), b.getIndexAttr(1)})
      .getResult();
}

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
      {utils::IteratorType::parallel, utils::IteratorType::parallel,
       utils::IteratorType::reduction},
      multiplyAccumulate(fastMath));
}

Value overLiveRows(OpBuilder &b, Location loc, Value input, Value liveRows, OpFoldResult rows,
                   Value init, const RowProduct &product) {
  const int64_t tokens = cast<RankedTensorType>(input.getType()).getDimSize(0);
  const int64_t width = cast<RankedTensorType>(input.getType()).getDimSize(1);
  OpFoldResult live =
      arith::MinUIOp::create(b, loc, liveRows, arith::ConstantIndexOp::create(b, loc, tokens))
          .getResult();
  SmallVector<OpFoldResult> zeros = {b.getIndexAttr(0), b.getIndexAttr(0)};
  SmallVector<OpFoldResult> ones = {b.getIndexAttr(1), b.getIndexAttr(1)};
  Value out =
      linalg::FillOp::create(b, loc, ValueRange{f32Constant(b, loc, 0.0f)}, ValueRange{init})
          ->getResult(0);
  Value liveInput = tensor::ExtractSliceOp::create(
      b, loc, input, zeros, ArrayRef<OpFoldResult>{live, b.getIndexAttr(width)}, ones);
  SmallVector<OpFoldResult> outSizes = {live, rows};
  Value liveOut = tensor::ExtractSliceOp::create(b, loc, out, zeros, outSizes, ones);
  Value part = product(liveInput, liveOut);
  return tensor::InsertSliceOp::create(b, loc, part, out, zeros, outSizes, ones);
}

} // namespace mlir::quill
