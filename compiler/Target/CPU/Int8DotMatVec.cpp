// Decode's products over Q8_0, Q4_0, Q4_K and Q6_K weights with Q8_0
// activations (q8_input) as int8 dot products: the input is rounded once
// per call to int8 blocks of 32, then each 32-weight group of a row is one
// vpdpbusd (AVX-512 VNNI on ymm, or AVX-VNNI; AVX2's pair products
// otherwise, Int8DotSums.cpp) of its bytes with the input block's, its
// int32 sums converted once and scaled by the weights' and the input's
// scales. vpdpbusd multiplies unsigned by signed bytes: Q4_0's and
// Q4_K's nibbles are unsigned already, Q8_0's bytes become unsigned with the
// sign bit flipped (q + 128), Q6_K's six bits are q + 32; an offset times
// the input block's sum is taken off by starting the dot product's
// accumulator at -offset * sum / 8 in each of its 8 lanes, so the integer
// result is exact. Q4_K's minimum (dmin * min * sum(x)) is summed apart.
#include "compiler/Conversion/QuillToLinalg/ActivationQuantization.h"
#include "compiler/Conversion/QuillToLinalg/WeightDecoding.h"
#include "compiler/Target/CPU/RowDecoder.h"
#include "compiler/Target/CPU/TransposedReduce.h"
#include "dialects/Quill/IR/WeightFormats.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

namespace mlir::quill {

namespace {

Value indexConstant(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}

Value i32Constant(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIntOp::create(b, loc, b.getI32Type(), v);
}

/// The input block of 32 at `column` as the products read it.
struct InputBlock {
  Value values;              ///< vector<32xi8>.
  Value scale;               ///< f32.
  Value firstSum, secondSum; ///< i32: the sums of its halves of 16.
};

InputBlock inputBlock(OpBuilder &b, Location loc, const Int8Input &input, Value column) {
  Value block = arith::DivUIOp::create(b, loc, column, indexConstant(b, loc, kQ8Block));
  Value half = arith::MulIOp::create(b, loc, block, indexConstant(b, loc, 2));
  return {readVector(b, loc, input.values, ValueRange{column}, kQ8Block, b.getI8Type()),
          tensor::ExtractOp::create(b, loc, input.scales, ValueRange{block}),
          tensor::ExtractOp::create(b, loc, input.halfSums, ValueRange{half}),
          tensor::ExtractOp::create(
              b, loc, input.halfSums,
              ValueRange{arith::AddIOp::create(b, loc, half, indexConstant(b, loc, 1))})};
}

} // namespace

bool fitsInt8Dot(Type weightType) {
  auto type = cast<RankedTensorType>(weightType);
  Type element = type.getElementType();
  if (isa<Q8_0Type, Q4_0Type>(element))
    return type.getDimSize(1) % kQ8Block == 0;
  return isa<Q4_KType, Q6_KType>(element) && type.getDimSize(1) % 256 == 0;
}

Q8Block roundQ8Block(OpBuilder &b, Location loc, Value x) {
  auto f32s = VectorType::get({kQ8Block}, b.getF32Type());
  auto i32s = VectorType::get({kQ8Block}, b.getI32Type());
  Value amax = vector::ReductionOp::create(b, loc, vector::CombiningKind::MAXIMUMF,
                                           math::AbsFOp::create(b, loc, x));
  auto [d, inverse] = q8Scales(b, loc, amax);
  Value q = q8Round(b, loc, x, vector::BroadcastOp::create(b, loc, f32s, inverse));
  Q8Block out;
  out.scale = d;
  Value qi = arith::FPToSIOp::create(b, loc, i32s, q);
  out.values = arith::TruncIOp::create(b, loc, VectorType::get({kQ8Block}, b.getI8Type()), qi);
  for (int64_t h = 0; h < 2; ++h) {
    Value part = vector::ExtractStridedSliceOp::create(b, loc, qi, ArrayRef<int64_t>{16 * h},
                                                       ArrayRef<int64_t>{16}, ArrayRef<int64_t>{1});
    out.halfSums[h] = vector::ReductionOp::create(b, loc, vector::CombiningKind::ADD, part);
  }
  return out;
}

Q8Blocks roundQ8Blocks(OpBuilder &b, Location loc, ArrayRef<Value> xs) {
  const int64_t n = xs.size();
  assert(n == kQ8BlockGroup && "a group of blocks");
  auto f32s = VectorType::get({kQ8Block}, b.getF32Type());
  auto i32s = VectorType::get({kQ8Block}, b.getI32Type());
  auto groupF32s = VectorType::get({n}, b.getF32Type());
  auto slice = [&](Value v, int64_t first, int64_t size) -> Value {
    return vector::ExtractStridedSliceOp::create(b, loc, v, ArrayRef<int64_t>{first},
                                                 ArrayRef<int64_t>{size}, ArrayRef<int64_t>{1});
  };
  // Each vector folded to n lanes by `combine`, then all of them reduced
  // together: lane j is block j's.
  auto reduceAll = [&](ArrayRef<Value> vectors, int64_t size, const LaneCombine &combine) {
    SmallVector<Value> folded;
    for (Value v : vectors) {
      Value f = slice(v, 0, n);
      for (int64_t k = n; k < size; k += n)
        f = combine(b, loc, f, slice(v, k, n));
      folded.push_back(f);
    }
    return transposedReduce(b, loc, folded, n, combine);
  };
  // |x| as its bits without the sign: for floats of one sign the integer
  // order is the float order (NaN's bits above infinity's), so the maxima
  // are one vpmaxud each, where a float maximum that orders NaN and -0
  // takes six instructions.
  Value signless = arith::ConstantOp::create(
      b, loc, DenseElementsAttr::get(i32s, static_cast<int32_t>(0x7fffffff)));
  SmallVector<Value> magnitudes;
  for (Value x : xs)
    magnitudes.push_back(
        arith::AndIOp::create(b, loc, vector::BitCastOp::create(b, loc, i32s, x), signless));
  Value amax = vector::BitCastOp::create(
      b, loc, groupF32s,
      reduceAll(magnitudes, kQ8Block, [](OpBuilder &nb, Location l, Value x, Value y) {
        return arith::MaxUIOp::create(nb, l, x, y).getResult();
      }));
  // q8Scales' operations, n blocks per instruction.
  auto splat = [&](float v) -> Value {
    return arith::ConstantOp::create(b, loc, DenseElementsAttr::get(groupF32s, v));
  };
  Value d = arith::DivFOp::create(b, loc, amax, splat(127.0f));
  Value isZero = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, d, splat(0.0f));
  Value inverse = arith::SelectOp::create(b, loc, isZero, splat(0.0f),
                                          arith::DivFOp::create(b, loc, splat(1.0f), d));
  Q8Blocks out;
  out.scales = d;
  SmallVector<Value> halves[2];
  for (int64_t j = 0; j < n; ++j) {
    Value inv = vector::ExtractOp::create(b, loc, inverse, ArrayRef<int64_t>{j});
    Value q = q8Round(b, loc, xs[j], vector::BroadcastOp::create(b, loc, f32s, inv));
    Value qi = arith::FPToSIOp::create(b, loc, i32s, q);
    out.values.push_back(
        arith::TruncIOp::create(b, loc, VectorType::get({kQ8Block}, b.getI8Type()), qi));
    for (int64_t h = 0; h < 2; ++h)
      halves[h].push_back(slice(qi, 16 * h, 16));
  }
  auto add = [](OpBuilder &nb, Location l, Value x, Value y) {
    return arith::AddIOp::create(nb, l, x, y).getResult();
  };
  Value sums[2] = {reduceAll(halves[0], 16, add), reduceAll(halves[1], 16, add)};
  // Block order: block j's halves at 2j and 2j + 1.
  SmallVector<int64_t> interleave;
  for (int64_t j = 0; j < n; ++j)
    interleave.append({j, n + j});
  out.halfSums = vector::ShuffleOp::create(b, loc, sums[0], sums[1], interleave);
  return out;
}

SmallVector<Value> roundQ8Row(OpBuilder &b, Location loc, Value input, ValueRange row,
                              int64_t blocks, ValueRange outs, bool words) {
  auto at = [&](OpBuilder &nb, Location l, Value last) {
    SmallVector<Value> indices(row.begin(), row.end());
    indices.push_back(last);
    return indices;
  };
  auto wordType = VectorType::get({kQ8Block / 4}, b.getI32Type());
  // Block `block`'s values into `values`.
  auto storeValues = [&](OpBuilder &nb, Location l, Value q, Value block, Value values) {
    Value column = arith::MulIOp::create(nb, l, block, indexConstant(nb, l, kQ8Block));
    if (!words)
      return vector::TransferWriteOp::create(nb, l, q, values, at(nb, l, column),
                                             ArrayRef<bool>{true})
          .getResult();
    Value word = arith::MulIOp::create(nb, l, block, indexConstant(nb, l, kQ8Block / 4));
    return vector::TransferWriteOp::create(nb, l, vector::BitCastOp::create(nb, l, wordType, q),
                                           values, at(nb, l, word), ArrayRef<bool>{true})
        .getResult();
  };
  auto readBlock = [&](OpBuilder &nb, Location l, Value block) {
    Value column = arith::MulIOp::create(nb, l, block, indexConstant(nb, l, kQ8Block));
    return readVector(nb, l, input, at(nb, l, column), kQ8Block, nb.getF32Type());
  };
  const int64_t grouped = blocks / kQ8BlockGroup * kQ8BlockGroup;
  auto groups = scf::ForOp::create(
      b, loc, indexConstant(b, loc, 0), indexConstant(b, loc, grouped),
      indexConstant(b, loc, kQ8BlockGroup), outs,
      [&](OpBuilder &nb, Location l, Value first, ValueRange out) {
        SmallVector<Value> xs;
        for (int64_t j = 0; j < kQ8BlockGroup; ++j)
          xs.push_back(
              readBlock(nb, l, arith::AddIOp::create(nb, l, first, indexConstant(nb, l, j))));
        Q8Blocks rounded = roundQ8Blocks(nb, l, xs);
        Value values = out[0];
        for (int64_t j = 0; j < kQ8BlockGroup; ++j)
          values =
              storeValues(nb, l, rounded.values[j],
                          arith::AddIOp::create(nb, l, first, indexConstant(nb, l, j)), values);
        Value scales = vector::TransferWriteOp::create(nb, l, rounded.scales, out[1],
                                                       at(nb, l, first), ArrayRef<bool>{true})
                           .getResult();
        Value halfAt = arith::MulIOp::create(nb, l, first, indexConstant(nb, l, 2));
        Value sums = vector::TransferWriteOp::create(nb, l, rounded.halfSums, out[2],
                                                     at(nb, l, halfAt), ArrayRef<bool>{true})
                         .getResult();
        scf::YieldOp::create(nb, l, ValueRange{values, scales, sums});
      });
  auto rest = scf::ForOp::create(
      b, loc, indexConstant(b, loc, grouped), indexConstant(b, loc, blocks),
      indexConstant(b, loc, 1), groups.getResults(),
      [&](OpBuilder &nb, Location l, Value block, ValueRange out) {
        Q8Block rounded = roundQ8Block(nb, l, readBlock(nb, l, block));
        Value values = storeValues(nb, l, rounded.values, block, out[0]);
        Value scales = tensor::InsertOp::create(nb, l, rounded.scale, out[1], at(nb, l, block));
        Value sums = out[2];
        for (int64_t h = 0; h < 2; ++h) {
          Value halfAt = arith::AddIOp::create(
              nb, l, arith::MulIOp::create(nb, l, block, indexConstant(nb, l, 2)),
              indexConstant(nb, l, h));
          sums = tensor::InsertOp::create(nb, l, rounded.halfSums[h], sums, at(nb, l, halfAt));
        }
        scf::YieldOp::create(nb, l, ValueRange{values, scales, sums});
      });
  return SmallVector<Value>(rest.getResults());
}

Int8Input quantizeInt8Input(OpBuilder &b, Location loc, Value input) {
  const int64_t width = cast<RankedTensorType>(input.getType()).getDimSize(0);
  const int64_t blocks = width / kQ8Block;
  // Fixed-size buffers (stack).
  auto buffer = [&](int64_t n, Type element) -> Value {
    return bufferization::AllocTensorOp::create(b, loc, RankedTensorType::get({n}, element),
                                                ValueRange{});
  };
  SmallVector<Value> rounded =
      roundQ8Row(b, loc, input, ValueRange{}, blocks,
                 ValueRange{buffer(width, b.getI8Type()), buffer(blocks, b.getF32Type()),
                            buffer(2 * blocks, b.getI32Type())},
                 /*words=*/false);
  return {rounded[0], rounded[1], rounded[2]};
}

Value q8RoundTripRows(OpBuilder &b, Location loc, Value input, Value liveRows) {
  auto type = cast<RankedTensorType>(input.getType());
  const int64_t tokens = type.getDimSize(0), width = type.getDimSize(1);
  auto f32s = VectorType::get({kQ8Block}, b.getF32Type());
  Value init = tensor::EmptyOp::create(b, loc, type.getShape(), b.getF32Type());
  Value rowCount = indexConstant(b, loc, tokens);
  if (liveRows)
    rowCount = arith::MinUIOp::create(b, loc, liveRows, rowCount);
  auto rows = scf::ForOp::create(
      b, loc, indexConstant(b, loc, 0), rowCount, indexConstant(b, loc, 1), ValueRange{init},
      [&](OpBuilder &nb, Location l, Value t, ValueRange out) {
        auto blocks = scf::ForOp::create(
            nb, l, indexConstant(nb, l, 0), indexConstant(nb, l, width),
            indexConstant(nb, l, kQ8Block), ValueRange{out[0]},
            [&](OpBuilder &ib, Location il, Value column, ValueRange rowOut) {
              Value x = readVector(ib, il, input, ValueRange{t, column}, kQ8Block, ib.getF32Type());
              Value amax = vector::ReductionOp::create(ib, il, vector::CombiningKind::MAXIMUMF,
                                                       math::AbsFOp::create(ib, il, x));
              auto [d, inverse] = q8Scales(ib, il, amax);
              Value q = q8Round(ib, il, x, vector::BroadcastOp::create(ib, il, f32s, inverse));
              Value rounded =
                  arith::MulFOp::create(ib, il, vector::BroadcastOp::create(ib, il, f32s, d), q);
              scf::YieldOp::create(ib, il,
                                   vector::TransferWriteOp::create(ib, il, rounded, rowOut[0],
                                                                   ValueRange{t, column},
                                                                   ArrayRef<bool>{true})
                                       .getResult());
            });
        scf::YieldOp::create(nb, l, blocks.getResults());
      });
  return rows.getResult(0);
}

Value int8DotMatVec(OpBuilder &b, Location loc, Int8DotForm form, int64_t rowBlock, Value weight,
                    const Int8Input &input, Value first, Value blocks, Value init) {
  auto weightType = cast<RankedTensorType>(weight.getType());
  Type element = weightType.getElementType();
  WeightFormat format = *weightFormatOf(element);
  const int64_t steps = weightType.getDimSize(1) / format.blockElements;
  const bool kQuant = isa<Q4_KType, Q6_KType>(element);
  Value storage = weightStorage(weight);
  Value storageMemref;
  if (auto toTensor = storage.getDefiningOp<bufferization::ToTensorOp>())
    storageMemref = toTensor.getBuffer();
  const int64_t ahead = prefetchDistance(rowBlock, rowStorageBytes(weightType));
  auto lanes8 = VectorType::get({8}, b.getF32Type());
  auto ints8 = VectorType::get({8}, b.getI32Type());
  auto bytes32 = VectorType::get({32}, b.getI8Type());
  Value zeros = arith::ConstantOp::create(b, loc, DenseElementsAttr::get(lanes8, 0.0f));
  Value intZeros = arith::ConstantOp::create(b, loc, DenseElementsAttr::get(ints8, int32_t(0)));
  Value signBits = arith::ConstantOp::create(b, loc, DenseElementsAttr::get(bytes32, int8_t(-128)));
  auto fastMath = reductionFastMath(b);
  // The i32 lanes of one block's products from `start`.
  auto dot = [&](OpBuilder &ib, Location il, Value start, Value weights, Value x) {
    Int8Sums sums(form, element, start);
    sums.add(ib, il, vector::BitCastOp::create(ib, il, ints8, weights),
             vector::BitCastOp::create(ib, il, ints8, x));
    return sums.sums(ib, il);
  };
  // acc += splat(scale) * float(lanes).
  auto accumulate = [&](OpBuilder &ib, Location il, Value scale, Value lanes, Value acc) -> Value {
    if (!isa<VectorType>(scale.getType()))
      scale = vector::BroadcastOp::create(ib, il, lanes8, scale);
    return vector::FMAOp::create(ib, il, scale, arith::SIToFPOp::create(ib, il, lanes8, lanes),
                                 acc);
  };
  // Per row: its f32 lanes, and (Q4_K) the lanes of its minimum terms.
  const int64_t carriedPerRow = isa<Q4_KType>(element) ? 2 : 1;
  auto rows = scf::ForOp::create(
      b, loc, indexConstant(b, loc, 0), blocks, indexConstant(b, loc, 1), ValueRange{init},
      [&](OpBuilder &nb, Location l, Value block, ValueRange carried) {
        Value offset = arith::MulIOp::create(nb, l, block, indexConstant(nb, l, rowBlock));
        Value row = arith::AddIOp::create(nb, l, first, offset);
        SmallVector<Value> rowIndex;
        for (int64_t r = 0; r < rowBlock; ++r)
          rowIndex.push_back(arith::AddIOp::create(nb, l, row, indexConstant(nb, l, r)));
        SmallVector<Value> accInit;
        for (int64_t r = 0; r < rowBlock; ++r) {
          accInit.push_back(zeros);
          if (carriedPerRow == 2)
            accInit.push_back(zeros);
        }
        auto columns = scf::ForOp::create(
            nb, l, indexConstant(nb, l, 0), indexConstant(nb, l, steps), indexConstant(nb, l, 1),
            accInit, [&](OpBuilder &ib, Location il, Value step, ValueRange acc) {
              if (storageMemref)
                prefetchNextRows(ib, il, storageMemref, rowIndex, ahead, step, format.blockBytes);
              SmallVector<Value> next(acc.begin(), acc.end());
              RowDecoder rowDecoder{ib, il, storage, Value(), 8, fastMath};
              if (!kQuant) {
                // Q8_0, Q4_0: one block per step; offset 128 (0) or 8, a
                // share in each lane.
                const bool q8 = isa<Q8_0Type>(element);
                InputBlock x = inputBlock(
                    ib, il, input,
                    arith::MulIOp::create(ib, il, step, indexConstant(ib, il, kQ8Block)));
                Value sum = arith::AddIOp::create(ib, il, x.firstSum, x.secondSum);
                Value start = vector::BroadcastOp::create(
                    ib, il, ints8,
                    arith::MulIOp::create(
                        ib, il, sum, i32Constant(ib, il, -int8WeightOffset(form, element) / 8)));
                Value base =
                    arith::MulIOp::create(ib, il, step, indexConstant(ib, il, format.blockBytes));
                for (int64_t r = 0; r < rowBlock; ++r) {
                  Value weights =
                      q8 ? arith::XOrIOp::create(
                               ib, il,
                               readVector(ib, il, storage,
                                          ValueRange{rowIndex[r],
                                                     arith::AddIOp::create(
                                                         ib, il, base, indexConstant(ib, il, 2))},
                                          32, ib.getI8Type()),
                               signBits)
                               .getResult()
                         : q4_0Nibbles(ib, il, storage, rowIndex[r], base);
                  Value scale = arith::MulFOp::create(
                      ib, il, halfScalarAt(ib, il, storage, rowIndex[r], base), x.scale);
                  next[r] =
                      accumulate(ib, il, scale, dot(ib, il, start, weights, x.values), next[r]);
                }
                scf::YieldOp::create(ib, il, next);
                return;
              }
              // K-quants: the step's 8 input blocks, their scales and sums,
              // shared by the rows.
              Value block0 = arith::MulIOp::create(ib, il, step, indexConstant(ib, il, 8));
              Value column0 = arith::MulIOp::create(ib, il, step, indexConstant(ib, il, 256));
              SmallVector<Value> xs;
              for (int64_t g = 0; g < 8; ++g)
                xs.push_back(readVector(ib, il, input.values,
                                        ValueRange{arith::AddIOp::create(
                                            ib, il, column0, indexConstant(ib, il, kQ8Block * g))},
                                        kQ8Block, ib.getI8Type()));
              Value dxs = readVector(ib, il, input.scales, ValueRange{block0}, 8, ib.getF32Type());
              Value halfSums = readVector(
                  ib, il, input.halfSums,
                  ValueRange{arith::MulIOp::create(ib, il, block0, indexConstant(ib, il, 2))}, 16,
                  ib.getI32Type());
              SmallVector<int64_t> evens, odds;
              for (int64_t g = 0; g < 8; ++g) {
                evens.push_back(2 * g);
                odds.push_back(2 * g + 1);
              }
              auto lanesOf = [](int64_t a, int64_t b) {
                return SmallVector<int64_t>{a, a, a, a, b, b, b, b};
              };
              if (isa<Q4_KType>(element)) {
                // sum_g dmin * min_g * dx_g * sum(q_g): dx * sum per block.
                Value sums = arith::AddIOp::create(ib, il, rowDecoder.pick(halfSums, evens),
                                                   rowDecoder.pick(halfSums, odds));
                Value xSums = arith::MulFOp::create(
                    ib, il, arith::SIToFPOp::create(ib, il, lanes8, sums), dxs);
                for (int64_t r = 0; r < rowBlock; ++r) {
                  auto [scales, mins] = rowDecoder.q4_KScalesAndMins(rowIndex[r], step);
                  Value scaled = arith::MulFOp::create(ib, il, scales, dxs);
                  Value &lanes = next[2 * r];
                  next[2 * r + 1] = vector::FMAOp::create(ib, il, mins, xSums, next[2 * r + 1]);
                  int64_t g = 0;
                  rowDecoder.q4_KGroups(
                      rowIndex[r], step, [&](Value q, Value, Value, Value, Value) {
                        lanes = accumulate(ib, il, rowDecoder.pick(scaled, lanesOf(g, g)),
                                           dot(ib, il, intZeros, q, xs[g]), lanes);
                        ++g;
                      });
                }
              } else {
                // Q6_K: each group's accumulator starts at -8 x its halves' sums.
                Value starts = arith::MulIOp::create(
                    ib, il, halfSums,
                    arith::ConstantOp::create(
                        ib, il,
                        DenseElementsAttr::get(VectorType::get({16}, ib.getI32Type()),
                                               int32_t(-8))));
                SmallVector<Value> groupStarts, groupDx;
                for (int64_t g = 0; g < 8; ++g) {
                  groupStarts.push_back(rowDecoder.pick(starts, lanesOf(2 * g, 2 * g + 1)));
                  groupDx.push_back(rowDecoder.pick(dxs, lanesOf(g, g)));
                }
                for (int64_t r = 0; r < rowBlock; ++r) {
                  Value scales = rowDecoder.q6_KScales(rowIndex[r], step);
                  Value &lanes = next[r];
                  int64_t g = 0;
                  rowDecoder.q6_KGroups(
                      rowIndex[r], step, [&](Value q, Value, Value, Value, Value) {
                        Value scale = arith::MulFOp::create(
                            ib, il, rowDecoder.pick(scales, lanesOf(2 * g, 2 * g + 1)), groupDx[g]);
                        lanes =
                            accumulate(ib, il, scale, dot(ib, il, groupStarts[g], q, xs[g]), lanes);
                        ++g;
                      });
                }
              }
              scf::YieldOp::create(ib, il, next);
            });
        SmallVector<Value> sums;
        for (int64_t r = 0; r < rowBlock; ++r) {
          Value sum = vector::ReductionOp::create(nb, l, vector::CombiningKind::ADD,
                                                  columns.getResult(carriedPerRow * r), Value(),
                                                  fastMath.getValue());
          if (carriedPerRow == 2)
            sum = arith::SubFOp::create(
                nb, l, sum,
                vector::ReductionOp::create(nb, l, vector::CombiningKind::ADD,
                                            columns.getResult(carriedPerRow * r + 1), Value(),
                                            fastMath.getValue()));
          sums.push_back(sum);
        }
        Value rowSums = vector::FromElementsOp::create(
            nb, l, VectorType::get({rowBlock}, nb.getF32Type()), sums);
        Value y = vector::TransferWriteOp::create(nb, l, rowSums, carried[0], ValueRange{offset},
                                                  ArrayRef<bool>{true})
                      .getResult();
        scf::YieldOp::create(nb, l, ValueRange{y});
      });
  return rows.getResult(0);
}

} // namespace mlir::quill
