// GGUF's dequantization rules as scalar IR (ggml's dequantize_row_*), and
// the generic products that decode each weight where they read it.
#include "compiler/Conversion/QuillToLinalg/WeightDecoding.h"
#include "compiler/Conversion/QuillToLinalg/ActivationQuantization.h"

#include "compiler/Conversion/QuillToLinalg/LinalgBuilders.h"
#include "dialects/Quill/IR/QuillDialect.h"
#include "dialects/Quill/IR/WeightFormats.h"

#include "mlir/Dialect/Arith/Utils/Utils.h"

#include <optional>

namespace mlir::quill {

bool isEncodedWeight(Value weight) {
  return !cast<RankedTensorType>(weight.getType()).getElementType().isF32();
}

LogicalResult verifyBlockWeightsHaveBytes(Operation *root) {
  WalkResult walk =
      root->walk([](Operation *op) {
        if (!isa_and_nonnull<QuillDialect>(op->getDialect()))
          return WalkResult::advance();
        for (OpOperand &operand : op->getOpOperands()) {
          Value value = operand.get();
          // Other quill ops' block results (a Q8_0 cache's kv_write) are
          // the bytes of their own block operands.
          Operation *producer = value.getDefiningOp();
          if (!isBlockQuantized(value.getType()) ||
              (producer && isa_and_nonnull<QuillDialect>(producer->getDialect()) &&
               !isa<WeightOp>(producer)))
            continue;
          op->emitError("operand #")
              << operand.getOperandNumber() << " (" << value.getType()
              << ") is GGUF blocks that no quill.weight_view gives: a kernel reads a block "
                 "weight's bytes, so lower kernels after quill-outline-kernels";
          return WalkResult::interrupt();
        }
        return WalkResult::advance();
      });
  return failure(walk.wasInterrupted());
}

Value weightStorage(Value weight) {
  if (auto view = weight.getDefiningOp<WeightViewOp>())
    return view.getBytes();
  return weight;
}

namespace {

/// Index and integer arithmetic on the bytes of one encoded row: the last
/// dimension of `storage` at the `leading` indices.
struct BlockReader {
  OpBuilder &b;
  Location loc;
  Value storage;
  SmallVector<Value> leading;

  Value index(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value i32(int64_t v) { return arith::ConstantIntOp::create(b, loc, b.getI32Type(), v); }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  Value add(Value x, int64_t y) { return add(x, index(y)); }
  Value mul(Value x, int64_t y) { return arith::MulIOp::create(b, loc, x, index(y)); }
  Value div(Value x, int64_t y) { return arith::DivUIOp::create(b, loc, x, index(y)); }
  Value rem(Value x, int64_t y) { return arith::RemUIOp::create(b, loc, x, index(y)); }
  Value andI(Value x, int64_t m) { return arith::AndIOp::create(b, loc, x, i32(m)); }
  Value orI(Value x, Value y) { return arith::OrIOp::create(b, loc, x, y); }
  Value shr(Value x, Value s) { return arith::ShRUIOp::create(b, loc, x, s); }
  Value shr(Value x, int64_t s) { return shr(x, i32(s)); }
  Value shl(Value x, int64_t s) { return arith::ShLIOp::create(b, loc, x, i32(s)); }
  Value toI32(Value indexValue) {
    return arith::IndexCastUIOp::create(b, loc, b.getI32Type(), indexValue);
  }
  Value fmul(Value x, Value y) { return arith::MulFOp::create(b, loc, x, y); }
  Value fsub(Value x, Value y) { return arith::SubFOp::create(b, loc, x, y); }
  Value toF32(Value i32Value) { return arith::SIToFPOp::create(b, loc, b.getF32Type(), i32Value); }

  /// The byte at `offset` of the row, zero-extended to i32.
  Value byte(Value offset) { return arith::ExtUIOp::create(b, loc, b.getI32Type(), at(offset)); }
  /// The byte at `offset`, sign-extended (an int8 value).
  Value signedByte(Value offset) {
    return arith::ExtSIOp::create(b, loc, b.getI32Type(), at(offset));
  }
  Value at(Value offset) {
    SmallVector<Value> indices(leading);
    indices.push_back(offset);
    return tensor::ExtractOp::create(b, loc, storage, indices);
  }
  /// The little-endian fp16 at `offset`, as f32.
  Value half(Value offset) {
    Value bits = orI(byte(offset), shl(byte(add(offset, 1)), 8));
    Value i16 = arith::TruncIOp::create(b, loc, b.getI16Type(), bits);
    Value f16 = arith::BitcastOp::create(b, loc, b.getF16Type(), i16);
    return arith::ExtFOp::create(b, loc, b.getF32Type(), f16);
  }
};

/// Q8_0: d * q[i].
Value decodeQ8_0(BlockReader &r, Value column) {
  Value base = r.mul(r.div(column, 32), 34);
  Value q = r.signedByte(r.add(r.add(base, 2), r.rem(column, 32)));
  return r.fmul(r.half(base), r.toF32(q));
}

/// Q4_0: d * (nibble - 8); weight j < 16 the low nibble of byte j, weight
/// j + 16 the high one.
Value decodeQ4_0(BlockReader &r, Value column) {
  Value base = r.mul(r.div(column, 32), 18);
  Value i = r.rem(column, 32);
  Value packed = r.byte(r.add(r.add(base, 2), r.rem(i, 16)));
  Value shift = r.toI32(r.mul(r.div(i, 16), 4));
  Value q = arith::SubIOp::create(r.b, r.loc, r.andI(r.shr(packed, shift), 15), r.i32(8));
  return r.fmul(r.toF32(q), r.half(base));
}

/// Q4_K: d * scale * q - dmin * min of the weight's 32-wide sub-block.
Value decodeQ4_K(BlockReader &r, Value column) {
  OpBuilder &b = r.b;
  Location loc = r.loc;
  Value base = r.mul(r.div(column, 256), 144);
  Value w = r.rem(column, 256);
  // 64 weights per 32 bytes: the low nibbles, then the high ones.
  Value chunk = r.div(w, 64), high = r.div(r.rem(w, 64), 32), l = r.rem(w, 32);
  Value sub = r.add(r.mul(chunk, 2), high);
  Value packed = r.byte(r.add(r.add(base, 16), r.add(r.mul(chunk, 32), l)));
  Value q = r.andI(r.shr(packed, r.toI32(r.mul(high, 4))), 15);
  // The 6-bit scale and min of sub-block s (ggml's get_scale_min_k4).
  Value scales = r.add(base, 4);
  Value low = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, sub, r.index(4));
  Value a = r.byte(r.add(scales, sub));
  Value c4 = r.byte(r.add(scales, r.add(sub, 4)));
  Value below =
      r.byte(r.add(scales, arith::SelectOp::create(b, loc, low, sub, r.add(sub, -4)).getResult()));
  Value scaleHigh = r.orI(r.andI(c4, 15), r.shl(r.shr(below, 6), 4));
  Value minHigh = r.orI(r.shr(c4, 4), r.shl(r.shr(a, 6), 4));
  Value scale = arith::SelectOp::create(b, loc, low, r.andI(a, 63), scaleHigh);
  Value min = arith::SelectOp::create(b, loc, low, r.andI(c4, 63), minHigh);
  Value d1 = r.fmul(r.half(base), r.toF32(scale));
  Value m1 = r.fmul(r.half(r.add(base, 2)), r.toF32(min));
  return r.fsub(r.fmul(d1, r.toF32(q)), m1);
}

/// Q6_K: d * scale * (q - 32), q's low 4 bits in ql and high 2 in qh.
Value decodeQ6_K(BlockReader &r, Value column) {
  Value base = r.mul(r.div(column, 256), 210);
  Value w = r.rem(column, 256);
  // Two halves of 128; in each, four quarters of 32 share the ql and qh bytes.
  Value half = r.div(w, 128), v = r.rem(w, 128);
  Value quarter = r.div(v, 32), l = r.rem(v, 32);
  Value ql = r.byte(r.add(base, r.add(r.add(r.mul(half, 64), l), r.mul(r.rem(quarter, 2), 32))));
  Value qh = r.byte(r.add(base, r.add(r.add(r.mul(half, 32), l), 128)));
  Value lowBits = r.andI(r.shr(ql, r.toI32(r.mul(r.div(quarter, 2), 4))), 15);
  Value highBits = r.andI(r.shr(qh, r.toI32(r.mul(quarter, 2))), 3);
  Value q =
      arith::SubIOp::create(r.b, r.loc, r.orI(lowBits, r.shl(highBits, 4)), r.i32(32)).getResult();
  Value scaleAt = r.add(r.add(r.mul(half, 8), r.div(l, 16)), r.mul(quarter, 2));
  Value scale = r.signedByte(r.add(base, r.add(scaleAt, 192)));
  Value d = r.half(r.add(base, 208));
  return r.fmul(r.fmul(d, r.toF32(scale)), r.toF32(q));
}

} // namespace

Value decodeWeightElement(OpBuilder &b, Location loc, Value storage, RankedTensorType weightType,
                          Value row, Value column) {
  return decodeElement(b, loc, storage, weightType.getElementType(), ValueRange{row}, column);
}

Value decodeElement(OpBuilder &b, Location loc, Value storage, Type element, ValueRange leading,
                    Value column) {
  if (element.isF32() || element.isF16() || element.isBF16()) {
    SmallVector<Value> indices(leading);
    indices.push_back(column);
    Value v = tensor::ExtractOp::create(b, loc, storage, indices);
    return element.isF32() ? v : arith::ExtFOp::create(b, loc, b.getF32Type(), v).getResult();
  }
  BlockReader reader{b, loc, storage, SmallVector<Value>(leading)};
  if (isa<Q8_0Type>(element))
    return decodeQ8_0(reader, column);
  if (isa<Q4_0Type>(element))
    return decodeQ4_0(reader, column);
  if (isa<Q4_KType>(element))
    return decodeQ4_K(reader, column);
  assert(isa<Q6_KType>(element) && "a weight encoding without a decoder");
  return decodeQ6_K(reader, column);
}

Value decodingMatVec(OpBuilder &b, Location loc, Value weight, Value input, OpFoldResult firstRow,
                     OpFoldResult rows, Value init) {
  MLIRContext *ctx = b.getContext();
  auto weightType = cast<RankedTensorType>(weight.getType());
  Value storage = weightStorage(weight);
  Value first = getValueOrCreateConstantIndexOp(b, loc, firstRow);
  AffineExpr r, k;
  bindDims(ctx, r, k);
  auto fastMath = reductionFastMath(b);
  Value zeros =
      linalg::FillOp::create(b, loc, ValueRange{f32Constant(b, loc, 0.0f)}, ValueRange{init})
          ->getResult(0);
  return buildGeneric(b, loc, ValueRange{input}, zeros,
                      {AffineMap::get(2, 0, {k}, ctx), AffineMap::get(2, 0, {r}, ctx)},
                      {utils::IteratorType::parallel, utils::IteratorType::reduction},
                      [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
                        Value row =
                            arith::AddIOp::create(nb, l, first, linalg::IndexOp::create(nb, l, 0));
                        Value w = decodeWeightElement(nb, l, storage, weightType, row,
                                                      linalg::IndexOp::create(nb, l, 1));
                        Value product = arith::MulFOp::create(nb, l, w, args[0], fastMath);
                        return arith::AddFOp::create(nb, l, args[1], product, fastMath);
                      });
}

/// out[t, r] += decoded W[first + r, k] * X[t, k] over all of `init`;
/// with `q8Scales` (X's Q8_0 block scales), X[t, k] rounded to its block
/// where it is read (the rounded rows are never stored: a [T, K] copy per
/// kernel call would outgrow a GPU thread's local memory); with
/// `bf16Input`, X[t, k] rounded to bf16 there.
static Value decodingProduct(OpBuilder &b, Location loc, Value weight, Value input, Value first,
                             Value init, const std::optional<Q8BlockScales> &q8Scales,
                             bool bf16Input) {
  MLIRContext *ctx = b.getContext();
  auto weightType = cast<RankedTensorType>(weight.getType());
  Value storage = weightStorage(weight);
  AffineExpr t, r, k;
  bindDims(ctx, t, r, k);
  auto fastMath = reductionFastMath(b);
  SmallVector<Value> inputs = {input};
  SmallVector<AffineMap> maps = {AffineMap::get(3, 0, {t, k}, ctx)};
  if (q8Scales) {
    inputs.append({q8Scales->scales, q8Scales->inverses});
    AffineMap perBlock = AffineMap::get(3, 0, {t, k.floorDiv(kQ8Block)}, ctx);
    maps.append({perBlock, perBlock});
  }
  maps.push_back(AffineMap::get(3, 0, {t, r}, ctx));
  return buildGeneric(
      b, loc, inputs, init, maps,
      {utils::IteratorType::parallel, utils::IteratorType::parallel,
       utils::IteratorType::reduction},
      [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
        Value row = arith::AddIOp::create(nb, l, first, linalg::IndexOp::create(nb, l, 1));
        Value w =
            decodeWeightElement(nb, l, storage, weightType, row, linalg::IndexOp::create(nb, l, 2));
        Value x = q8Scales ? q8Dequantized(nb, l, args[0], args[1], args[2]) : args[0];
        if (bf16Input)
          x = bf16Rounded(nb, l, x);
        Value product = arith::MulFOp::create(nb, l, x, w, fastMath);
        return arith::AddFOp::create(nb, l, args.back(), product, fastMath);
      });
}

Value decodingMatMul(OpBuilder &b, Location loc, Value weight, Value input, OpFoldResult firstRow,
                     OpFoldResult rows, Value liveRows, Value init, bool q8Input, bool bf16Input) {
  Value first = getValueOrCreateConstantIndexOp(b, loc, firstRow);
  // The block scales of all T rows (static sizes, so no heap buffer).
  std::optional<Q8BlockScales> scales;
  if (q8Input)
    scales = q8BlockScales(b, loc, input);
  if (!liveRows) {
    Value out =
        linalg::FillOp::create(b, loc, ValueRange{f32Constant(b, loc, 0.0f)}, ValueRange{init})
            ->getResult(0);
    return decodingProduct(b, loc, weight, input, first, out, scales, bf16Input);
  }
  return overLiveRows(b, loc, input, liveRows, rows, init, [&](Value liveInput, Value liveOut) {
    std::optional<Q8BlockScales> live;
    if (scales) {
      // The live rows' scales.
      OpFoldResult count = tensor::getMixedSize(b, loc, liveInput, 0);
      auto rowsOf = [&](Value v) -> Value {
        auto type = cast<RankedTensorType>(v.getType());
        return tensor::ExtractSliceOp::create(
            b, loc, v, ArrayRef<OpFoldResult>{b.getIndexAttr(0), b.getIndexAttr(0)},
            ArrayRef<OpFoldResult>{count, b.getIndexAttr(type.getDimSize(1))},
            ArrayRef<OpFoldResult>{b.getIndexAttr(1), b.getIndexAttr(1)});
      };
      live = Q8BlockScales{rowsOf(scales->scales), rowsOf(scales->inverses)};
    }
    return decodingProduct(b, loc, weight, liveInput, first, liveOut, live, bf16Input);
  });
}

Value decodedRows(OpBuilder &b, Location loc, Value weight, Value firstRow, Value init) {
  auto weightType = cast<RankedTensorType>(weight.getType());
  Value storage = weightStorage(weight);
  return buildElementwise(
      b, loc, ValueRange{}, init, [&](OpBuilder &nb, Location l, ValueRange) -> Value {
        Value row = arith::AddIOp::create(nb, l, firstRow, linalg::IndexOp::create(nb, l, 0));
        return decodeWeightElement(nb, l, storage, weightType, row,
                                   linalg::IndexOp::create(nb, l, 1));
      });
}

Value decodedRow(OpBuilder &b, Location loc, Value weight, Value row, OpFoldResult first,
                 Value init) {
  auto weightType = cast<RankedTensorType>(weight.getType());
  Value storage = weightStorage(weight);
  Value begin = getValueOrCreateConstantIndexOp(b, loc, first);
  return buildElementwise(
      b, loc, ValueRange{}, init, [&](OpBuilder &nb, Location l, ValueRange) -> Value {
        Value column = arith::AddIOp::create(nb, l, begin, linalg::IndexOp::create(nb, l, 0));
        return decodeWeightElement(nb, l, storage, weightType, row, column);
      });
}

} // namespace mlir::quill
