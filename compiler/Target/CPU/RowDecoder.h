// The CPU's readers of encoded weight rows: one step of a row (a block of
// Q8_0 or Q4_0, a K-quant super-block, a vector of f16 or bf16) read from
// the weight's bytes and decoded in registers, for the matrix-vector
// products of DecodingMatVec.cpp and Int8DotMatVec.cpp.
#pragma once

#include "compiler/Conversion/QuillToLinalg/LinalgBuilders.h"
#include "compiler/Target/CPU/CpuKernelBuilder.h"
#include "dialects/Quill/IR/QuillDialect.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <functional>

namespace mlir::quill {

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
    return readVector(b, loc, source, indices, n, element);
  }
  Value xAt(Value column) { return read(input, ValueRange{column}, lanes, b.getF32Type()); }
  Value fma(Value w, Value x, Value acc) { return vector::FMAOp::create(b, loc, w, x, acc); }
  Value mul(Value x, Value y) { return arith::MulFOp::create(b, loc, x, y, fastMath); }
  Value slice(Value v, int64_t offset) {
    return vector::ExtractStridedSliceOp::create(b, loc, v, ArrayRef<int64_t>{offset},
                                                 ArrayRef<int64_t>{lanes}, ArrayRef<int64_t>{1});
  }

  /// The fp16 value at byte `offset` of `row`, as an f32 scalar.
  Value halfAt(Value row, Value offset) { return halfScalarAt(b, loc, storage, row, offset); }
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

  /// Called with each group of 32 weights of a K-quant super-block: their
  /// stored values as unsigned bytes (Q4_K's nibbles, 0..15; Q6_K's six
  /// bits, 0..63, the weight's q + 32), the first column, the scales of
  /// its two halves of 16 (the same for Q4_K) and Q4_K's offset (dmin *
  /// min; null for Q6_K), as f32 scalars: a weight is scale * q - offset.
  using GroupFn =
      std::function<void(Value q, Value column, Value scaleA, Value scaleB, Value offset)>;

  /// Q4_K: 8 sub-blocks of 32, each d * scale * q - dmin * min.
  void q4_KGroups(Value row, Value block, const GroupFn &visit) {
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
        Value scale = arith::MulFOp::create(b, loc, d, fscalar(sc));
        visit(nibbles[high], at(column0, 64 * chunk + 32 * high), scale, scale,
              arith::MulFOp::create(b, loc, dmin, fscalar(m)));
      }
    }
  }

  /// Q6_K: 16 sub-blocks of 16, each d * scale * (q - 32), q's low 4 bits
  /// in ql and high 2 in qh.
  void q6_KGroups(Value row, Value block, const GroupFn &visit) {
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
        Value scales[2];
        for (int64_t group = 0; group < 2; ++group)
          scales[group] = arith::MulFOp::create(
              b, loc, d,
              fscalar(byteAt(row, at(base, 192 + 8 * half + group + 2 * quarter), true)));
        visit(arith::OrIOp::create(b, loc, low, top), at(column0, 128 * half + 32 * quarter),
              scales[0], scales[1], Value());
      }
    }
  }

  /// `v`'s elements at `lanes` (a vector.shuffle of `v` with itself).
  Value pick(Value v, ArrayRef<int64_t> lanes) {
    return vector::ShuffleOp::create(b, loc, v, v, lanes);
  }

  /// Q4_K super-block `block` of `row`: its 8 sub-blocks' scales d * scale
  /// and minimums dmin * min as vector<8xf32>, the 6-bit fields unpacked in
  /// vector registers (the values q4_KGroups passes one by one).
  std::pair<Value, Value> q4_KScalesAndMins(Value row, Value block) {
    Value base = arith::MulIOp::create(b, loc, block, index(144));
    Value d = halfAt(row, base), dmin = halfAt(row, at(base, 2));
    // Bytes 4..15 of the block: 12 of scales (and 4 of quants, unused).
    Value packed = read(storage, ValueRange{row, at(base, 4)}, 16, b.getI8Type());
    auto quad = [&](int64_t first) {
      return pick(packed, {first, first + 1, first + 2, first + 3});
    };
    auto fours = [&](int64_t v) -> Value {
      return arith::ConstantOp::create(
          b, loc, DenseElementsAttr::get(VectorType::get({4}, b.getI8Type()), int8_t(v)));
    };
    auto andB = [&](Value v, int64_t m) -> Value {
      return arith::AndIOp::create(b, loc, v, fours(m));
    };
    auto shr = [&](Value v, int64_t n) -> Value {
      return arith::ShRUIOp::create(b, loc, v, fours(n));
    };
    auto shl = [&](Value v, int64_t n) -> Value {
      return arith::ShLIOp::create(b, loc, v, fours(n));
    };
    auto orB = [&](Value x, Value y) -> Value { return arith::OrIOp::create(b, loc, x, y); };
    Value low = quad(0), mid = quad(4), high = quad(8);
    // ggml's get_scale_min_k4, sub-blocks 0-3 then 4-7.
    Value scales =
        vector::ShuffleOp::create(b, loc, andB(low, 63), orB(andB(high, 15), shl(shr(low, 6), 4)),
                                  ArrayRef<int64_t>{0, 1, 2, 3, 4, 5, 6, 7});
    Value mins =
        vector::ShuffleOp::create(b, loc, andB(mid, 63), orB(shr(high, 4), shl(shr(mid, 6), 4)),
                                  ArrayRef<int64_t>{0, 1, 2, 3, 4, 5, 6, 7});
    auto times = [&](Value scalar, Value sixBits) -> Value {
      return arith::MulFOp::create(b, loc, vector::BroadcastOp::create(b, loc, f32s(8), scalar),
                                   arith::SIToFPOp::create(b, loc, f32s(8), sixBits));
    };
    return {times(d, scales), times(dmin, mins)};
  }

  /// Q6_K super-block `block` of `row`: its 16 sub-blocks' scales d * scale
  /// as vector<16xf32>.
  Value q6_KScales(Value row, Value block) {
    Value base = arith::MulIOp::create(b, loc, block, index(210));
    Value d = halfAt(row, at(base, 208));
    Value scales = read(storage, ValueRange{row, at(base, 192)}, 16, b.getI8Type());
    return arith::MulFOp::create(b, loc, vector::BroadcastOp::create(b, loc, f32s(16), d),
                                 arith::SIToFPOp::create(b, loc, f32s(16), scales));
  }

  /// The K-quant groups of a super-block as f32 sub-blocks: each sub-block's
  /// values (32 for Q4_K, 16 for Q6_K), first column, scale and offset.
  void kQuantSubBlocks(Value row, Value block, Type element, const SubBlockFn &visit) {
    if (isa<Q4_KType>(element)) {
      q4_KGroups(row, block, [&](Value q, Value column, Value scale, Value, Value offset) {
        visit(arith::SIToFPOp::create(b, loc, f32s(32), q), column, scale, offset);
      });
      return;
    }
    q6_KGroups(row, block, [&](Value q, Value column, Value scaleA, Value scaleB, Value) {
      Value qf =
          arith::SIToFPOp::create(b, loc, f32s(32), arith::SubIOp::create(b, loc, q, bytes(32)));
      for (int64_t group = 0; group < 2; ++group) {
        Value part = vector::ExtractStridedSliceOp::create(
            b, loc, qf, ArrayRef<int64_t>{16 * group}, ArrayRef<int64_t>{16}, ArrayRef<int64_t>{1});
        visit(part, at(column, 16 * group), group ? scaleB : scaleA, Value());
      }
    });
  }

  /// A K-quant super-block's contribution to a row's dot product.
  Value kQuant(Value row, Value block, Type element, Value acc) {
    SubBlockFn add = [&](Value qf, Value column, Value scaleValue, Value offsetValue) {
      acc = subBlock(qf, column, scaleValue, offsetValue, acc);
    };
    kQuantSubBlocks(row, block, element, add);
    return acc;
  }

  /// A K-quant sub-block's weights: scale * q - offset (`offset` may be
  /// null), rounded as the generic decoding rounds them.
  Value kQuantValues(Value qf, Value scaleValue, Value offsetValue) {
    const int64_t n = cast<VectorType>(qf.getType()).getDimSize(0);
    Value values =
        arith::MulFOp::create(b, loc, vector::BroadcastOp::create(b, loc, f32s(n), scaleValue), qf);
    if (offsetValue)
      values = arith::SubFOp::create(b, loc, values,
                                     vector::BroadcastOp::create(b, loc, f32s(n), offsetValue));
    return values;
  }

  /// A K-quant super-block of `row` decoded into row `r` of `out`.
  Value kQuantInto(Value row, Value block, Type element, Value r, Value out) {
    SubBlockFn write = [&](Value qf, Value column, Value scaleValue, Value offsetValue) {
      out = vector::TransferWriteOp::create(b, loc, kQuantValues(qf, scaleValue, offsetValue), out,
                                            ValueRange{r, column}, ArrayRef<bool>{true})
                .getResult();
    };
    kQuantSubBlocks(row, block, element, write);
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
    Value q = arith::SubIOp::create(b, loc, q4_0Nibbles(b, loc, storage, row, base), bytes(8));
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

} // namespace mlir::quill
