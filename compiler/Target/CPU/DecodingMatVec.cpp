// The CPU's matrix-vector products over encoded weights, decoding in
// registers: each step loads one block of every row of a row block (32
// int8 values and an fp16 scale for Q8_0; 16 bytes of nibbles for Q4_0; a
// vector of f16 or bf16), widens it to f32 lanes and accumulates
// scale * (q . x) into that row's vector of partial sums. Only the stored
// bytes cross the memory bus.
#include "compiler/Target/CPU/CpuKernelBuilder.h"

#include "compiler/Conversion/QuillToLinalg/LinalgBuilders.h"
#include "compiler/Conversion/QuillToLinalg/WeightDecoding.h"
#include "dialects/Quill/IR/QuillDialect.h"
#include "dialects/Quill/IR/WeightFormats.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

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

  /// The fp16 scale at byte `offset` of `row`, broadcast to the lanes.
  Value scale(Value row, Value offset) {
    Value bytes = read(storage, ValueRange{row, offset}, 2, b.getI8Type());
    Value half = vector::BitCastOp::create(b, loc, VectorType::get({1}, b.getF16Type()), bytes);
    Value f = arith::ExtFOp::create(b, loc, f32s(1), half);
    Value scalar = vector::ExtractOp::create(b, loc, f, ArrayRef<int64_t>{0});
    return vector::BroadcastOp::create(b, loc, f32s(lanes), scalar);
  }

  /// sum over the 32 weights of block `block`: d * q * x, q as f32 lanes.
  Value blockDot(Value qf, Value d, Value block, Value acc) {
    Value column = arith::MulIOp::create(b, loc, block, index(32));
    Value dot;
    for (int64_t part = 0; part < 32 / lanes; ++part) {
      Value x = xAt(at(column, part * lanes));
      Value q = slice(qf, part * lanes);
      dot = dot ? fma(q, x, dot) : mul(q, x);
    }
    return fma(d, dot, acc);
  }

  Value q8_0(Value row, Value block, Value acc) {
    Value base = arith::MulIOp::create(b, loc, block, index(34));
    Value q = read(storage, ValueRange{row, at(base, 2)}, 32, b.getI8Type());
    Value qf = arith::SIToFPOp::create(b, loc, f32s(32), q);
    return blockDot(qf, scale(row, base), block, acc);
  }

  Value q4_0(Value row, Value block, Value acc) {
    Value base = arith::MulIOp::create(b, loc, block, index(18));
    Value packed = read(storage, ValueRange{row, at(base, 2)}, 16, b.getI8Type());
    auto bytes = VectorType::get({16}, b.getI8Type());
    auto splat = [&](int64_t v) {
      return arith::ConstantOp::create(b, loc, DenseElementsAttr::get(bytes, int8_t(v)));
    };
    // Weights 0-15 the low nibbles, 16-31 the high ones, each minus 8.
    Value low =
        arith::SubIOp::create(b, loc, arith::AndIOp::create(b, loc, packed, splat(15)), splat(8));
    Value high =
        arith::SubIOp::create(b, loc, arith::ShRUIOp::create(b, loc, packed, splat(4)), splat(8));
    Value q =
        vector::ShuffleOp::create(b, loc, low, high, llvm::to_vector(llvm::seq<int64_t>(0, 32)));
    Value qf = arith::SIToFPOp::create(b, loc, f32s(32), q);
    return blockDot(qf, scale(row, base), block, acc);
  }

  /// f16 or bf16: `lanes` weights from column step * lanes.
  Value halves(Value row, Value step, Type element, Value acc) {
    Value column = arith::MulIOp::create(b, loc, step, index(lanes));
    Value w = read(storage, ValueRange{row, column}, lanes, element);
    return fma(arith::ExtFOp::create(b, loc, f32s(lanes), w), xAt(column), acc);
  }
};

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
              SmallVector<Value> next;
              for (int64_t r = 0; r < rowBlock; ++r) {
                if (isa<Q8_0Type>(element))
                  next.push_back(decoder.q8_0(rowIndex[r], step, acc[r]));
                else if (isa<Q4_0Type>(element))
                  next.push_back(decoder.q4_0(rowIndex[r], step, acc[r]));
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

bool decodesInRegisters(Type weightType, int64_t vectorWidth) {
  auto type = cast<RankedTensorType>(weightType);
  Type element = type.getElementType();
  const int64_t width = type.getDimSize(1);
  if (isa<Q8_0Type, Q4_0Type>(element))
    return 32 % vectorWidth == 0 && width % 32 == 0;
  return (element.isF16() || element.isBF16()) && width % vectorWidth == 0;
}

} // namespace mlir::quill
