// Prefill's and the batch step's products over Q8_0, Q4_0, Q4_K and Q6_K
// weights with Q8_0 activations (q8_input) as int8 dot products over
// groups of rows.
// A group's blocks are transposed so that lane r of word vector j holds
// the four (unsigned) bytes of row r that input word j multiplies: one
// vpdpbusd per word, the input word broadcast, then adds four products to
// every row of the group at once, and each block's exact int32 dot
// products become one f32 FMA per row lane, with no horizontal sums.
// A step is one block of 32 inputs: a Q8_0 or Q4_0 block, or a sub-block
// of a K-quant super-block (Q4_K's scale and minimum; Q6_K's two scales of
// 16, each half its own int32 sum).
// A group of L rows (L = 16 with AVX-512 VNNI, 8 with AVX-VNNI or AVX2) is
// transposed once into a stack buffer for all the live token rows (a
// batch step's single row too: the buffer's stores and loads cost little
// beside the transposes). Every token row sums a row's steps in order with
// the same operations, so a row's result depends neither on the other
// token rows nor on how the weight rows split between threads (a partial
// group's extra lanes read the last row again and are never stored).
#include "compiler/Conversion/QuillToLinalg/ActivationQuantization.h"
#include "compiler/Conversion/QuillToLinalg/LinalgBuilders.h"
#include "compiler/Conversion/QuillToLinalg/WeightDecoding.h"
#include "compiler/Target/CPU/CpuKernelBuilder.h"
#include "compiler/Target/CPU/RowDecoder.h"
#include "dialects/Quill/IR/QuillDialect.h"
#include "dialects/Quill/IR/WeightFormats.h"

#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include "llvm/Support/MathExtras.h"

#include <functional>
#include <memory>

namespace mlir::quill {

namespace {

/// 4-byte words of a block of 32 int8 inputs.
constexpr int64_t kBlockWords = kQ8Block / 4;

/// The Q8_0-rounded token rows, as the tiles read them.
struct Int8Rows {
  Value words;    ///< tensor<T x K/4 x i32>: the int8 values, four to a word.
  Value scales;   ///< tensor<T x K/32 x f32>: each block's d.
  Value halfSums; ///< tensor<T x K/16 x i32>: the sums of the values of each half block.
};

/// What a group's kernel needs besides the group.
struct Int8Tiles {
  Int8DotForm form;
  int64_t lanes;  ///< Rows per group, i32 lanes of a vector.
  Value storage;  ///< The weight's bytes ([rows, row bytes] i8).
  Type element;   ///< !quill.q8_0, q4_0, q4_k or q6_k.
  int64_t blocks; ///< Steps (blocks of 32 inputs) per row.
  Int8Rows x;
  arith::FastMathFlagsAttr fastMath;

  Value index(OpBuilder &nb, Location l, int64_t v) const {
    return arith::ConstantIndexOp::create(nb, l, v);
  }
  VectorType wordsType(OpBuilder &nb) const { return VectorType::get({lanes}, nb.getI32Type()); }
  VectorType bytesType(OpBuilder &nb) const { return VectorType::get({4 * lanes}, nb.getI8Type()); }
  VectorType floatsType(OpBuilder &nb) const { return VectorType::get({lanes}, nb.getF32Type()); }
  bool kQuant() const { return isa<Q4_KType, Q6_KType>(element); }
  /// Steps read together: a block, or a K-quant super-block's 8.
  int64_t stepsPerChunk() const { return rowGroupStepsPerChunk(element); }
  /// f32 vectors per step in the buffer: the scales, and the minimums or
  /// the second scales.
  int64_t floatsPerStep() const { return kQuant() ? 2 : 1; }
};

Value concatenate(OpBuilder &b, Location loc, ArrayRef<Value> parts) {
  if (parts.size() == 1)
    return parts.front();
  const size_t half = parts.size() / 2;
  Value low = concatenate(b, loc, parts.take_front(half));
  Value high = concatenate(b, loc, parts.drop_front(half));
  const int64_t n = 2 * cast<VectorType>(low.getType()).getDimSize(0);
  return vector::ShuffleOp::create(b, loc, low, high, llvm::to_vector(llvm::seq<int64_t>(0, n)));
}

/// Transposes V vectors of `lanes` words, vector i lane l holding word
/// l % V of row i * (lanes / V) + l / V, into V vectors whose lane r holds
/// word j of row r: log2(V) rounds of two-source shuffles, each round
/// moving one bit of the row index from the vector index into the lane.
SmallVector<Value> transposeWords(OpBuilder &b, Location loc, ArrayRef<Value> vectors,
                                  int64_t lanes) {
  const int64_t count = vectors.size();
  const int64_t rowsPerVector = lanes / count;
  const int64_t rounds = llvm::Log2_64(count);
  // (vector, lane) of word `word` of row `row` after `round` rounds.
  auto position = [&](int64_t round, int64_t row, int64_t word) -> std::pair<int64_t, int64_t> {
    if (round == rounds)
      return {word, row};
    const int64_t high = row / rowsPerVector, low = row % rowsPerVector;
    int64_t vec = 0, lane = 0;
    for (int64_t bit = 0; bit < rounds; ++bit) {
      const bool moved = bit < round;
      vec |= (((moved ? word : high) >> bit) & 1) << bit;
      lane |= (((moved ? high : word) >> bit) & 1) << bit;
    }
    return {vec, lane | (low << rounds)};
  };
  SmallVector<Value> current(vectors.begin(), vectors.end());
  for (int64_t round = 0; round < rounds; ++round) {
    // Which element each (vector, lane) of the next round holds.
    std::vector<std::pair<int64_t, int64_t>> holds(count * lanes);
    for (int64_t row = 0; row < lanes; ++row)
      for (int64_t word = 0; word < count; ++word) {
        auto [vec, lane] = position(round + 1, row, word);
        holds[vec * lanes + lane] = {row, word};
      }
    SmallVector<Value> next;
    for (int64_t vec = 0; vec < count; ++vec) {
      int64_t sources[2] = {-1, -1};
      SmallVector<int64_t> mask;
      for (int64_t lane = 0; lane < lanes; ++lane) {
        auto [row, word] = holds[vec * lanes + lane];
        auto [from, at] = position(round, row, word);
        int64_t which = 0;
        if (sources[0] < 0 || sources[0] == from) {
          sources[0] = from;
        } else {
          assert((sources[1] < 0 || sources[1] == from) && "a round reads two vectors");
          sources[1] = from;
          which = 1;
        }
        mask.push_back(which * lanes + at);
      }
      Value first = current[sources[0]];
      Value second = sources[1] < 0 ? first : current[sources[1]];
      next.push_back(vector::ShuffleOp::create(b, loc, first, second, mask));
    }
    current = std::move(next);
  }
  return current;
}

/// `rows` (L vectors of n i32 words, n a power of two): n vectors whose
/// lane r holds word j of row r.
SmallVector<Value> transposeRows(OpBuilder &b, Location loc, ArrayRef<Value> rows, int64_t lanes) {
  const int64_t n = cast<VectorType>(rows.front().getType()).getDimSize(0);
  if (n > lanes) {
    // Wider rows than a vector: `lanes` words at a time.
    SmallVector<Value> result;
    for (int64_t piece = 0; piece < n / lanes; ++piece) {
      SmallVector<Value> parts;
      for (Value row : rows)
        parts.push_back(
            vector::ExtractStridedSliceOp::create(b, loc, row, ArrayRef<int64_t>{piece * lanes},
                                                  ArrayRef<int64_t>{lanes}, ArrayRef<int64_t>{1}));
      llvm::append_range(result, transposeRows(b, loc, parts, lanes));
    }
    return result;
  }
  // lanes / n rows to a vector, then the rounds of shuffles.
  const int64_t rowsPerVector = lanes / n;
  SmallVector<Value> packed;
  for (int64_t i = 0; i < n; ++i)
    packed.push_back(concatenate(b, loc, rows.slice(i * rowsPerVector, rowsPerVector)));
  return transposeWords(b, loc, packed, lanes);
}

/// `bytes` (vector<4n x i8>) as n i32 words.
Value asWords(OpBuilder &b, Location loc, Value bytes) {
  const int64_t n = cast<VectorType>(bytes.getType()).getDimSize(0) / 4;
  return vector::BitCastOp::create(b, loc, VectorType::get({n}, b.getI32Type()), bytes);
}

/// Steps [chunk * stepsPerChunk, ...) of the group's rows `rows`, read from
/// the weight's bytes and transposed in registers.
SmallVector<RowGroupBlock> loadGroupChunk(const Int8Tiles &t, OpBuilder &b, Location loc,
                                          ArrayRef<Value> rows, Value chunk) {
  const WeightFormat format = *weightFormatOf(t.element);
  Value base = arith::MulIOp::create(b, loc, chunk, t.index(b, loc, format.blockBytes));
  auto splat = [&](int32_t v) -> Value {
    return arith::ConstantOp::create(b, loc, DenseElementsAttr::get(t.wordsType(b), v));
  };
  auto andW = [&](Value w, int32_t mask) -> Value {
    return arith::AndIOp::create(b, loc, w, splat(mask));
  };
  auto shrW = [&](Value w, int32_t n) -> Value {
    return n ? arith::ShRUIOp::create(b, loc, w, splat(n)).getResult() : w;
  };
  // Each row's `bytes` bytes from `offset` of the chunk, transposed.
  auto transposedBytes = [&](int64_t offset, int64_t bytes) {
    Value at = arith::AddIOp::create(b, loc, base, t.index(b, loc, offset));
    SmallVector<Value> perRow;
    for (Value row : rows)
      perRow.push_back(asWords(
          b, loc, readVector(b, loc, t.storage, ValueRange{row, at}, bytes, b.getI8Type())));
    return transposeRows(b, loc, perRow, t.lanes);
  };
  RowDecoder decoder{b, loc, t.storage, Value(), 8, t.fastMath};
  // Per-row f32 vectors (of n values each) as n vectors of L rows.
  auto transposeFloats = [&](ArrayRef<Value> perRow) {
    SmallVector<Value> words;
    for (Value f : perRow)
      words.push_back(vector::BitCastOp::create(
          b, loc, VectorType::get({cast<VectorType>(f.getType()).getDimSize(0)}, b.getI32Type()),
          f));
    SmallVector<Value> result;
    for (Value w : transposeRows(b, loc, words, t.lanes))
      result.push_back(vector::BitCastOp::create(b, loc, t.floatsType(b), w));
    return result;
  };
  auto blockScales = [&](int64_t offset) {
    SmallVector<Value> scales;
    Value at = arith::AddIOp::create(b, loc, base, t.index(b, loc, offset));
    for (Value row : rows)
      scales.push_back(halfScalarAt(b, loc, t.storage, row, at));
    return vector::FromElementsOp::create(b, loc, t.floatsType(b), scales).getResult();
  };

  if (isa<Q8_0Type>(t.element)) {
    // q + 128: the sign bits flipped, four bytes at a time.
    RowGroupBlock g;
    for (Value w : transposedBytes(2, kQ8Block))
      g.words.push_back(arith::XOrIOp::create(b, loc, w, splat(int32_t(0x80808080u))));
    g.scales = blockScales(0);
    return {g};
  }
  if (isa<Q4_0Type>(t.element)) {
    // Byte j holds weight j (low nibble) and j + 16 (high nibble): the low
    // nibbles meet input words 0-3, the high ones words 4-7.
    RowGroupBlock g;
    SmallVector<Value> packed = transposedBytes(2, kQ8Block / 2);
    for (Value w : packed)
      g.words.push_back(andW(w, 0x0F0F0F0F));
    for (Value w : packed)
      g.words.push_back(andW(shrW(w, 4), 0x0F0F0F0F));
    g.scales = blockScales(0);
    return {g};
  }
  SmallVector<RowGroupBlock> steps(8);
  if (isa<Q4_KType>(t.element)) {
    // 64 weights per 32 bytes: sub-block 2c the low nibbles, 2c + 1 the
    // high ones; d * scale and dmin * min per sub-block and row.
    for (int64_t c = 0; c < 4; ++c) {
      SmallVector<Value> packed = transposedBytes(16 + 32 * c, 32);
      for (Value w : packed) {
        steps[2 * c].words.push_back(andW(w, 0x0F0F0F0F));
        steps[2 * c + 1].words.push_back(andW(shrW(w, 4), 0x0F0F0F0F));
      }
    }
    SmallVector<Value> perRowScales, perRowMins;
    for (Value row : rows) {
      auto [scale, min] = decoder.q4_KScalesAndMins(row, chunk);
      perRowScales.push_back(scale);
      perRowMins.push_back(min);
    }
    SmallVector<Value> scales = transposeFloats(perRowScales), mins = transposeFloats(perRowMins);
    for (int64_t s = 0; s < 8; ++s)
      steps[s].scales = scales[s], steps[s].second = mins[s];
    return steps;
  }
  // Q6_K: each half of 128 weights has ql (64 bytes: quarters 0 and 2 the
  // low and high nibbles of the first 32, 1 and 3 of the next) and qh (32
  // bytes, two bits per quarter); 16 scales of 16 weights, times d.
  SmallVector<Value> perRowScales;
  for (Value row : rows)
    perRowScales.push_back(decoder.q6_KScales(row, chunk));
  SmallVector<Value> scales = transposeFloats(perRowScales);
  for (int64_t half = 0; half < 2; ++half) {
    SmallVector<Value> ql[2] = {transposedBytes(64 * half, 32),
                                transposedBytes(64 * half + 32, 32)};
    SmallVector<Value> qh = transposedBytes(128 + 32 * half, 32);
    for (int64_t quarter = 0; quarter < 4; ++quarter) {
      RowGroupBlock &g = steps[4 * half + quarter];
      for (int64_t j = 0; j < kBlockWords; ++j) {
        Value low = andW(shrW(ql[quarter % 2][j], 4 * (quarter / 2)), 0x0F0F0F0F);
        Value top =
            arith::ShLIOp::create(b, loc, andW(shrW(qh[j], 2 * quarter), 0x03030303), splat(4));
        g.words.push_back(arith::OrIOp::create(b, loc, low, top));
      }
      g.scales = scales[8 * half + 2 * quarter];
      g.second = scales[8 * half + 2 * quarter + 1];
    }
  }
  return steps;
}

/// Each token's lanes plus step `step`'s products with the group
/// (accumulateGroupStep, Int8RowGroups.cpp).
SmallVector<Value> accumulateBlock(const Int8Tiles &t, OpBuilder &b, Location loc,
                                   const RowGroupBlock &group, ArrayRef<Value> tokens, Value step,
                                   ValueRange acc) {
  SmallVector<Value> next;
  Value firstWord = arith::MulIOp::create(b, loc, step, t.index(b, loc, kBlockWords));
  Value firstHalf = arith::MulIOp::create(b, loc, step, t.index(b, loc, 2));
  for (auto [token, lanes] : llvm::zip(tokens, acc)) {
    Int8StepInput x;
    for (int64_t h = 0; h < 2; ++h)
      x.halfSums[h] = tensor::ExtractOp::create(
          b, loc, t.x.halfSums,
          ValueRange{token, arith::AddIOp::create(b, loc, firstHalf, t.index(b, loc, h))});
    for (int64_t j = 0; j < kBlockWords; ++j)
      x.words.push_back(tensor::ExtractOp::create(
          b, loc, t.x.words,
          ValueRange{token, arith::AddIOp::create(b, loc, firstWord, t.index(b, loc, j))}));
    x.scale = tensor::ExtractOp::create(b, loc, t.x.scales, ValueRange{token, step});
    // Several tokens' products interleave: one run of vpdpbusd each. A
    // lone token (one sequence in the batch step, a tile's leftover) takes
    // decode's runs; the integer sums, and so the results, are the same.
    const int64_t runs = tokens.size() == 1 ? kLoneTokenRuns : 1;
    next.push_back(accumulateGroupStep(b, loc, t.form, t.element, group, x, lanes, runs));
  }
  return next;
}

/// Step s of a chunk of the group's weights, built where it is asked for.
using StepReader = std::function<RowGroupBlock(int64_t)>;

/// The group's lanes for `tokens` over every step, in chunks of
/// `stepsPerChunk` steps whose weights come from `chunkOf` (chunk index).
SmallVector<Value>
groupSums(const Int8Tiles &t, OpBuilder &b, Location loc, ArrayRef<Value> tokens,
          int64_t stepsPerChunk,
          const std::function<StepReader(OpBuilder &, Location, Value)> &chunkOf) {
  Value zeros = arith::ConstantOp::create(b, loc, DenseElementsAttr::get(t.floatsType(b), 0.0f));
  SmallVector<Value> init(tokens.size(), zeros);
  auto loop = scf::ForOp::create(
      b, loc, t.index(b, loc, 0), t.index(b, loc, t.blocks / stepsPerChunk), t.index(b, loc, 1),
      init, [&](OpBuilder &nb, Location l, Value chunk, ValueRange acc) {
        StepReader stepOf = chunkOf(nb, l, chunk);
        Value first = arith::MulIOp::create(nb, l, chunk, t.index(nb, l, stepsPerChunk));
        SmallVector<Value> lanes(acc.begin(), acc.end());
        for (int64_t s = 0; s < stepsPerChunk; ++s)
          lanes = accumulateBlock(t, nb, l, stepOf(s), tokens,
                                  arith::AddIOp::create(nb, l, first, t.index(nb, l, s)), lanes);
        scf::YieldOp::create(nb, l, lanes);
      });
  return SmallVector<Value>(loop.getResults().begin(), loop.getResults().end());
}

/// `lanes` written into row `token` of `out` from column `column`; the
/// lanes past the output's last column (a partial group's) are masked off.
Value storeLanes(OpBuilder &b, Location loc, Value lanes, Value out, Value token, Value column) {
  return vector::TransferWriteOp::create(b, loc, lanes, out, ValueRange{token, column},
                                         ArrayRef<bool>{false})
      .getResult();
}

/// The row indices of group `group` from `first`, clamped to `last`.
SmallVector<Value> groupRows(const Int8Tiles &t, OpBuilder &b, Location loc, Value first,
                             Value group, Value last) {
  Value base = arith::AddIOp::create(
      b, loc, first, arith::MulIOp::create(b, loc, group, t.index(b, loc, t.lanes)));
  SmallVector<Value> rows;
  for (int64_t r = 0; r < t.lanes; ++r)
    rows.push_back(arith::MinUIOp::create(
        b, loc, arith::AddIOp::create(b, loc, base, t.index(b, loc, r)), last));
  return rows;
}

} // namespace

bool fitsInt8MatMul(Type weightType) {
  auto type = cast<RankedTensorType>(weightType);
  if (isa<Q8_0Type, Q4_0Type>(type.getElementType()))
    return type.getDimSize(1) % kQ8Block == 0;
  return isa<Q4_KType, Q6_KType>(type.getElementType()) && type.getDimSize(1) % 256 == 0;
}

Value int8DotMatMul(OpBuilder &b, Location loc, Int8DotForm form, int64_t lanes, Value weight,
                    Value input, OpFoldResult firstRow, OpFoldResult rowCount, Value liveRows,
                    Value init) {
  auto weightType = cast<RankedTensorType>(weight.getType());
  auto inputType = cast<RankedTensorType>(input.getType());
  const int64_t tokens = inputType.getDimSize(0), width = inputType.getDimSize(1);
  // Token rows per tile, largest first: with 16 lanes, 8 weight vectors, a
  // scale vector and two accumulators per token fit AVX-512's 32 registers
  // for 8 tokens (7-9% faster than tiles of 4 on Q8_0, Q4_0 and Q4_K, one
  // thread, Sapphire Rapids; each weight block decoded once per 8 tokens);
  // a tile of 4 then takes what is left of the live rows before they go one
  // by one (a batch step of 4-7 sequences). AVX2's 16 registers hold 2.
  const SmallVector<int64_t, 3> tileSizes =
      lanes >= 16 ? SmallVector<int64_t, 3>{8, 4} : SmallVector<int64_t, 3>{2};
  auto index = [&](OpBuilder &nb, Location l, int64_t v) -> Value {
    return arith::ConstantIndexOp::create(nb, l, v);
  };
  Value live = index(b, loc, tokens);
  if (liveRows)
    live = arith::MinUIOp::create(b, loc, liveRows, live);

  // The live token rows rounded to Q8_0 blocks, once per call.
  Int8Rows x;
  {
    auto buffer = [&](int64_t n, Type element) -> Value {
      return bufferization::AllocTensorOp::create(
          b, loc, RankedTensorType::get({tokens, n}, element), ValueRange{});
    };
    const int64_t blocks = width / kQ8Block;
    auto rows = scf::ForOp::create(
        b, loc, index(b, loc, 0), live, index(b, loc, 1),
        ValueRange{buffer(width / 4, b.getI32Type()), buffer(blocks, b.getF32Type()),
                   buffer(2 * blocks, b.getI32Type())},
        [&](OpBuilder &nb, Location l, Value token, ValueRange rowOut) {
          scf::YieldOp::create(
              nb, l, roundQ8Row(nb, l, input, ValueRange{token}, blocks, rowOut, /*words=*/true));
        });
    x = {rows.getResult(0), rows.getResult(1), rows.getResult(2)};
  }

  Value storage = weightStorage(weight);
  Value memref;
  if (auto toTensor = storage.getDefiningOp<bufferization::ToTensorOp>())
    memref = toTensor.getBuffer();
  Int8Tiles t{
      form, lanes, storage, weightType.getElementType(), width / kQ8Block, x, reductionFastMath(b)};
  const WeightFormat format = *weightFormatOf(t.element);
  const int64_t ahead = prefetchDistance(lanes, rowStorageBytes(weightType));

  Value first = getValueOrCreateConstantIndexOp(b, loc, firstRow);
  Value count = getValueOrCreateConstantIndexOp(b, loc, rowCount);
  Value last =
      arith::SubIOp::create(b, loc, arith::AddIOp::create(b, loc, first, count), index(b, loc, 1));
  // Every group through the buffer, the last one perhaps partial.
  Value groupCount = arith::DivUIOp::create(
      b, loc, arith::AddIOp::create(b, loc, count, index(b, loc, lanes - 1)), index(b, loc, lanes));

  // Row groups: the weight's bytes are the group blocks already, and the
  // rows whole groups (the tiles split on them).
  const int64_t stored = rowGroupsOf(weightType);
  assert((!stored || stored == lanes) && "row groups of another width");
  Value flat = stored ? flatWeightBytes(b, loc, weight) : Value();
  if (stored)
    groupCount = arith::DivUIOp::create(b, loc, count, index(b, loc, lanes));

  // Otherwise the transposed blocks of one group: [blocks * 8, L] words,
  // [blocks, L] scales (stack buffers).
  SmallVector<Value> loopInit = {init};
  if (!stored) {
    loopInit.push_back(bufferization::AllocTensorOp::create(
        b, loc, RankedTensorType::get({t.blocks * kBlockWords, lanes}, b.getI32Type()),
        ValueRange{}));
    loopInit.push_back(bufferization::AllocTensorOp::create(
        b, loc, RankedTensorType::get({t.blocks * t.floatsPerStep(), lanes}, b.getF32Type()),
        ValueRange{}));
  }

  auto prefetch = [&](OpBuilder &nb, Location l, ArrayRef<Value> rows, Value block) {
    if (memref)
      prefetchNextRows(nb, l, memref, rows, ahead, block, format.blockBytes);
  };
  const int64_t rowBytes = rowStorageBytes(weightType);
  auto loop = scf::ForOp::create(
      b, loc, index(b, loc, 0), groupCount, index(b, loc, 1), loopInit,
      [&](OpBuilder &gb, Location gl, Value group, ValueRange carried) {
        Value column = arith::MulIOp::create(gb, gl, group, index(gb, gl, lanes));
        const int64_t perChunk = t.stepsPerChunk(), floats = t.floatsPerStep();
        auto row = [&](OpBuilder &nb, Location l, Value base, int64_t per, int64_t i) -> Value {
          return arith::AddIOp::create(nb, l, arith::MulIOp::create(nb, l, base, index(nb, l, per)),
                                       index(nb, l, i));
        };
        Value words, scales;
        if (!stored) {
          // The group's blocks transposed into the buffers, once.
          SmallVector<Value> rows = groupRows(t, gb, gl, first, group, last);
          auto write = [&](OpBuilder &nb, Location l, Value v, Value buffer, Value at) -> Value {
            return vector::TransferWriteOp::create(
                       nb, l, v, buffer, ValueRange{at, index(nb, l, 0)}, ArrayRef<bool>{true})
                .getResult();
          };
          auto repack = scf::ForOp::create(
              gb, gl, index(gb, gl, 0), index(gb, gl, t.blocks / perChunk), index(gb, gl, 1),
              ValueRange{carried[1], carried[2]},
              [&](OpBuilder &nb, Location l, Value chunk, ValueRange buffers) {
                prefetch(nb, l, rows, chunk);
                SmallVector<RowGroupBlock> steps = loadGroupChunk(t, nb, l, rows, chunk);
                Value words = buffers[0], scales = buffers[1];
                for (int64_t s = 0; s < perChunk; ++s) {
                  Value step = row(nb, l, chunk, perChunk, s);
                  for (int64_t j = 0; j < kBlockWords; ++j)
                    words =
                        write(nb, l, steps[s].words[j], words, row(nb, l, step, kBlockWords, j));
                  scales = write(nb, l, steps[s].scales, scales, row(nb, l, step, floats, 0));
                  if (floats == 2)
                    scales = write(nb, l, steps[s].second, scales, row(nb, l, step, floats, 1));
                }
                scf::YieldOp::create(nb, l, ValueRange{words, scales});
              });
          words = repack.getResult(0), scales = repack.getResult(1);
        }
        Value groupBase =
            stored ? arith::MulIOp::create(gb, gl, arith::AddIOp::create(gb, gl, first, column),
                                           index(gb, gl, rowBytes))
                         .getResult()
                   : Value();
        // A chunk of steps: a stored group's block or super-block, or one
        // step of the buffers.
        const int64_t chunkSteps = stored ? rowGroupStepsPerChunk(t.element) : 1;
        auto fromBuffer = [&](OpBuilder &nb, Location l, Value chunk) -> StepReader {
          if (stored) {
            // Each step's words read and decoded just before its products.
            auto weights =
                std::make_shared<RowGroupChunk>(nb, l, flat, t.element, lanes, groupBase, chunk);
            return [weights](int64_t s) { return weights->block(s); };
          }
          RowGroupBlock g;
          for (int64_t j = 0; j < kBlockWords; ++j)
            g.words.push_back(readVector(
                nb, l, words, ValueRange{row(nb, l, chunk, kBlockWords, j), index(nb, l, 0)}, lanes,
                nb.getI32Type()));
          g.scales =
              readVector(nb, l, scales, ValueRange{row(nb, l, chunk, floats, 0), index(nb, l, 0)},
                         lanes, nb.getF32Type());
          if (floats == 2)
            g.second =
                readVector(nb, l, scales, ValueRange{row(nb, l, chunk, floats, 1), index(nb, l, 0)},
                           lanes, nb.getF32Type());
          return [g](int64_t) { return g; };
        };
        // Token tiles of each size in turn, then the rest one by one.
        auto tokenTiles = [&](Value o, Value begin, Value tiles, int64_t size) -> Value {
          auto tileLoop = scf::ForOp::create(
              gb, gl, index(gb, gl, 0), tiles, index(gb, gl, 1), ValueRange{o},
              [&](OpBuilder &tb, Location tl, Value tile, ValueRange tileOut) {
                Value token0 = arith::AddIOp::create(
                    tb, tl, begin, arith::MulIOp::create(tb, tl, tile, index(tb, tl, size)));
                SmallVector<Value> tokenIndex;
                for (int64_t k = 0; k < size; ++k)
                  tokenIndex.push_back(arith::AddIOp::create(tb, tl, token0, index(tb, tl, k)));
                SmallVector<Value> sums = groupSums(t, tb, tl, tokenIndex, chunkSteps, fromBuffer);
                Value result = tileOut[0];
                for (int64_t k = 0; k < size; ++k)
                  result = storeLanes(tb, tl, sums[k], result, tokenIndex[k], column);
                scf::YieldOp::create(tb, tl, result);
              });
          return tileLoop.getResult(0);
        };
        Value o = carried[0], done = index(gb, gl, 0);
        for (int64_t size : tileSizes) {
          if (size > tokens)
            continue; // No such tile in a kernel of fewer rows.
          Value tiles = arith::DivUIOp::create(gb, gl, arith::SubIOp::create(gb, gl, live, done),
                                               index(gb, gl, size));
          o = tokenTiles(o, done, tiles, size);
          done = arith::AddIOp::create(gb, gl, done,
                                       arith::MulIOp::create(gb, gl, tiles, index(gb, gl, size)));
        }
        o = tokenTiles(o, done, arith::SubIOp::create(gb, gl, live, done), 1);
        SmallVector<Value> yielded = {o};
        if (!stored)
          yielded.append({words, scales});
        scf::YieldOp::create(gb, gl, yielded);
      });
  return loop.getResult(0);
}

} // namespace mlir::quill
