// The CPU's matrix-vector products over encoded weights, decoding in
// registers: each step loads one block of every row of a row block (32
// int8 values and an fp16 scale for Q8_0; 16 bytes of nibbles for Q4_0; a
// K-quant super-block of 256, its 6-bit or int8 sub-block scales read as
// scalars; a vector of f16 or bf16), widens it to f32 lanes and
// accumulates scale * (q . x) into that row's vector of partial sums. Only
// the stored bytes cross the memory bus.
#include "compiler/Target/CPU/CpuKernelBuilder.h"
#include "compiler/Target/CPU/RowDecoder.h"

#include "compiler/Conversion/QuillToLinalg/LinalgBuilders.h"
#include "compiler/Conversion/QuillToLinalg/WeightDecoding.h"
#include "dialects/Quill/IR/QuillDialect.h"
#include "dialects/Quill/IR/WeightFormats.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <algorithm>
#include <functional>

namespace mlir::quill {

Value readVector(OpBuilder &b, Location loc, Value source, ValueRange indices, int64_t n,
                 Type element) {
  Value pad = arith::ConstantOp::create(b, loc, b.getZeroAttr(element));
  return vector::TransferReadOp::create(b, loc, VectorType::get({n}, element), source, indices, pad,
                                        ArrayRef<bool>{true});
}

Value halfScalarAt(OpBuilder &b, Location loc, Value storage, Value row, Value offset) {
  Value bytes = readVector(b, loc, storage, ValueRange{row, offset}, 2, b.getI8Type());
  Value half = vector::BitCastOp::create(b, loc, VectorType::get({1}, b.getF16Type()), bytes);
  Value f = arith::ExtFOp::create(b, loc, VectorType::get({1}, b.getF32Type()), half);
  return vector::ExtractOp::create(b, loc, f, ArrayRef<int64_t>{0});
}

Value q4_0Nibbles(OpBuilder &b, Location loc, Value storage, Value row, Value base) {
  Value two = arith::ConstantIndexOp::create(b, loc, 2);
  Value packed =
      readVector(b, loc, storage, ValueRange{row, arith::AddIOp::create(b, loc, base, two)}, 16,
                 b.getI8Type());
  auto byteType = VectorType::get({16}, b.getI8Type());
  auto nibbleSplat = [&](int64_t v) {
    return arith::ConstantOp::create(b, loc, DenseElementsAttr::get(byteType, int8_t(v)));
  };
  // Weights 0-15 the low nibbles, 16-31 the high ones.
  Value low = arith::AndIOp::create(b, loc, packed, nibbleSplat(15));
  Value high = arith::ShRUIOp::create(b, loc, packed, nibbleSplat(4));
  return vector::ShuffleOp::create(b, loc, low, high, llvm::to_vector(llvm::seq<int64_t>(0, 32)));
}

int64_t prefetchDistance(int64_t rowBlock, int64_t rowBytes) {
  constexpr int64_t kAheadBytes = 8 << 10;
  const int64_t blockBytes = std::max<int64_t>(1, rowBlock * rowBytes);
  return rowBlock * std::max<int64_t>(1, (kAheadBytes + blockBytes - 1) / blockBytes);
}

void prefetchNextRows(OpBuilder &b, Location loc, Value storage, ArrayRef<Value> rows,
                      int64_t rowBlock, Value step, int64_t stepElements) {
  auto type = cast<MemRefType>(storage.getType());
  const int64_t lastRow = type.getDimSize(0) - 1;
  Value last = arith::ConstantIndexOp::create(b, loc, lastRow);
  Value column =
      arith::MulIOp::create(b, loc, step, arith::ConstantIndexOp::create(b, loc, stepElements));
  // A step wider than a cache line (a Q4_K or Q6_K super-block: 144 or 210
  // bytes) needs a prefetch per line it spans; one per step left Q6_K
  // logits streaming at a third of their in-cache rate.
  constexpr int64_t kLineBytes = 64;
  const int64_t elementBytes = std::max<int64_t>(1, type.getElementTypeBitWidth() / 8);
  const int64_t lines =
      std::max<int64_t>(1, (stepElements * elementBytes + kLineBytes - 1) / kLineBytes);
  for (Value row : rows) {
    Value ahead =
        arith::AddIOp::create(b, loc, row, arith::ConstantIndexOp::create(b, loc, rowBlock));
    ahead = arith::MinUIOp::create(b, loc, ahead, last);
    for (int64_t line = 0; line < lines; ++line) {
      Value at = line == 0 ? column
                           : arith::AddIOp::create(b, loc, column,
                                                   arith::ConstantIndexOp::create(
                                                       b, loc, line * kLineBytes / elementBytes))
                                 .getResult();
      memref::PrefetchOp::create(b, loc, storage, ValueRange{ahead, at}, /*isWrite=*/false,
                                 /*localityHint=*/3, /*isDataCache=*/true);
    }
  }
}

namespace {

/// What both encoded matrix-vector forms stream: the weight's rows in blocks
/// of `rowBlock`, each step's bytes prefetched a few rows ahead (rows of a
/// few hundred bytes are streams too short for the hardware prefetcher).
struct RowBlockStream {
  Value storageMemref; ///< Null where the weight is no buffer's.
  int64_t stepBytes;   ///< Storage bytes of a row per step.
  int64_t ahead;       ///< Rows to prefetch ahead.

  RowBlockStream(const RowDecoder &decoder, RankedTensorType weightType, int64_t rowBlock,
                 int64_t vectorWidth) {
    if (auto toTensor = decoder.storage.getDefiningOp<bufferization::ToTensorOp>())
      storageMemref = toTensor.getBuffer();
    WeightFormat format = *weightFormatOf(weightType.getElementType());
    stepBytes = format.isBlockQuantized() ? format.blockBytes : vectorWidth;
    ahead = prefetchDistance(rowBlock, rowStorageBytes(weightType));
  }

  void prefetch(OpBuilder &b, Location loc, ArrayRef<Value> rows, Value step) const {
    if (storageMemref)
      prefetchNextRows(b, loc, storageMemref, rows, ahead, step, stepBytes);
  }
};

/// Rows [first, first + blocks * rowBlock) into `init`: `rowSums` gives the
/// sums of a block's rows (f32 scalars) from their indices.
Value overRowBlocks(
    OpBuilder &b, Location loc, RowDecoder &decoder, int64_t rowBlock, Value first, Value blocks,
    Value init,
    llvm::function_ref<SmallVector<Value>(OpBuilder &, Location, ArrayRef<Value>)> rowSums) {
  auto rows = scf::ForOp::create(
      b, loc, decoder.index(0), blocks, decoder.index(1), ValueRange{init},
      [&](OpBuilder &nb, Location l, Value block, ValueRange carried) {
        Value offset = arith::MulIOp::create(nb, l, block, decoder.index(rowBlock));
        Value row = arith::AddIOp::create(nb, l, first, offset);
        SmallVector<Value> rowIndex;
        for (int64_t r = 0; r < rowBlock; ++r)
          rowIndex.push_back(decoder.at(row, r));
        Value sums =
            vector::FromElementsOp::create(nb, l, decoder.f32s(rowBlock), rowSums(nb, l, rowIndex));
        Value y = vector::TransferWriteOp::create(nb, l, sums, carried[0], ValueRange{offset},
                                                  ArrayRef<bool>{true})
                      .getResult();
        scf::YieldOp::create(nb, l, ValueRange{y});
      });
  return rows.getResult(0);
}

/// Each vector accumulator's lanes summed.
SmallVector<Value> laneSums(OpBuilder &b, Location loc, const RowDecoder &decoder,
                            ValueRange accumulators) {
  SmallVector<Value> sums;
  for (Value acc : accumulators)
    sums.push_back(vector::ReductionOp::create(b, loc, vector::CombiningKind::ADD, acc, Value(),
                                               decoder.fastMath.getValue()));
  return sums;
}

} // namespace

Value blockedDecodingMatVec(OpBuilder &b, Location loc, int64_t vectorWidth, int64_t rowBlock,
                            Value weight, Value input, Value first, Value blocks, Value init) {
  auto weightType = cast<RankedTensorType>(weight.getType());
  Type element = weightType.getElementType();
  WeightFormat format = *weightFormatOf(element);
  const int64_t width = weightType.getDimSize(1);
  const int64_t steps =
      format.isBlockQuantized() ? width / format.blockElements : width / vectorWidth;
  RowDecoder decoder{b, loc, weightStorage(weight), input, vectorWidth, reductionFastMath(b)};
  RowBlockStream stream(decoder, weightType, rowBlock, vectorWidth);
  Value zeros =
      arith::ConstantOp::create(b, loc, DenseElementsAttr::get(decoder.f32s(vectorWidth), 0.0f));
  return overRowBlocks(
      b, loc, decoder, rowBlock, first, blocks, init,
      [&](OpBuilder &nb, Location l, ArrayRef<Value> rowIndex) {
        SmallVector<Value> accInit(rowBlock, zeros);
        auto columns = scf::ForOp::create(
            nb, l, decoder.index(0), decoder.index(steps), decoder.index(1), accInit,
            [&](OpBuilder &ib, Location il, Value step, ValueRange acc) {
              stream.prefetch(ib, il, rowIndex, step);
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
        return laneSums(nb, l, decoder, columns.getResults());
      });
}

Value decodedWeightsMatVec(OpBuilder &b, Location loc, int64_t vectorWidth, int64_t rowBlock,
                           Value weight, Value input, Value first, Value blocks, Value init) {
  auto weightType = cast<RankedTensorType>(weight.getType());
  Type element = weightType.getElementType();
  WeightFormat format = *weightFormatOf(element);
  const int64_t width = weightType.getDimSize(1);
  // A step decodes one block (f16, bf16: one vector) of every row.
  const int64_t stepColumns = format.isBlockQuantized() ? format.blockElements : vectorWidth;
  const int64_t steps = width / stepColumns, panelSteps = kMatMulPanel / stepColumns;
  const int64_t panels = (steps + panelSteps - 1) / panelSteps;
  RowDecoder decoder{b, loc, weightStorage(weight), Value(), vectorWidth, reductionFastMath(b)};
  RowBlockStream stream(decoder, weightType, rowBlock, vectorWidth);
  Value zero = decoder.index(0), one = decoder.index(1);
  Value zeros =
      arith::ConstantOp::create(b, loc, DenseElementsAttr::get(decoder.f32s(vectorWidth), 0.0f));
  return overRowBlocks(
      b, loc, decoder, rowBlock, first, blocks, init,
      [&](OpBuilder &nb, Location l, ArrayRef<Value> rowIndex) {
        SmallVector<Value> sumInit(rowBlock, f32Constant(nb, l, 0.0f));
        auto panelLoop = scf::ForOp::create(
            nb, l, zero, decoder.index(panels), one, sumInit,
            [&](OpBuilder &pb, Location pl, Value panel, ValueRange sums) {
              Value stepBegin = arith::MulIOp::create(pb, pl, panel, decoder.index(panelSteps));
              Value stepEnd = arith::MinUIOp::create(
                  pb, pl, arith::AddIOp::create(pb, pl, stepBegin, decoder.index(panelSteps)),
                  decoder.index(steps));
              SmallVector<Value> accInit(rowBlock, zeros);
              auto columns = scf::ForOp::create(
                  pb, pl, stepBegin, stepEnd, one, accInit,
                  [&](OpBuilder &ib, Location il, Value step, ValueRange acc) {
                    stream.prefetch(ib, il, rowIndex, step);
                    SmallVector<Value> next(acc.begin(), acc.end());
                    for (int64_t r = 0; r < rowBlock; ++r) {
                      // The decoded values' vectors in column order, each
                      // one FMA with the input's.
                      auto chain = [&](Value values, Value column) {
                        const int64_t n = cast<VectorType>(values.getType()).getDimSize(0);
                        for (int64_t part = 0; part < n / vectorWidth; ++part) {
                          Value at = decoder.at(column, part * vectorWidth);
                          Value x = readVector(ib, il, input, ValueRange{zero, at}, vectorWidth,
                                               ib.getF32Type());
                          next[r] =
                              decoder.fma(decoder.slice(values, part * vectorWidth), x, next[r]);
                        }
                      };
                      if (isa<Q4_KType, Q6_KType>(element)) {
                        decoder.kQuantSubBlocks(
                            rowIndex[r], step, element,
                            [&](Value qf, Value column, Value scale, Value offset) {
                              chain(decoder.kQuantValues(qf, scale, offset), column);
                            });
                      } else {
                        auto [values, column] = decoder.decodedStep(rowIndex[r], step, element);
                        chain(values, column);
                      }
                    }
                    scf::YieldOp::create(ib, il, next);
                  });
              // The tiles add each panel's sum to the ones before it.
              SmallVector<Value> nextSums;
              for (auto [sum, panelSum] :
                   llvm::zip(sums, laneSums(pb, pl, decoder, columns.getResults())))
                nextSums.push_back(arith::AddFOp::create(pb, pl, sum, panelSum));
              scf::YieldOp::create(pb, pl, nextSums);
            });
        return SmallVector<Value>(panelLoop.getResults());
      });
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
