// The int8 products over weights stored in row groups (#quill.row_groups,
// QuillAttrs.td): a block of a group's L rows is their L f16 scales, then
// each 4-byte word of their quants as one vector of L lanes, already the
// unsigned bytes vpdpbusd multiplies (Q8_0's sign bits flipped when the
// artifact was written). Decode (here) and the matmuls (Int8DotMatMul.cpp)
// load a block with one scale load and 8 (Q8_0) or 4 (Q4_0) vector loads:
// no gathers, no transposes, and each lane ends as one row's sum, with no
// horizontal sums.
#include "compiler/Conversion/QuillToLinalg/ActivationQuantization.h"
#include "compiler/Conversion/QuillToLinalg/WeightDecoding.h"
#include "compiler/Target/CPU/CpuKernelBuilder.h"
#include "dialects/Quill/IR/QuillDialect.h"
#include "dialects/Quill/IR/WeightFormats.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace mlir::quill {

namespace {

Value indexConstant(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}

Value wordSplat(OpBuilder &b, Location loc, int64_t lanes, int32_t v) {
  return arith::ConstantOp::create(
      b, loc, DenseElementsAttr::get(VectorType::get({lanes}, b.getI32Type()), v));
}

} // namespace

Value flatWeightBytes(OpBuilder &b, Location loc, Value weight) {
  Value storage = weightStorage(weight);
  return tensor::CollapseShapeOp::create(
      b, loc, storage, ArrayRef<ReassociationIndices>{ReassociationIndices{0, 1}});
}

RowGroupBlock readRowGroupBlock(OpBuilder &b, Location loc, Value flat, Type element, int64_t lanes,
                                Value groupBase, Value step) {
  const WeightFormat format = *weightFormatOf(element);
  // The block's bytes: L scales (2 bytes each), then the word vectors.
  Value at = arith::AddIOp::create(
      b, loc, groupBase,
      arith::MulIOp::create(b, loc, step, indexConstant(b, loc, lanes * format.blockBytes)));
  auto bytesAt = [&](int64_t offset, int64_t n) {
    return readVector(b, loc, flat,
                      ValueRange{arith::AddIOp::create(b, loc, at, indexConstant(b, loc, offset))},
                      n, b.getI8Type());
  };
  RowGroupBlock block;
  Value halves = vector::BitCastOp::create(b, loc, VectorType::get({lanes}, b.getF16Type()),
                                           bytesAt(0, 2 * lanes));
  block.scales = arith::ExtFOp::create(b, loc, VectorType::get({lanes}, b.getF32Type()), halves);
  auto words = VectorType::get({lanes}, b.getI32Type());
  const int64_t stored = (format.blockBytes - 2) / 4;
  SmallVector<Value> packed;
  for (int64_t j = 0; j < stored; ++j)
    packed.push_back(
        vector::BitCastOp::create(b, loc, words, bytesAt(2 * lanes + 4 * lanes * j, 4 * lanes)));
  if (isa<Q8_0Type>(element)) {
    block.words = packed;
    return block;
  }
  // Q4_0: byte j holds weight j (low nibble) and j + 16 (high nibble), so
  // the low nibbles meet input words 0-3 and the high ones words 4-7.
  Value mask = wordSplat(b, loc, lanes, 0x0F0F0F0F);
  for (Value w : packed)
    block.words.push_back(arith::AndIOp::create(b, loc, w, mask));
  for (Value w : packed)
    block.words.push_back(arith::AndIOp::create(
        b, loc, arith::ShRUIOp::create(b, loc, w, wordSplat(b, loc, lanes, 4)), mask));
  return block;
}

Value int8Dot(OpBuilder &b, Location loc, Value acc, Value weights, Value input) {
  const int64_t lanes = cast<VectorType>(acc.getType()).getDimSize(0);
  llvm::StringRef intrinsic =
      lanes == 16 ? "llvm.x86.avx512.vpdpbusd.512" : "llvm.x86.avx512.vpdpbusd.256";
  auto bytes = VectorType::get({4 * lanes}, b.getI8Type());
  Value w = vector::BitCastOp::create(b, loc, bytes, weights);
  Value x = vector::BitCastOp::create(b, loc, bytes, input);
  return LLVM::CallIntrinsicOp::create(b, loc, acc.getType(), b.getStringAttr(intrinsic),
                                       ValueRange{acc, w, x})
      .getResult(0);
}

int64_t rowGroupOffset(Type element) { return isa<Q8_0Type>(element) ? 128 : 8; }

Value int8RowGroupMatVec(OpBuilder &b, Location loc, int64_t lanes, Value weight,
                         const Int8Input &input, Value first, Value groups, Value init) {
  auto weightType = cast<RankedTensorType>(weight.getType());
  Type element = weightType.getElementType();
  const int64_t rowBytes = rowStorageBytes(weightType);
  const int64_t steps = weightType.getDimSize(1) / kQ8Block;
  auto floats = VectorType::get({lanes}, b.getF32Type());
  auto words = VectorType::get({lanes}, b.getI32Type());
  Value flat = flatWeightBytes(b, loc, weight);
  Value zeros = arith::ConstantOp::create(b, loc, DenseElementsAttr::get(floats, 0.0f));
  auto loop = scf::ForOp::create(
      b, loc, indexConstant(b, loc, 0), groups, indexConstant(b, loc, 1), ValueRange{init},
      [&](OpBuilder &nb, Location l, Value group, ValueRange carried) {
        Value offset = arith::MulIOp::create(nb, l, group, indexConstant(nb, l, lanes));
        Value base = arith::MulIOp::create(nb, l, arith::AddIOp::create(nb, l, first, offset),
                                           indexConstant(nb, l, rowBytes));
        auto columns = scf::ForOp::create(
            nb, l, indexConstant(nb, l, 0), indexConstant(nb, l, steps), indexConstant(nb, l, 1),
            ValueRange{zeros}, [&](OpBuilder &ib, Location il, Value step, ValueRange acc) {
              RowGroupBlock w = readRowGroupBlock(ib, il, flat, element, lanes, base, step);
              Value column = arith::MulIOp::create(ib, il, step, indexConstant(ib, il, kQ8Block));
              Value xWords = vector::BitCastOp::create(
                  ib, il, VectorType::get({kQ8Block / 4}, ib.getI32Type()),
                  readVector(ib, il, input.values, ValueRange{column}, kQ8Block, ib.getI8Type()));
              Value half = arith::MulIOp::create(ib, il, step, indexConstant(ib, il, 2));
              Value sum = arith::AddIOp::create(
                  ib, il, tensor::ExtractOp::create(ib, il, input.halfSums, ValueRange{half}),
                  tensor::ExtractOp::create(
                      ib, il, input.halfSums,
                      ValueRange{arith::AddIOp::create(ib, il, half, indexConstant(ib, il, 1))}));
              // -offset * sum(q_x) takes the weights' offset off exactly.
              Value start = arith::MulIOp::create(
                  ib, il, sum,
                  arith::ConstantIntOp::create(ib, il, ib.getI32Type(), -rowGroupOffset(element)));
              Value ints = vector::BroadcastOp::create(ib, il, words, start);
              for (int64_t j = 0; j < kQ8Block / 4; ++j)
                ints =
                    int8Dot(ib, il, ints, w.words[j],
                            vector::BroadcastOp::create(
                                ib, il, words,
                                vector::ExtractOp::create(ib, il, xWords, ArrayRef<int64_t>{j})));
              Value dx = tensor::ExtractOp::create(ib, il, input.scales, ValueRange{step});
              Value scale = arith::MulFOp::create(ib, il, w.scales,
                                                  vector::BroadcastOp::create(ib, il, floats, dx));
              Value next = vector::FMAOp::create(
                  ib, il, scale, arith::SIToFPOp::create(ib, il, floats, ints), acc[0]);
              scf::YieldOp::create(ib, il, next);
            });
        Value y = vector::TransferWriteOp::create(nb, l, columns.getResult(0), carried[0],
                                                  ValueRange{offset}, ArrayRef<bool>{true})
                      .getResult();
        scf::YieldOp::create(nb, l, ValueRange{y});
      });
  return loop.getResult(0);
}

} // namespace mlir::quill
