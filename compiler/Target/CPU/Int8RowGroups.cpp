// The int8 products over weights stored in row groups (#quill.row_groups,
// QuillAttrs.td): a block of a group's L rows is their L f16 scales (none
// for Q4_K), then each 4-byte word of the rest of the block as one vector
// of L lanes. Decode (here) and the matmuls (Int8DotMatMul.cpp) load a
// block with whole vector loads: no gathers, no transposes, and each lane
// ends as one row's sum, with no horizontal sums. Q8_0's bytes are the
// unsigned bytes vpdpbusd multiplies already (their sign bits flipped when
// the artifact was written); Q4_0's, Q4_K's and Q6_K's nibbles and bits
// are split out of their words with a few lane-wise shifts and masks, and
// a K-quant's sub-block scales from its scale words likewise.
#include "compiler/Conversion/QuillToLinalg/ActivationQuantization.h"
#include "compiler/Conversion/QuillToLinalg/WeightDecoding.h"
#include "compiler/Target/CPU/CpuKernelBuilder.h"
#include "dialects/Quill/IR/QuillDialect.h"
#include "dialects/Quill/IR/RowGroupLayout.h"
#include "dialects/Quill/IR/WeightFormats.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace mlir::quill {

namespace {

Value indexConstant(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}

/// Lane-wise word arithmetic on vector<L x i32>.
struct Words {
  OpBuilder &b;
  Location loc;
  int64_t lanes;

  VectorType type() const { return VectorType::get({lanes}, b.getI32Type()); }
  VectorType floats() const { return VectorType::get({lanes}, b.getF32Type()); }
  Value splat(int32_t v) const {
    return arith::ConstantOp::create(b, loc, DenseElementsAttr::get(type(), v));
  }
  Value mask(Value w, int32_t m) const { return arith::AndIOp::create(b, loc, w, splat(m)); }
  Value shr(Value w, int32_t n) const {
    return n ? arith::ShRUIOp::create(b, loc, w, splat(n)).getResult() : w;
  }
  Value shl(Value w, int32_t n) const {
    return n ? arith::ShLIOp::create(b, loc, w, splat(n)).getResult() : w;
  }
  Value orW(Value x, Value y) const { return arith::OrIOp::create(b, loc, x, y); }
  /// Byte k of each lane, zero-extended.
  Value byte(Value w, int64_t k) const { return mask(shr(w, int32_t(8 * k)), 0xFF); }
  /// The low (high) f16 of each lane as f32.
  Value half(Value w, bool high) const {
    auto halves = VectorType::get({lanes}, b.getI16Type());
    Value bits = arith::TruncIOp::create(b, loc, halves, shr(w, high ? 16 : 0));
    Value halves16 =
        vector::BitCastOp::create(b, loc, VectorType::get({lanes}, b.getF16Type()), bits);
    return arith::ExtFOp::create(b, loc, floats(), halves16);
  }
  /// scale * float(ints) lane by lane.
  Value times(Value scale, Value ints) const {
    return arith::MulFOp::create(b, loc, scale, arith::SIToFPOp::create(b, loc, floats(), ints));
  }
};

/// The (step, word) pairs of a chunk in the order its weight words lie.
SmallVector<std::pair<int64_t, int64_t>> rowGroupWordOrder(Type element) {
  SmallVector<std::pair<int64_t, int64_t>> order;
  if (isa<Q4_KType>(element)) {
    // Run c of 32 bytes: steps 2c and 2c + 1 share each word.
    for (int64_t c = 0; c < 4; ++c)
      for (int64_t j = 0; j < 8; ++j)
        order.append({{2 * c, j}, {2 * c + 1, j}});
  } else if (isa<Q6_KType>(element)) {
    // A half's four quarters share its words of qh and pairs of ql.
    for (int64_t half = 0; half < 2; ++half)
      for (int64_t j = 0; j < 8; ++j)
        for (int64_t quarter = 0; quarter < 4; ++quarter)
          order.push_back({4 * half + quarter, j});
  } else {
    for (int64_t j = 0; j < 8; ++j)
      order.push_back({0, j});
  }
  return order;
}

} // namespace

Value flatWeightBytes(OpBuilder &b, Location loc, Value weight) {
  Value storage = weightStorage(weight);
  return tensor::CollapseShapeOp::create(
      b, loc, storage, ArrayRef<ReassociationIndices>{ReassociationIndices{0, 1}});
}

int64_t rowGroupStepsPerChunk(Type element) { return isa<Q4_KType, Q6_KType>(element) ? 8 : 1; }

RowGroupChunk::RowGroupChunk(OpBuilder &b, Location loc, Value flat, Type element, int64_t lanes,
                             Value groupBase, Value chunk)
    : b(b), loc(loc), flat(flat), element(element), lanes(lanes),
      scaleVectors(rowGroupStepsPerChunk(element)), secondVectors(scaleVectors.size()) {
  const WeightFormat format = *weightFormatOf(element);
  at = arith::AddIOp::create(
      b, loc, groupBase,
      arith::MulIOp::create(b, loc, chunk, indexConstant(b, loc, lanes * format.blockBytes)));
}

Value RowGroupChunk::bytesAt(int64_t offset, int64_t n) {
  return readVector(b, loc, flat,
                    ValueRange{arith::AddIOp::create(b, loc, at, indexConstant(b, loc, offset))}, n,
                    b.getI8Type());
}

Value RowGroupChunk::raw(int64_t j) {
  Value &word = rawWords[j];
  if (!word) {
    // After the L f16 scales (none for Q4_K).
    const int64_t halfBytes = isa<Q4_KType>(element) ? 0 : 2;
    const int64_t offset = halfBytes * lanes + 4 * lanes * j;
    word = vector::BitCastOp::create(b, loc, VectorType::get({lanes}, b.getI32Type()),
                                     bytesAt(offset, 4 * lanes));
  }
  return word;
}

Value RowGroupChunk::halfScales() {
  if (!halves) {
    Value bits = vector::BitCastOp::create(b, loc, VectorType::get({lanes}, b.getF16Type()),
                                           bytesAt(0, 2 * lanes));
    halves = arith::ExtFOp::create(b, loc, VectorType::get({lanes}, b.getF32Type()), bits);
  }
  return halves;
}

Value RowGroupChunk::word(int64_t s, int64_t j) {
  Words w{b, loc, lanes};
  const int32_t nibbles = 0x0F0F0F0F;
  if (isa<Q8_0Type>(element))
    return raw(j);
  if (isa<Q4_0Type>(element)) {
    // Byte j holds weight j (low nibble) and j + 16 (high nibble), so the
    // low nibbles meet input words 0-3 and the high ones words 4-7.
    return j < 4 ? w.mask(raw(j), nibbles) : w.mask(w.shr(raw(j - 4), 4), nibbles);
  }
  if (isa<Q4_KType>(element)) {
    // Words 4-35: four runs of 32 bytes, run c sub-block 2c in the low
    // nibbles and 2c + 1 in the high ones.
    Value packed = raw(4 + 8 * (s / 2) + j);
    return w.mask(w.shr(packed, s % 2 ? 4 : 0), nibbles);
  }
  // Q6_K: file words 0-31 ql, 32-47 qh (stored as q6kFileWord orders
  // them). Each half of 128 weights has 16 words of ql (quarters 0 and 2
  // the low and high nibbles of its first 8, 1 and 3 of the next 8) and 8
  // of qh (two bits per quarter).
  const int64_t half = s / 4, quarter = s % 4;
  Value ql = raw(::quill::q6kStoredWord(16 * half + 8 * (quarter % 2) + j)),
        qh = raw(::quill::q6kStoredWord(32 + 8 * half + j));
  Value low = w.mask(w.shr(ql, int32_t(4 * (quarter / 2))), nibbles);
  Value top = w.shl(w.mask(w.shr(qh, int32_t(2 * quarter)), 0x03030303), 4);
  return w.orW(low, top);
}

Value RowGroupChunk::scales(int64_t s) {
  if (!scaleVectors[s])
    readScales(s);
  return scaleVectors[s];
}

Value RowGroupChunk::second(int64_t s) {
  if (isa<Q8_0Type, Q4_0Type>(element))
    return Value();
  if (!secondVectors[s])
    readScales(s);
  return secondVectors[s];
}

void RowGroupChunk::readScales(int64_t s) {
  Words w{b, loc, lanes};
  if (isa<Q8_0Type, Q4_0Type>(element)) {
    scaleVectors[s] = halfScales();
    return;
  }
  if (isa<Q4_KType>(element)) {
    // Word 0: d and dmin; words 1-3: the 6-bit scales and minimums
    // (ggml's get_scale_min_k4).
    Value d = w.half(raw(0), false), dmin = w.half(raw(0), true);
    Value scale, min;
    if (s < 4) {
      scale = w.mask(w.byte(raw(1), s), 63);
      min = w.mask(w.byte(raw(2), s), 63);
    } else {
      const int64_t k = s - 4;
      scale = w.orW(w.mask(w.byte(raw(3), k), 0x0F), w.shl(w.shr(w.byte(raw(1), k), 6), 4));
      min = w.orW(w.shr(w.byte(raw(3), k), 4), w.shl(w.shr(w.byte(raw(2), k), 6), 4));
    }
    scaleVectors[s] = w.times(d, scale);
    secondVectors[s] = w.times(dmin, min);
    return;
  }
  // Q6_K: file words 48-51 are the 16 int8 scales of 16 weights each
  // (times d); step s's halves have scales 8 (s / 4) + 2 (s % 4) and the
  // next.
  auto scaleOf = [&](int64_t k) {
    Value signedByte = arith::ShRSIOp::create(
        b, loc, w.shl(raw(::quill::q6kStoredWord(48 + k / 4)), int32_t(24 - 8 * (k % 4))),
        w.splat(24));
    return w.times(halfScales(), signedByte);
  };
  const int64_t k = 8 * (s / 4) + 2 * (s % 4);
  scaleVectors[s] = scaleOf(k);
  secondVectors[s] = scaleOf(k + 1);
}

void RowGroupChunk::loadAll() {
  const int64_t halfBytes = isa<Q4_KType>(element) ? 0 : 2;
  const int64_t words = (weightFormatOf(element)->blockBytes - halfBytes) / 4;
  for (int64_t j = 0; j < words; ++j)
    raw(j);
}

RowGroupBlock RowGroupChunk::block(int64_t s) {
  RowGroupBlock out;
  for (int64_t j = 0; j < 8; ++j)
    out.words.push_back(word(s, j));
  out.scales = scales(s);
  out.second = second(s);
  return out;
}

SmallVector<Int8Sums> startGroupSums(OpBuilder &b, Location loc, Int8DotForm form, Type element,
                                     const Int8StepInput &x, int64_t lanes, int64_t runs) {
  Words w{b, loc, lanes};
  auto i32 = [&](int64_t v) { return arith::ConstantIntOp::create(b, loc, b.getI32Type(), v); };
  const int64_t offset = int8WeightOffset(form, element);
  SmallVector<Int8Sums> starts;
  if (isa<Q6_KType>(element)) {
    for (Value half : x.halfSums)
      starts.emplace_back(form, element,
                          vector::BroadcastOp::create(
                              b, loc, w.type(), arith::MulIOp::create(b, loc, half, i32(-offset))));
    return starts;
  }
  Value first = w.splat(0);
  if (offset) {
    Value sum = arith::AddIOp::create(b, loc, x.halfSums[0], x.halfSums[1]);
    first = vector::BroadcastOp::create(b, loc, w.type(),
                                        arith::MulIOp::create(b, loc, sum, i32(-offset)));
  }
  starts.emplace_back(form, element, first);
  for (int64_t run = 1; run < runs; ++run)
    starts.emplace_back(form, element, w.splat(0));
  return starts;
}

int64_t groupSumRun(Type element, int64_t j, int64_t runs) {
  return isa<Q6_KType>(element) ? j / 4 : j * runs / 8;
}

Value finishGroupStep(OpBuilder &b, Location loc, Type element, Value scales, Value second,
                      MutableArrayRef<Int8Sums> ints, const Int8StepInput &x, Value lanes) {
  Words w{b, loc, cast<VectorType>(lanes.getType()).getDimSize(0)};
  Value dx = vector::BroadcastOp::create(b, loc, w.floats(), x.scale);
  auto addScaled = [&](Value scale, Value sum) {
    lanes = vector::FMAOp::create(b, loc, arith::MulFOp::create(b, loc, scale, dx),
                                  arith::SIToFPOp::create(b, loc, w.floats(), sum), lanes);
  };
  if (isa<Q6_KType>(element)) {
    addScaled(scales, ints[0].sums(b, loc));
    addScaled(second, ints[1].sums(b, loc));
    return lanes;
  }
  // The runs' sums added as a tree (exact integers: any order gives the
  // same sum).
  SmallVector<Value> sums;
  for (Int8Sums &run : ints)
    sums.push_back(run.sums(b, loc));
  while (sums.size() > 1) {
    SmallVector<Value> next;
    for (size_t i = 0; i + 1 < sums.size(); i += 2)
      next.push_back(arith::AddIOp::create(b, loc, sums[i], sums[i + 1]));
    if (sums.size() % 2)
      next.push_back(sums.back());
    sums = std::move(next);
  }
  addScaled(scales, sums.front());
  if (isa<Q4_KType>(element)) {
    // - dmin * min * d_x * sum(q_x).
    Value xSum = arith::AddIOp::create(b, loc, x.halfSums[0], x.halfSums[1]);
    Value minusXSum = arith::NegFOp::create(
        b, loc,
        arith::MulFOp::create(b, loc, x.scale,
                              arith::SIToFPOp::create(b, loc, b.getF32Type(), xSum)));
    lanes = vector::FMAOp::create(
        b, loc, second, vector::BroadcastOp::create(b, loc, w.floats(), minusXSum), lanes);
  }
  return lanes;
}

Value accumulateGroupStep(OpBuilder &b, Location loc, Int8DotForm form, Type element,
                          const RowGroupBlock &block, const Int8StepInput &x, Value lanes,
                          int64_t runs) {
  Words w{b, loc, cast<VectorType>(lanes.getType()).getDimSize(0)};
  SmallVector<Int8Sums> ints = startGroupSums(b, loc, form, element, x, w.lanes, runs);
  for (auto [j, word] : llvm::enumerate(block.words))
    ints[groupSumRun(element, int64_t(j), runs)].add(
        b, loc, word, vector::BroadcastOp::create(b, loc, w.type(), x.words[j]));
  return finishGroupStep(b, loc, element, block.scales, block.second, ints, x, lanes);
}

namespace {

/// Prefetches the cache lines `distance` bytes past a chunk of `chunkBytes`
/// at flat offset `at` of a weight's [rows, rowBytes] storage buffer
/// (clamped to its last byte). A decode matvec does a few vector
/// instructions per 64 bytes, and the hardware prefetchers alone kept it
/// at half the read probe's rate from DRAM.
void prefetchAhead(OpBuilder &b, Location loc, Value storage, Value at, int64_t chunkBytes,
                   int64_t distance) {
  auto type = cast<MemRefType>(storage.getType());
  const int64_t rowBytes = type.getDimSize(1);
  Value last = indexConstant(b, loc, type.getDimSize(0) * rowBytes - 1);
  for (int64_t line = 0; line < chunkBytes; line += 64) {
    Value ahead = arith::MinUIOp::create(
        b, loc, arith::AddIOp::create(b, loc, at, indexConstant(b, loc, distance + line)), last);
    Value row = arith::DivUIOp::create(b, loc, ahead, indexConstant(b, loc, rowBytes));
    Value column = arith::RemUIOp::create(b, loc, ahead, indexConstant(b, loc, rowBytes));
    memref::PrefetchOp::create(b, loc, storage, ValueRange{row, column}, /*isWrite=*/false,
                               /*localityHint=*/3, /*isDataCache=*/true);
  }
}

} // namespace

Value int8RowGroupMatVec(OpBuilder &b, Location loc, Int8DotForm form, int64_t lanes, Value weight,
                         const Int8Input &input, Value first, Value groups, Value init,
                         int64_t prefetchBytes) {
  auto weightType = cast<RankedTensorType>(weight.getType());
  Type element = weightType.getElementType();
  const int64_t rowBytes = rowStorageBytes(weightType);
  const int64_t chunkBytes = lanes * weightFormatOf(element)->blockBytes;
  Value storageMemref;
  if (prefetchBytes > 0)
    if (auto toTensor = weightStorage(weight).getDefiningOp<bufferization::ToTensorOp>())
      if (cast<MemRefType>(toTensor.getBuffer().getType()).getRank() == 2)
        storageMemref = toTensor.getBuffer();
  const int64_t perChunk = rowGroupStepsPerChunk(element);
  const int64_t chunks = weightType.getDimSize(1) / kQ8Block / perChunk;
  const int64_t runs = kLoneTokenRuns;
  Words w{b, loc, lanes};
  Value flat = flatWeightBytes(b, loc, weight);
  Value zeros = arith::ConstantOp::create(b, loc, DenseElementsAttr::get(w.floats(), 0.0f));
  auto loop = scf::ForOp::create(
      b, loc, indexConstant(b, loc, 0), groups, indexConstant(b, loc, 1), ValueRange{init},
      [&](OpBuilder &nb, Location l, Value group, ValueRange carried) {
        Value offset = arith::MulIOp::create(nb, l, group, indexConstant(nb, l, lanes));
        Value base = arith::MulIOp::create(nb, l, arith::AddIOp::create(nb, l, first, offset),
                                           indexConstant(nb, l, rowBytes));
        auto columns = scf::ForOp::create(
            nb, l, indexConstant(nb, l, 0), indexConstant(nb, l, chunks), indexConstant(nb, l, 1),
            ValueRange{zeros}, [&](OpBuilder &ib, Location il, Value chunk, ValueRange acc) {
              RowGroupChunk weights(ib, il, flat, element, lanes, base, chunk);
              if (storageMemref)
                prefetchAhead(ib, il, storageMemref, weights.offset(), chunkBytes, prefetchBytes);
              weights.loadAll();
              Words iw{ib, il, lanes};
              SmallVector<Int8StepInput> xs(perChunk);
              SmallVector<SmallVector<Int8Sums>> ints;
              for (int64_t s = 0; s < perChunk; ++s) {
                Value step = arith::AddIOp::create(
                    ib, il, arith::MulIOp::create(ib, il, chunk, indexConstant(ib, il, perChunk)),
                    indexConstant(ib, il, s));
                Value column = arith::MulIOp::create(ib, il, step, indexConstant(ib, il, kQ8Block));
                Value xWords = vector::BitCastOp::create(
                    ib, il, VectorType::get({kQ8Block / 4}, ib.getI32Type()),
                    readVector(ib, il, input.values, ValueRange{column}, kQ8Block, ib.getI8Type()));
                Int8StepInput &x = xs[s];
                for (int64_t j = 0; j < kQ8Block / 4; ++j)
                  x.words.push_back(
                      vector::ExtractOp::create(ib, il, xWords, ArrayRef<int64_t>{j}));
                x.scale = tensor::ExtractOp::create(ib, il, input.scales, ValueRange{step});
                Value half = arith::MulIOp::create(ib, il, step, indexConstant(ib, il, 2));
                x.halfSums[0] = tensor::ExtractOp::create(ib, il, input.halfSums, ValueRange{half});
                x.halfSums[1] = tensor::ExtractOp::create(
                    ib, il, input.halfSums,
                    ValueRange{arith::AddIOp::create(ib, il, half, indexConstant(ib, il, 1))});
                ints.push_back(startGroupSums(ib, il, form, element, x, lanes, runs));
              }
              // The chunk's words loaded together (their misses overlap),
              // then the products in the order the words lie
              // (rowGroupWordOrder), each word decoded just before them.
              for (auto [s, j] : rowGroupWordOrder(element)) {
                ints[s][groupSumRun(element, j, runs)].add(
                    ib, il, weights.word(s, j),
                    vector::BroadcastOp::create(ib, il, iw.type(), xs[s].words[j]));
              }
              Value lanesAcc = acc[0];
              for (int64_t s = 0; s < perChunk; ++s)
                lanesAcc = finishGroupStep(ib, il, element, weights.scales(s), weights.second(s),
                                           ints[s], xs[s], lanesAcc);
              scf::YieldOp::create(ib, il, lanesAcc);
            });
        Value y = vector::TransferWriteOp::create(nb, l, columns.getResult(0), carried[0],
                                                  ValueRange{offset}, ArrayRef<bool>{true})
                      .getResult();
        scf::YieldOp::create(nb, l, ValueRange{y});
      });
  return loop.getResult(0);
}

} // namespace mlir::quill
