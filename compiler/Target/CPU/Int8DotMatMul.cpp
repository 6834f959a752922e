// Prefill's and the batch step's products over Q8_0 and Q4_0 weights with
// Q8_0 activations (q8_input) as int8 dot products over groups of rows.
// A group's blocks are transposed so that lane r of word vector j holds
// the four (unsigned) bytes of row r that input word j multiplies: one
// vpdpbusd per word, the input word broadcast, then adds four products to
// every row of the group at once, and each block's exact int32 dot
// products become one f32 FMA per row lane, with no horizontal sums.
// A group of L rows (L = 16 with AVX-512 VNNI, 8 with AVX-VNNI) is
// transposed once into a stack buffer for all the live token rows, or in
// registers for the single row of a batch step with one live sequence.
// Both paths sum a row's blocks in order with the same operations, so a
// row's result depends neither on the other token rows nor on how the
// weight rows split between threads (a partial group's extra lanes read
// the last row again and are never stored).
#include "compiler/Conversion/QuillToLinalg/ActivationQuantization.h"
#include "compiler/Conversion/QuillToLinalg/LinalgBuilders.h"
#include "compiler/Conversion/QuillToLinalg/WeightDecoding.h"
#include "compiler/Target/CPU/CpuKernelBuilder.h"
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

namespace mlir::quill {

namespace {

/// 4-byte words of a block of 32 int8 inputs.
constexpr int64_t kBlockWords = kQ8Block / 4;

/// The Q8_0-rounded token rows, as the tiles read them.
struct Int8Rows {
  Value words;  ///< tensor<T x K/4 x i32>: the int8 values, four to a word.
  Value scales; ///< tensor<T x K/32 x f32>: each block's d.
  Value sums;   ///< tensor<T x K/32 x i32>: each block's sum of the values.
};

/// One block of 32 weights of a group's rows, transposed.
struct GroupBlock {
  SmallVector<Value> words; ///< kBlockWords vector<L x i32>: lane r, row r's bytes.
  Value scales;             ///< vector<L x f32>: each row's block scale.
};

/// What a group's kernel needs besides the group.
struct Int8Tiles {
  int64_t lanes;  ///< Rows per group, i32 lanes of a vector.
  Value storage;  ///< The weight's bytes ([rows, row bytes] i8).
  Value memref;   ///< Their buffer, to prefetch from (null where none).
  Type element;   ///< !quill.q8_0 or !quill.q4_0.
  int64_t blocks; ///< Blocks of 32 per row.
  Int8Rows x;

  Value index(OpBuilder &nb, Location l, int64_t v) const {
    return arith::ConstantIndexOp::create(nb, l, v);
  }
  VectorType wordsType(OpBuilder &nb) const { return VectorType::get({lanes}, nb.getI32Type()); }
  VectorType bytesType(OpBuilder &nb) const { return VectorType::get({4 * lanes}, nb.getI8Type()); }
  VectorType floatsType(OpBuilder &nb) const { return VectorType::get({lanes}, nb.getF32Type()); }
  /// The weight bytes' offset: 128 for Q8_0's flipped sign bits, 8 for Q4_0.
  int64_t offset() const { return isa<Q8_0Type>(element) ? 128 : 8; }
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

/// Block `block` of the group's rows `rows`, read from the weight's bytes
/// and transposed in registers.
GroupBlock loadGroupBlock(const Int8Tiles &t, OpBuilder &b, Location loc, ArrayRef<Value> rows,
                          Value block) {
  const bool q8 = isa<Q8_0Type>(t.element);
  const WeightFormat format = *weightFormatOf(t.element);
  const int64_t quantBytes = q8 ? kQ8Block : kQ8Block / 2;
  const int64_t vectors = quantBytes / 4;
  const int64_t rowsPerVector = t.lanes / vectors;
  Value base = arith::MulIOp::create(b, loc, block, t.index(b, loc, format.blockBytes));
  Value quants = arith::AddIOp::create(b, loc, base, t.index(b, loc, 2));
  SmallVector<Value> loaded;
  for (int64_t i = 0; i < vectors; ++i) {
    SmallVector<Value> parts;
    for (int64_t r = 0; r < rowsPerVector; ++r)
      parts.push_back(readVector(b, loc, t.storage, ValueRange{rows[i * rowsPerVector + r], quants},
                                 quantBytes, b.getI8Type()));
    loaded.push_back(vector::BitCastOp::create(b, loc, t.wordsType(b), concatenate(b, loc, parts)));
  }
  SmallVector<Value> transposed = transposeWords(b, loc, loaded, t.lanes);
  auto splat = [&](int32_t v) -> Value {
    return arith::ConstantOp::create(b, loc, DenseElementsAttr::get(t.wordsType(b), v));
  };
  GroupBlock group;
  if (q8) {
    // q + 128: the sign bits flipped, four bytes at a time.
    for (Value w : transposed)
      group.words.push_back(arith::XOrIOp::create(b, loc, w, splat(int32_t(0x80808080u))));
  } else {
    // Q4_0's byte j holds weight j (low nibble) and j + 16 (high nibble):
    // the low nibbles meet input words 0-3, the high ones words 4-7.
    Value nibbles = splat(0x0F0F0F0F);
    for (Value w : transposed)
      group.words.push_back(arith::AndIOp::create(b, loc, w, nibbles));
    for (Value w : transposed)
      group.words.push_back(
          arith::AndIOp::create(b, loc, arith::ShRUIOp::create(b, loc, w, splat(4)), nibbles));
  }
  SmallVector<Value> scales;
  for (Value row : rows)
    scales.push_back(halfScalarAt(b, loc, t.storage, row, base));
  group.scales = vector::FromElementsOp::create(b, loc, t.floatsType(b), scales);
  return group;
}

/// vpdpbusd(acc, unsigned weight bytes, signed input bytes) on L lanes.
Value dot(const Int8Tiles &t, OpBuilder &b, Location loc, Value acc, Value weights, Value input) {
  llvm::StringRef intrinsic =
      t.lanes == 16 ? "llvm.x86.avx512.vpdpbusd.512" : "llvm.x86.avx512.vpdpbusd.256";
  Value w = vector::BitCastOp::create(b, loc, t.bytesType(b), weights);
  Value x = vector::BitCastOp::create(b, loc, t.bytesType(b), input);
  return LLVM::CallIntrinsicOp::create(b, loc, acc.getType(), b.getStringAttr(intrinsic),
                                       ValueRange{acc, w, x})
      .getResult(0);
}

/// Each token's lanes plus block `block`'s products with the group:
/// scale_w * d_x * (sum of q_w q_x), the integer sum exact (its accumulator
/// starts at -offset * sum(q_x), which takes the weight bytes' offset off).
SmallVector<Value> accumulateBlock(const Int8Tiles &t, OpBuilder &b, Location loc,
                                   const GroupBlock &group, ArrayRef<Value> tokens, Value block,
                                   ValueRange acc) {
  SmallVector<Value> next;
  Value firstWord = arith::MulIOp::create(b, loc, block, t.index(b, loc, kBlockWords));
  for (auto [token, lanes] : llvm::zip(tokens, acc)) {
    Value sum = tensor::ExtractOp::create(b, loc, t.x.sums, ValueRange{token, block});
    Value start = arith::MulIOp::create(
        b, loc, sum, arith::ConstantIntOp::create(b, loc, b.getI32Type(), -t.offset()));
    Value ints = vector::BroadcastOp::create(b, loc, t.wordsType(b), start);
    for (int64_t j = 0; j < kBlockWords; ++j) {
      Value word = tensor::ExtractOp::create(
          b, loc, t.x.words,
          ValueRange{token, arith::AddIOp::create(b, loc, firstWord, t.index(b, loc, j))});
      ints = dot(t, b, loc, ints, group.words[j],
                 vector::BroadcastOp::create(b, loc, t.wordsType(b), word));
    }
    Value d = tensor::ExtractOp::create(b, loc, t.x.scales, ValueRange{token, block});
    Value scale = arith::MulFOp::create(b, loc, group.scales,
                                        vector::BroadcastOp::create(b, loc, t.floatsType(b), d));
    next.push_back(vector::FMAOp::create(
        b, loc, scale, arith::SIToFPOp::create(b, loc, t.floatsType(b), ints), lanes));
  }
  return next;
}

/// The group's lanes for `tokens` over every block, each block's weights
/// from `blockOf`.
SmallVector<Value>
groupSums(const Int8Tiles &t, OpBuilder &b, Location loc, ArrayRef<Value> tokens,
          const std::function<GroupBlock(OpBuilder &, Location, Value)> &blockOf) {
  Value zeros = arith::ConstantOp::create(b, loc, DenseElementsAttr::get(t.floatsType(b), 0.0f));
  SmallVector<Value> init(tokens.size(), zeros);
  auto loop = scf::ForOp::create(
      b, loc, t.index(b, loc, 0), t.index(b, loc, t.blocks), t.index(b, loc, 1), init,
      [&](OpBuilder &nb, Location l, Value block, ValueRange acc) {
        scf::YieldOp::create(nb, l,
                             accumulateBlock(t, nb, l, blockOf(nb, l, block), tokens, block, acc));
      });
  return SmallVector<Value>(loop.getResults().begin(), loop.getResults().end());
}

/// `lanes` written into row `token` of `out` from column `column`: all of
/// them, or (a partial group) the first `valid`.
Value storeLanes(const Int8Tiles &t, OpBuilder &b, Location loc, Value lanes, Value out,
                 Value token, Value column, Value valid) {
  if (!valid)
    return vector::TransferWriteOp::create(b, loc, lanes, out, ValueRange{token, column},
                                           ArrayRef<bool>{true})
        .getResult();
  auto loop = scf::ForOp::create(
      b, loc, t.index(b, loc, 0), valid, t.index(b, loc, 1), ValueRange{out},
      [&](OpBuilder &nb, Location l, Value lane, ValueRange carried) {
        Value v = vector::ExtractOp::create(nb, l, lanes, ArrayRef<OpFoldResult>{lane});
        Value at = arith::AddIOp::create(nb, l, column, lane);
        scf::YieldOp::create(
            nb, l,
            tensor::InsertOp::create(nb, l, v, carried[0], ValueRange{token, at}).getResult());
      });
  return loop.getResult(0);
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
  return isa<Q8_0Type, Q4_0Type>(type.getElementType()) && type.getDimSize(1) % kQ8Block == 0;
}

Value int8DotMatMul(OpBuilder &b, Location loc, int64_t lanes, Value weight, Value input,
                    OpFoldResult firstRow, OpFoldResult rowCount, Value liveRows, Value init) {
  auto weightType = cast<RankedTensorType>(weight.getType());
  auto inputType = cast<RankedTensorType>(input.getType());
  const int64_t tokens = inputType.getDimSize(0), width = inputType.getDimSize(1);
  // Token rows per tile: with 16 lanes, 8 weight vectors, a scale vector
  // and two accumulators per token fit AVX-512's 32 registers for 4
  // tokens; AVX2's 16 hold 2.
  const int64_t tileTokens = lanes >= 16 ? 4 : 2;
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
    auto f32s = VectorType::get({kQ8Block}, b.getF32Type());
    auto i32s = VectorType::get({kQ8Block}, b.getI32Type());
    auto i8s = VectorType::get({kQ8Block}, b.getI8Type());
    auto words = VectorType::get({kBlockWords}, b.getI32Type());
    auto rows = scf::ForOp::create(
        b, loc, index(b, loc, 0), live, index(b, loc, 1),
        ValueRange{buffer(width / 4, b.getI32Type()), buffer(blocks, b.getF32Type()),
                   buffer(blocks, b.getI32Type())},
        [&](OpBuilder &nb, Location l, Value token, ValueRange rowOut) {
          auto blockLoop = scf::ForOp::create(
              nb, l, index(nb, l, 0), index(nb, l, blocks), index(nb, l, 1), rowOut,
              [&](OpBuilder &ib, Location il, Value block, ValueRange out) {
                Value column = arith::MulIOp::create(ib, il, block, index(ib, il, kQ8Block));
                Value v =
                    readVector(ib, il, input, ValueRange{token, column}, kQ8Block, ib.getF32Type());
                Value amax = vector::ReductionOp::create(ib, il, vector::CombiningKind::MAXIMUMF,
                                                         math::AbsFOp::create(ib, il, v));
                auto [d, inverse] = q8Scales(ib, il, amax);
                Value q = q8Round(ib, il, v, vector::BroadcastOp::create(ib, il, f32s, inverse));
                Value qi = arith::FPToSIOp::create(ib, il, i32s, q);
                Value sum = vector::ReductionOp::create(ib, il, vector::CombiningKind::ADD, qi);
                Value packed = vector::BitCastOp::create(ib, il, words,
                                                         arith::TruncIOp::create(ib, il, i8s, qi));
                Value wordAt = arith::MulIOp::create(ib, il, block, index(ib, il, kBlockWords));
                Value w =
                    vector::TransferWriteOp::create(ib, il, packed, out[0],
                                                    ValueRange{token, wordAt}, ArrayRef<bool>{true})
                        .getResult();
                Value s = tensor::InsertOp::create(ib, il, d, out[1], ValueRange{token, block});
                Value m = tensor::InsertOp::create(ib, il, sum, out[2], ValueRange{token, block});
                scf::YieldOp::create(ib, il, ValueRange{w, s, m});
              });
          scf::YieldOp::create(nb, l, blockLoop.getResults());
        });
    x = {rows.getResult(0), rows.getResult(1), rows.getResult(2)};
  }

  Value storage = weightStorage(weight);
  Value memref;
  if (auto toTensor = storage.getDefiningOp<bufferization::ToTensorOp>())
    memref = toTensor.getBuffer();
  Int8Tiles t{lanes, storage, memref, weightType.getElementType(), width / kQ8Block, x};
  const WeightFormat format = *weightFormatOf(t.element);
  const int64_t ahead = prefetchDistance(lanes, rowStorageBytes(weightType));

  Value first = getValueOrCreateConstantIndexOp(b, loc, firstRow);
  Value count = getValueOrCreateConstantIndexOp(b, loc, rowCount);
  Value last =
      arith::SubIOp::create(b, loc, arith::AddIOp::create(b, loc, first, count), index(b, loc, 1));
  Value groupLanes = index(b, loc, lanes);
  Value wholeGroups = arith::DivUIOp::create(b, loc, count, groupLanes);
  Value tailRows = arith::RemUIOp::create(b, loc, count, groupLanes);
  Value tailGroups = arith::SelectOp::create(
      b, loc, arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, tailRows, index(b, loc, 0)),
      index(b, loc, 1), index(b, loc, 0));
  // One live row (a batch step with one sequence decoding): transposed in
  // registers, no buffer; otherwise once per group into the buffer. Straight
  // line code with selected trip counts (an scf.if between the forms would
  // copy the output).
  Value single = arith::ConstantIntOp::create(b, loc, b.getI1Type(), 0);
  if (liveRows)
    single = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, live, index(b, loc, 1));
  auto choose = [&](Value groups, bool registers) -> Value {
    if (!liveRows)
      return registers ? index(b, loc, 0) : groups;
    Value zero = index(b, loc, 0);
    return registers ? arith::SelectOp::create(b, loc, single, groups, zero).getResult()
                     : arith::SelectOp::create(b, loc, single, zero, groups).getResult();
  };

  // The transposed blocks of one group: [blocks * 8, L] words, [blocks, L]
  // scales (stack buffers).
  Value wordBuffer = bufferization::AllocTensorOp::create(
      b, loc, RankedTensorType::get({t.blocks * kBlockWords, lanes}, b.getI32Type()), ValueRange{});
  Value scaleBuffer = bufferization::AllocTensorOp::create(
      b, loc, RankedTensorType::get({t.blocks, lanes}, b.getF32Type()), ValueRange{});

  auto prefetch = [&](OpBuilder &nb, Location l, ArrayRef<Value> rows, Value block) {
    if (memref)
      prefetchNextRows(nb, l, memref, rows, ahead, block, format.blockBytes);
  };
  // Groups [from, from + n) into out; `partial`: a last group of `tailRows`.
  auto groups = [&](Value out, Value from, Value n, bool registers, bool partial) -> Value {
    auto loop = scf::ForOp::create(
        b, loc, index(b, loc, 0), n, index(b, loc, 1), ValueRange{out, wordBuffer, scaleBuffer},
        [&](OpBuilder &gb, Location gl, Value i, ValueRange carried) {
          Value group = arith::AddIOp::create(gb, gl, from, i);
          SmallVector<Value> rows = groupRows(t, gb, gl, first, group, last);
          Value column = arith::MulIOp::create(gb, gl, group, index(gb, gl, lanes));
          Value valid = partial ? tailRows : Value();
          if (registers) {
            Value token = index(gb, gl, 0);
            SmallVector<Value> sums =
                groupSums(t, gb, gl, token, [&](OpBuilder &nb, Location l, Value block) {
                  prefetch(nb, l, rows, block);
                  return loadGroupBlock(t, nb, l, rows, block);
                });
            Value o = storeLanes(t, gb, gl, sums[0], carried[0], token, column, valid);
            scf::YieldOp::create(gb, gl, ValueRange{o, carried[1], carried[2]});
            return;
          }
          // The group's blocks transposed into the buffers, once.
          auto repack = scf::ForOp::create(
              gb, gl, index(gb, gl, 0), index(gb, gl, t.blocks), index(gb, gl, 1),
              ValueRange{carried[1], carried[2]},
              [&](OpBuilder &nb, Location l, Value block, ValueRange buffers) {
                prefetch(nb, l, rows, block);
                GroupBlock g = loadGroupBlock(t, nb, l, rows, block);
                Value wordRow = arith::MulIOp::create(nb, l, block, index(nb, l, kBlockWords));
                Value words = buffers[0];
                for (int64_t j = 0; j < kBlockWords; ++j)
                  words = vector::TransferWriteOp::create(
                              nb, l, g.words[j], words,
                              ValueRange{arith::AddIOp::create(nb, l, wordRow, index(nb, l, j)),
                                         index(nb, l, 0)},
                              ArrayRef<bool>{true})
                              .getResult();
                Value scales = vector::TransferWriteOp::create(nb, l, g.scales, buffers[1],
                                                               ValueRange{block, index(nb, l, 0)},
                                                               ArrayRef<bool>{true})
                                   .getResult();
                scf::YieldOp::create(nb, l, ValueRange{words, scales});
              });
          Value words = repack.getResult(0), scales = repack.getResult(1);
          auto fromBuffer = [&](OpBuilder &nb, Location l, Value block) {
            GroupBlock g;
            Value wordRow = arith::MulIOp::create(nb, l, block, index(nb, l, kBlockWords));
            for (int64_t j = 0; j < kBlockWords; ++j)
              g.words.push_back(
                  readVector(nb, l, words,
                             ValueRange{arith::AddIOp::create(nb, l, wordRow, index(nb, l, j)),
                                        index(nb, l, 0)},
                             lanes, nb.getI32Type()));
            g.scales = readVector(nb, l, scales, ValueRange{block, index(nb, l, 0)}, lanes,
                                  nb.getF32Type());
            return g;
          };
          // Token tiles of tileTokens, then the rest one by one.
          auto tokenTiles = [&](Value o, Value begin, Value tiles, int64_t size) -> Value {
            auto tileLoop = scf::ForOp::create(
                gb, gl, index(gb, gl, 0), tiles, index(gb, gl, 1), ValueRange{o},
                [&](OpBuilder &tb, Location tl, Value tile, ValueRange tileOut) {
                  Value token0 = arith::AddIOp::create(
                      tb, tl, begin, arith::MulIOp::create(tb, tl, tile, index(tb, tl, size)));
                  SmallVector<Value> tokenIndex;
                  for (int64_t k = 0; k < size; ++k)
                    tokenIndex.push_back(arith::AddIOp::create(tb, tl, token0, index(tb, tl, k)));
                  SmallVector<Value> sums = groupSums(t, tb, tl, tokenIndex, fromBuffer);
                  Value result = tileOut[0];
                  for (int64_t k = 0; k < size; ++k)
                    result = storeLanes(t, tb, tl, sums[k], result, tokenIndex[k], column, valid);
                  scf::YieldOp::create(tb, tl, result);
                });
            return tileLoop.getResult(0);
          };
          Value wholeTiles = arith::DivUIOp::create(gb, gl, live, index(gb, gl, tileTokens));
          Value o = tokenTiles(carried[0], index(gb, gl, 0), wholeTiles, tileTokens);
          Value done = arith::MulIOp::create(gb, gl, wholeTiles, index(gb, gl, tileTokens));
          o = tokenTiles(o, done, arith::SubIOp::create(gb, gl, live, done), 1);
          scf::YieldOp::create(gb, gl, ValueRange{o, words, scales});
        });
    return loop.getResult(0);
  };
  Value out = init;
  Value zero = index(b, loc, 0);
  out = groups(out, zero, choose(wholeGroups, /*registers=*/false), false, false);
  out = groups(out, wholeGroups, choose(tailGroups, false), false, true);
  if (liveRows) {
    out = groups(out, zero, choose(wholeGroups, true), true, false);
    out = groups(out, wholeGroups, choose(tailGroups, true), true, true);
  }
  return out;
}

} // namespace mlir::quill
