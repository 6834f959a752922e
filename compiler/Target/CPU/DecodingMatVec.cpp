// The CPU's matrix-vector products over encoded weights, decoding in
// registers: each step loads one block of every row of a row block (32
// int8 values and an fp16 scale for Q8_0; 16 bytes of nibbles for Q4_0; a
// K-quant super-block of 256, its 6-bit or int8 sub-block scales read as
// scalars; a vector of f16 or bf16), widens it to f32 lanes and
// accumulates scale * (q . x) into that row's vector of partial sums. Only
// the stored bytes cross the memory bus.
#include "compiler/Target/CPU/CpuKernelBuilder.h"

#include "compiler/Conversion/QuillToLinalg/LinalgBuilders.h"
#include "compiler/Conversion/QuillToLinalg/WeightDecoding.h"
#include "dialects/Quill/IR/QuillDialect.h"
#include "dialects/Quill/IR/WeightFormats.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <functional>

namespace mlir::quill {

namespace {

/// Builds one row's contribution of one step: the f32 lanes of a block (or
/// of vectorWidth plain weights) times x, added into `acc`.
struct RowDecoder {
  OpBuilder &b;
  Location loc;
  Value storage, input;
  int64_t lanes;
  arith::FastMathFlagsAttr fastMath;

  VectorType f32s(int64_t n) { return VectorType::get({n}, b.getF32Type()); }
  Value index(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value at(Value base, int64_t offset) {
    return arith::AddIOp::create(b, loc, base, index(offset));
  }

  /// `n` elements of `source` from `indices`, of `element` type.
  Value read(Value source, ValueRange indices, int64_t n, Type element) {
    Value pad = arith::ConstantOp::create(b, loc, b.getZeroAttr(element));
    return vector::TransferReadOp::create(b, loc, VectorType::get({n}, element), source, indices,
                                          pad, ArrayRef<bool>{true});
  }
  Value xAt(Value column) { return read(input, ValueRange{column}, lanes, b.getF32Type()); }
  Value fma(Value w, Value x, Value acc) { return vector::FMAOp::create(b, loc, w, x, acc); }
  Value mul(Value x, Value y) { return arith::MulFOp::create(b, loc, x, y, fastMath); }
  Value slice(Value v, int64_t offset) {
    return vector::ExtractStridedSliceOp::create(b, loc, v, ArrayRef<int64_t>{offset},
                                                 ArrayRef<int64_t>{lanes}, ArrayRef<int64_t>{1});
  }

  /// The fp16 value at byte `offset` of `row`, as an f32 scalar.
  Value halfAt(Value row, Value offset) {
    Value bytes = read(storage, ValueRange{row, offset}, 2, b.getI8Type());
    Value half = vector::BitCastOp::create(b, loc, VectorType::get({1}, b.getF16Type()), bytes);
    Value f = arith::ExtFOp::create(b, loc, f32s(1), half);
    return vector::ExtractOp::create(b, loc, f, ArrayRef<int64_t>{0});
  }
  Value splat(Value scalar) { return vector::BroadcastOp::create(b, loc, f32s(lanes), scalar); }
  /// The byte at `offset` of `row` as an i32, zero- or sign-extended.
  Value byteAt(Value row, Value offset, bool isSigned = false) {
    Value v = tensor::ExtractOp::create(b, loc, storage, ValueRange{row, offset});
    if (isSigned)
      return arith::ExtSIOp::create(b, loc, b.getI32Type(), v);
    return arith::ExtUIOp::create(b, loc, b.getI32Type(), v);
  }
  Value i32(int64_t v) { return arith::ConstantIntOp::create(b, loc, b.getI32Type(), v); }
  Value bytes(int64_t v) {
    return arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(VectorType::get({32}, b.getI8Type()), int8_t(v)));
  }
  Value fscalar(Value i32Value) {
    return arith::SIToFPOp::create(b, loc, b.getF32Type(), i32Value);
  }

  /// acc + scale * (q . x[column : column + n]) - offset * sum(x[...]), q
  /// n f32 lanes (a multiple of `lanes`); `offset` may be null.
  Value subBlock(Value qf, Value column, Value scaleValue, Value offsetValue, Value acc) {
    const int64_t n = cast<VectorType>(qf.getType()).getDimSize(0);
    Value dot, xsum;
    for (int64_t part = 0; part < n / lanes; ++part) {
      Value x = xAt(at(column, part * lanes));
      Value w = slice(qf, part * lanes);
      dot = dot ? fma(w, x, dot) : mul(w, x);
      if (offsetValue)
        xsum = xsum ? arith::AddFOp::create(b, loc, xsum, x, fastMath).getResult() : x;
    }
    acc = fma(splat(scaleValue), dot, acc);
    if (offsetValue)
      acc = fma(splat(arith::NegFOp::create(b, loc, offsetValue)), xsum, acc);
    return acc;
  }

  /// Called with each sub-block of a K-quant super-block: its quantized
  /// values as f32 lanes, first column, scale and offset (null for Q6_K);
  /// a weight is scale * q - offset.
  using SubBlockFn = std::function<void(Value qf, Value column, Value scale, Value offset)>;

  /// Q4_K: 8 sub-blocks of 32, each d * scale * q - dmin * min.
  void q4_KSubBlocks(Value row, Value block, const SubBlockFn &visit) {
    Value base = arith::MulIOp::create(b, loc, block, index(144));
    Value column0 = arith::MulIOp::create(b, loc, block, index(256));
    Value d = halfAt(row, base), dmin = halfAt(row, at(base, 2));
    // The 6-bit scale and min of sub-block s (ggml's get_scale_min_k4);
    // s is known here, so is its branch.
    auto scaleMin = [&](int64_t s) -> std::pair<Value, Value> {
      auto sc = [&](int64_t i) { return byteAt(row, at(base, 4 + i)); };
      auto andI = [&](Value v, int64_t m) { return arith::AndIOp::create(b, loc, v, i32(m)); };
      auto shr = [&](Value v, int64_t n) { return arith::ShRUIOp::create(b, loc, v, i32(n)); };
      auto shl = [&](Value v, int64_t n) { return arith::ShLIOp::create(b, loc, v, i32(n)); };
      auto orI = [&](Value x, Value y) { return arith::OrIOp::create(b, loc, x, y); };
      if (s < 4)
        return {andI(sc(s), 63), andI(sc(s + 4), 63)};
      return {orI(andI(sc(s + 4), 15), shl(shr(sc(s - 4), 6), 4)),
              orI(shr(sc(s + 4), 4), shl(shr(sc(s), 6), 4))};
    };
    for (int64_t chunk = 0; chunk < 4; ++chunk) {
      Value packed = read(storage, ValueRange{row, at(base, 16 + 32 * chunk)}, 32, b.getI8Type());
      Value nibbles[2] = {arith::AndIOp::create(b, loc, packed, bytes(15)),
                          arith::ShRUIOp::create(b, loc, packed, bytes(4))};
      for (int64_t high = 0; high < 2; ++high) {
        auto [sc, m] = scaleMin(2 * chunk + high);
        visit(arith::SIToFPOp::create(b, loc, f32s(32), nibbles[high]),
              at(column0, 64 * chunk + 32 * high), arith::MulFOp::create(b, loc, d, fscalar(sc)),
              arith::MulFOp::create(b, loc, dmin, fscalar(m)));
      }
    }
  }

  /// Q6_K: 16 sub-blocks of 16, each d * scale * (q - 32), q's low 4 bits
  /// in ql and high 2 in qh.
  void q6_KSubBlocks(Value row, Value block, const SubBlockFn &visit) {
    Value base = arith::MulIOp::create(b, loc, block, index(210));
    Value column0 = arith::MulIOp::create(b, loc, block, index(256));
    Value d = halfAt(row, at(base, 208));
    auto readBytes = [&](int64_t offset) {
      return read(storage, ValueRange{row, at(base, offset)}, 32, b.getI8Type());
    };
    auto andB = [&](Value v, int64_t m) -> Value {
      return arith::AndIOp::create(b, loc, v, bytes(m));
    };
    auto shrB = [&](Value v, int64_t n) -> Value {
      return arith::ShRUIOp::create(b, loc, v, bytes(n));
    };
    auto shlB = [&](Value v, int64_t n) -> Value {
      return arith::ShLIOp::create(b, loc, v, bytes(n));
    };
    for (int64_t half = 0; half < 2; ++half) {
      Value ql[2] = {readBytes(64 * half), readBytes(64 * half + 32)};
      Value qh = readBytes(128 + 32 * half);
      for (int64_t quarter = 0; quarter < 4; ++quarter) {
        // Quarters 0, 1: low nibbles of ql[0], ql[1]; 2, 3: their high ones.
        Value low = quarter < 2 ? andB(ql[quarter % 2], 15) : shrB(ql[quarter % 2], 4);
        Value top = shlB(andB(shrB(qh, 2 * quarter), 3), 4);
        Value q = arith::SubIOp::create(b, loc, arith::OrIOp::create(b, loc, low, top), bytes(32));
        Value qf = arith::SIToFPOp::create(b, loc, f32s(32), q);
        Value column = at(column0, 128 * half + 32 * quarter);
        for (int64_t group = 0; group < 2; ++group) {
          Value sc = byteAt(row, at(base, 192 + 8 * half + group + 2 * quarter), true);
          Value part =
              vector::ExtractStridedSliceOp::create(b, loc, qf, ArrayRef<int64_t>{16 * group},
                                                    ArrayRef<int64_t>{16}, ArrayRef<int64_t>{1});
          visit(part, at(column, 16 * group), arith::MulFOp::create(b, loc, d, fscalar(sc)),
                Value());
        }
      }
    }
  }

  /// A K-quant super-block's contribution to a row's dot product.
  Value kQuant(Value row, Value block, Type element, Value acc) {
    SubBlockFn add = [&](Value qf, Value column, Value scaleValue, Value offsetValue) {
      acc = subBlock(qf, column, scaleValue, offsetValue, acc);
    };
    if (isa<Q4_KType>(element))
      q4_KSubBlocks(row, block, add);
    else
      q6_KSubBlocks(row, block, add);
    return acc;
  }

  /// A K-quant super-block of `row` decoded into row `r` of `out`.
  Value kQuantInto(Value row, Value block, Type element, Value r, Value out) {
    SubBlockFn write = [&](Value qf, Value column, Value scaleValue, Value offsetValue) {
      const int64_t n = cast<VectorType>(qf.getType()).getDimSize(0);
      Value values = arith::MulFOp::create(
          b, loc, vector::BroadcastOp::create(b, loc, f32s(n), scaleValue), qf);
      if (offsetValue)
        values = arith::SubFOp::create(b, loc, values,
                                       vector::BroadcastOp::create(b, loc, f32s(n), offsetValue));
      out = vector::TransferWriteOp::create(b, loc, values, out, ValueRange{r, column},
                                            ArrayRef<bool>{true})
                .getResult();
    };
    if (isa<Q4_KType>(element))
      q4_KSubBlocks(row, block, write);
    else
      q6_KSubBlocks(row, block, write);
    return out;
  }

  /// Q8_0 block `block` of `row`: its 32 values as f32 lanes (q) and its
  /// byte offset (the scale's).
  std::pair<Value, Value> q8_0Values(Value row, Value block) {
    Value base = arith::MulIOp::create(b, loc, block, index(34));
    Value q = read(storage, ValueRange{row, at(base, 2)}, 32, b.getI8Type());
    return {arith::SIToFPOp::create(b, loc, f32s(32), q), base};
  }
  Value q8_0(Value row, Value block, Value acc) {
    auto [qf, base] = q8_0Values(row, block);
    return subBlock(qf, arith::MulIOp::create(b, loc, block, index(32)), halfAt(row, base), Value(),
                    acc);
  }

  /// Q4_0 block `block` of `row` likewise: nibble - 8 as f32 lanes.
  std::pair<Value, Value> q4_0Values(Value row, Value block) {
    Value base = arith::MulIOp::create(b, loc, block, index(18));
    Value packed = read(storage, ValueRange{row, at(base, 2)}, 16, b.getI8Type());
    auto byteType = VectorType::get({16}, b.getI8Type());
    auto nibbleSplat = [&](int64_t v) {
      return arith::ConstantOp::create(b, loc, DenseElementsAttr::get(byteType, int8_t(v)));
    };
    // Weights 0-15 the low nibbles, 16-31 the high ones, each minus 8.
    Value low = arith::SubIOp::create(
        b, loc, arith::AndIOp::create(b, loc, packed, nibbleSplat(15)), nibbleSplat(8));
    Value high = arith::SubIOp::create(
        b, loc, arith::ShRUIOp::create(b, loc, packed, nibbleSplat(4)), nibbleSplat(8));
    Value q =
        vector::ShuffleOp::create(b, loc, low, high, llvm::to_vector(llvm::seq<int64_t>(0, 32)));
    return {arith::SIToFPOp::create(b, loc, f32s(32), q), base};
  }
  Value q4_0(Value row, Value block, Value acc) {
    auto [qf, base] = q4_0Values(row, block);
    return subBlock(qf, arith::MulIOp::create(b, loc, block, index(32)), halfAt(row, base), Value(),
                    acc);
  }

  /// The decoded weights of step `step` of `row` (a block of 32 for Q8_0
  /// and Q4_0, `lanes` for f16 and bf16) and their first column: d * q
  /// rounded once, as the generic decoding rounds it.
  std::pair<Value, Value> decodedStep(Value row, Value step, Type element) {
    if (element.isF16() || element.isBF16()) {
      Value column = arith::MulIOp::create(b, loc, step, index(lanes));
      Value w = read(storage, ValueRange{row, column}, lanes, element);
      return {arith::ExtFOp::create(b, loc, f32s(lanes), w), column};
    }
    auto [qf, base] = isa<Q8_0Type>(element) ? q8_0Values(row, step) : q4_0Values(row, step);
    Value d = vector::BroadcastOp::create(b, loc, f32s(32), halfAt(row, base));
    Value column = arith::MulIOp::create(b, loc, step, index(32));
    return {arith::MulFOp::create(b, loc, d, qf), column};
  }

  /// f16 or bf16: `lanes` weights from column step * lanes.
  Value halves(Value row, Value step, Type element, Value acc) {
    Value column = arith::MulIOp::create(b, loc, step, index(lanes));
    Value w = read(storage, ValueRange{row, column}, lanes, element);
    return fma(arith::ExtFOp::create(b, loc, f32s(lanes), w), xAt(column), acc);
  }
};

/// Prefetches, for each row of the block, the same step of the row
/// `rowBlock` further on (clamped to the last row).
void prefetchNextRows(OpBuilder &b, Location loc, Value storage, ArrayRef<Value> rows,
                      int64_t rowBlock, Value step, int64_t stepElements) {
  const int64_t lastRow = cast<MemRefType>(storage.getType()).getDimSize(0) - 1;
  Value last = arith::ConstantIndexOp::create(b, loc, lastRow);
  Value column =
      arith::MulIOp::create(b, loc, step, arith::ConstantIndexOp::create(b, loc, stepElements));
  for (Value row : rows) {
    Value ahead =
        arith::AddIOp::create(b, loc, row, arith::ConstantIndexOp::create(b, loc, rowBlock));
    ahead = arith::MinUIOp::create(b, loc, ahead, last);
    memref::PrefetchOp::create(b, loc, storage, ValueRange{ahead, column}, /*isWrite=*/false,
                               /*localityHint=*/3, /*isDataCache=*/true);
  }
}

} // namespace

Value blockedDecodingMatVec(OpBuilder &b, Location loc, int64_t vectorWidth, int64_t rowBlock,
                            Value weight, Value input, Value first, Value blocks, Value init) {
  auto weightType = cast<RankedTensorType>(weight.getType());
  Type element = weightType.getElementType();
  WeightFormat format = *weightFormatOf(element);
  const int64_t width = weightType.getDimSize(1);
  const bool plain = !format.isBlockQuantized();
  const int64_t steps = plain ? width / vectorWidth : width / format.blockElements;
  RowDecoder decoder{b, loc, weightStorage(weight), input, vectorWidth, reductionFastMath(b)};
  // The rows' bytes, to prefetch the next block of rows: rows of a few
  // hundred bytes are streams too short for the hardware prefetcher.
  Value storageMemref;
  if (auto toTensor = decoder.storage.getDefiningOp<bufferization::ToTensorOp>())
    storageMemref = toTensor.getBuffer();
  const int64_t stepBytes = plain ? vectorWidth : format.blockBytes; // In storage elements.
  Value zero = decoder.index(0), one = decoder.index(1);
  Value zeros =
      arith::ConstantOp::create(b, loc, DenseElementsAttr::get(decoder.f32s(vectorWidth), 0.0f));
  auto rows = scf::ForOp::create(
      b, loc, zero, blocks, one, ValueRange{init},
      [&](OpBuilder &nb, Location l, Value block, ValueRange carried) {
        Value offset = arith::MulIOp::create(nb, l, block, decoder.index(rowBlock));
        Value row = arith::AddIOp::create(nb, l, first, offset);
        SmallVector<Value> rowIndex;
        for (int64_t r = 0; r < rowBlock; ++r)
          rowIndex.push_back(decoder.at(row, r));
        SmallVector<Value> accInit(rowBlock, zeros);
        auto columns = scf::ForOp::create(
            nb, l, zero, decoder.index(steps), one, accInit,
            [&](OpBuilder &ib, Location il, Value step, ValueRange acc) {
              if (storageMemref)
                prefetchNextRows(ib, il, storageMemref, rowIndex, rowBlock, step, stepBytes);
              SmallVector<Value> next;
              for (int64_t r = 0; r < rowBlock; ++r) {
                if (isa<Q8_0Type>(element))
                  next.push_back(decoder.q8_0(rowIndex[r], step, acc[r]));
                else if (isa<Q4_0Type>(element))
                  next.push_back(decoder.q4_0(rowIndex[r], step, acc[r]));
                else if (isa<Q4_KType, Q6_KType>(element))
                  next.push_back(decoder.kQuant(rowIndex[r], step, element, acc[r]));
                else
                  next.push_back(decoder.halves(rowIndex[r], step, element, acc[r]));
              }
              scf::YieldOp::create(ib, il, next);
            });
        SmallVector<Value> sums;
        for (int64_t r = 0; r < rowBlock; ++r)
          sums.push_back(vector::ReductionOp::create(nb, l, vector::CombiningKind::ADD,
                                                     columns.getResult(r), Value(),
                                                     decoder.fastMath.getValue()));
        Value rowSums = vector::FromElementsOp::create(nb, l, decoder.f32s(rowBlock), sums);
        Value y = vector::TransferWriteOp::create(nb, l, rowSums, carried[0], ValueRange{offset},
                                                  ArrayRef<bool>{true})
                      .getResult();
        scf::YieldOp::create(nb, l, ValueRange{y});
      });
  return rows.getResult(0);
}

Value decodeRowsInRegisters(OpBuilder &b, Location loc, int64_t vectorWidth, Value weight,
                            Value first, Value count, Value init) {
  auto weightType = cast<RankedTensorType>(weight.getType());
  Type element = weightType.getElementType();
  const int64_t width = weightType.getDimSize(1);
  WeightFormat format = *weightFormatOf(element);
  const int64_t steps =
      format.isBlockQuantized() ? width / format.blockElements : width / vectorWidth;
  RowDecoder decoder{b, loc, weightStorage(weight), Value(), vectorWidth, reductionFastMath(b)};
  Value zero = decoder.index(0), one = decoder.index(1);
  auto rows = scf::ForOp::create(
      b, loc, zero, count, one, ValueRange{init},
      [&](OpBuilder &nb, Location l, Value r, ValueRange carried) {
        Value row = arith::AddIOp::create(nb, l, first, r);
        auto columns = scf::ForOp::create(
            nb, l, zero, decoder.index(steps), one, ValueRange{carried[0]},
            [&](OpBuilder &ib, Location il, Value step, ValueRange out) {
              Value next;
              if (isa<Q4_KType, Q6_KType>(element)) {
                next = decoder.kQuantInto(row, step, element, r, out[0]);
              } else {
                auto [values, column] = decoder.decodedStep(row, step, element);
                next = vector::TransferWriteOp::create(ib, il, values, out[0],
                                                       ValueRange{r, column}, ArrayRef<bool>{true})
                           .getResult();
              }
              scf::YieldOp::create(ib, il, ValueRange{next});
            });
        scf::YieldOp::create(nb, l, columns.getResults());
      });
  return rows.getResult(0);
}

bool decodesInRegisters(Type weightType, int64_t vectorWidth) {
  auto type = cast<RankedTensorType>(weightType);
  Type element = type.getElementType();
  const int64_t width = type.getDimSize(1);
  if (isa<Q8_0Type, Q4_0Type>(element))
    return 32 % vectorWidth == 0 && width % 32 == 0;
  if (isa<Q4_KType, Q6_KType>(element))
    return 16 % vectorWidth == 0 && width % 256 == 0;
  return (element.isF16() || element.isBF16()) && width % vectorWidth == 0;
}

} // namespace mlir::quill
