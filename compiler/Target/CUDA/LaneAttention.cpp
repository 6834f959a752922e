// Flash-decoding's partial attention with a warp per unit (kv head, chunk):
// one thread per unit scores every position of the chunk for every query
// head of its group serially, while the GPU has thousands of threads idle.
//
// Per query head g of the unit, with the chunk's positions [start, start+n):
//   lane l scores positions t = l + 32 j (j < chunk / 32), -inf past n;
//   M = max over the warp, e_t = exp(s_t - M) (0 past n), L = sum of e_t
//   (each lane's in j order, then the butterfly);
//   lane l sums o[d] = sum_t e_t V[t, d] for d = l, l + 32, ..., over the
//   live t in order, e_t taken from its lane by shuffle;
//   the warp then shares o so every lane holds the whole row, and all 32
//   store the same values.
// The emulation computes each lane's values in a loop over lanes, with the
// same operations in the same order.
#include "compiler/Conversion/QuillToLinalg/CacheAccess.h"
#include "compiler/Conversion/QuillToLinalg/LinalgBuilders.h"
#include "compiler/Target/CUDA/LaneReduction.h"
#include "dialects/Quill/IR/QuillDialect.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <cmath>
#include <limits>

namespace mlir::quill {

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

Value index(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}

/// What one query head of one unit needs.
struct HeadWork {
  Value query, keys, values; ///< [heads * d], [context, kv heads * d] twice.
  Value qBase, kvBase;       ///< Offsets of the query head and of the kv head.
  Value start, n;            ///< The chunk's first position and live count.
  Value root;                ///< sqrt(head_dim).
  int64_t headDim, slots;    ///< Positions per lane: slots = chunk / 32.
};

/// q . K[t] / sqrt(head_dim) for position `rel` of the chunk when it is
/// live, else -inf.
Value score(OpBuilder &b, Location loc, const HeadWork &w, Value rel) {
  Value live = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, rel, w.n);
  auto branch = scf::IfOp::create(
      b, loc, live,
      [&](OpBuilder &tb, Location tl) {
        Value t = arith::AddIOp::create(tb, tl, w.start, rel);
        Value zero = f32Constant(tb, tl, 0.0f);
        auto dot = scf::ForOp::create(
            tb, tl, index(tb, tl, 0), index(tb, tl, w.headDim), index(tb, tl, 1), ValueRange{zero},
            [&](OpBuilder &db, Location dl, Value d, ValueRange acc) {
              Value q = tensor::ExtractOp::create(
                  db, dl, w.query, ValueRange{arith::AddIOp::create(db, dl, w.qBase, d)});
              Value k =
                  readCacheElement(db, dl, w.keys, t, arith::AddIOp::create(db, dl, w.kvBase, d));
              scf::YieldOp::create(db, dl, ValueRange{math::FmaOp::create(db, dl, q, k, acc[0])});
            });
        scf::YieldOp::create(tb, tl,
                             ValueRange{arith::DivFOp::create(tb, tl, dot.getResult(0), w.root)});
      },
      [&](OpBuilder &eb, Location el) {
        scf::YieldOp::create(eb, el, ValueRange{f32Constant(eb, el, kNegInf)});
      });
  return branch.getResult(0);
}

/// exp(s - M) for a live position, 0 otherwise (also when M is -inf).
Value weight(OpBuilder &b, Location loc, const HeadWork &w, Value rel, Value s, Value best) {
  Value live = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, rel, w.n);
  Value e = math::ExpOp::create(b, loc, arith::SubFOp::create(b, loc, s, best));
  return arith::SelectOp::create(b, loc, live, e, f32Constant(b, loc, 0.0f));
}

/// o + e * V[start + rel, kvBase + d] (position `rel` is live).
Value accumulate(OpBuilder &b, Location loc, const HeadWork &w, Value rel, Value e, Value d,
                 Value o) {
  Value t = arith::AddIOp::create(b, loc, w.start, rel);
  Value v = readCacheElement(b, loc, w.values, t, arith::AddIOp::create(b, loc, w.kvBase, d));
  return math::FmaOp::create(b, loc, e, v, o);
}

/// The live positions among 32 j .. 32 j + 31: min(32, n - 32 j), at least
/// 0 (the same on every lane).
Value liveSources(OpBuilder &b, Location loc, const HeadWork &w, int64_t j) {
  Value first = index(b, loc, j * kWarpLanes);
  Value past = arith::MaxUIOp::create(b, loc, w.n, first);
  return arith::MinUIOp::create(b, loc, arith::SubIOp::create(b, loc, past, first),
                                index(b, loc, kWarpLanes));
}

Value maximum(OpBuilder &b, Location loc, Value x, Value y) {
  return arith::MaximumFOp::create(b, loc, x, y);
}
Value add(OpBuilder &b, Location loc, Value x, Value y) {
  return arith::AddFOp::create(b, loc, x, y);
}

/// The row of one query head on the GPU: this lane's share, then the whole
/// row gathered from the lanes; (o[0 .. d), M, L) into `out` at `at`.
Value gpuHead(OpBuilder &b, Location loc, const HeadWork &w, Value out, Value at, Value rowBase) {
  Value lane = gpu::LaneIdOp::create(b, loc, b.getIndexAttr(kWarpLanes));
  SmallVector<Value> rel, s;
  Value laneBest = f32Constant(b, loc, kNegInf);
  for (int64_t j = 0; j < w.slots; ++j) {
    rel.push_back(arith::AddIOp::create(b, loc, lane, index(b, loc, j * kWarpLanes)));
    s.push_back(score(b, loc, w, rel[j]));
    laneBest = maximum(b, loc, laneBest, s[j]);
  }
  Value best = warpCombine(b, loc, LaneMode::Gpu, laneBest, maximum);
  SmallVector<Value> e;
  Value laneTotal = f32Constant(b, loc, 0.0f);
  for (int64_t j = 0; j < w.slots; ++j) {
    e.push_back(weight(b, loc, w, rel[j], s[j], best));
    laneTotal = add(b, loc, laneTotal, e[j]);
  }
  Value total = warpCombine(b, loc, LaneMode::Gpu, laneTotal, add);
  // Dimensions lane + 32 i: positions in order, e_t from lane t mod 32.
  const int64_t dims = w.headDim / kWarpLanes;
  SmallVector<Value> zeros(dims, f32Constant(b, loc, 0.0f));
  SmallVector<Value> o(zeros);
  for (int64_t j = 0; j < w.slots; ++j) {
    auto sources = scf::ForOp::create(
        b, loc, index(b, loc, 0), liveSources(b, loc, w, j), index(b, loc, 1), o,
        [&](OpBuilder &nb, Location l, Value source, ValueRange acc) {
          Value from = arith::IndexCastOp::create(nb, l, nb.getI32Type(), source);
          Value et = gpu::ShuffleOp::create(nb, l, e[j], from,
                                            arith::ConstantIntOp::create(nb, l, kWarpLanes, 32),
                                            gpu::ShuffleMode::IDX)
                         .getShuffleResult();
          Value t = arith::AddIOp::create(nb, l, source, index(nb, l, j * kWarpLanes));
          SmallVector<Value> next;
          for (int64_t i = 0; i < dims; ++i) {
            Value d = arith::AddIOp::create(nb, l, lane, index(nb, l, i * kWarpLanes));
            next.push_back(accumulate(nb, l, w, t, et, d, acc[i]));
          }
          scf::YieldOp::create(nb, l, next);
        });
    o.assign(sources.getResults().begin(), sources.getResults().end());
  }
  // Every lane takes every dimension: d from lane d mod 32, its slot d / 32.
  for (int64_t d = 0; d < w.headDim; ++d) {
    Value v = gpu::ShuffleOp::create(b, loc, o[d / kWarpLanes], int32_t(d % kWarpLanes),
                                     int32_t(kWarpLanes), gpu::ShuffleMode::IDX)
                  .getShuffleResult();
    Value column = arith::AddIOp::create(b, loc, rowBase, index(b, loc, d));
    out = tensor::InsertOp::create(b, loc, v, out, ValueRange{at, column});
  }
  Value mColumn = arith::AddIOp::create(b, loc, rowBase, index(b, loc, w.headDim));
  Value lColumn = arith::AddIOp::create(b, loc, rowBase, index(b, loc, w.headDim + 1));
  out = tensor::InsertOp::create(b, loc, best, out, ValueRange{at, mColumn});
  return tensor::InsertOp::create(b, loc, total, out, ValueRange{at, lColumn});
}

/// The same row computed lane by lane on one CPU thread.
Value emulatedHead(OpBuilder &b, Location loc, const HeadWork &w, Value out, Value at,
                   Value rowBase) {
  auto lanesType = VectorType::get({kWarpLanes}, b.getF32Type());
  auto splat = [&](float v) -> Value {
    return arith::ConstantOp::create(b, loc, DenseElementsAttr::get(lanesType, v));
  };
  auto relOf = [&](OpBuilder &nb, Location l, Value lane, int64_t j) -> Value {
    return arith::AddIOp::create(nb, l, lane, index(nb, l, j * kWarpLanes));
  };
  // s[j][lane], then each lane's maximum in j order.
  SmallVector<Value> s;
  Value laneBest = splat(kNegInf);
  for (int64_t j = 0; j < w.slots; ++j) {
    s.push_back(overLanes(b, loc, splat(0.0f),
                          [&](OpBuilder &nb, Location l, Value lane, Value lanes) -> Value {
                            Value v = score(nb, l, w, relOf(nb, l, lane, j));
                            return vector::InsertOp::create(nb, l, v, lanes, OpFoldResult(lane));
                          }));
    laneBest = maximum(b, loc, laneBest, s[j]);
  }
  Value best = warpCombine(b, loc, LaneMode::Emulate, laneBest, maximum);
  SmallVector<Value> e;
  Value laneTotal = splat(0.0f);
  for (int64_t j = 0; j < w.slots; ++j) {
    e.push_back(overLanes(b, loc, splat(0.0f),
                          [&](OpBuilder &nb, Location l, Value lane, Value lanes) -> Value {
                            Value sj = vector::ExtractOp::create(nb, l, s[j], OpFoldResult(lane));
                            Value v = weight(nb, l, w, relOf(nb, l, lane, j), sj, best);
                            return vector::InsertOp::create(nb, l, v, lanes, OpFoldResult(lane));
                          }));
    laneTotal = add(b, loc, laneTotal, e[j]);
  }
  Value total = warpCombine(b, loc, LaneMode::Emulate, laneTotal, add);
  // o[d]: positions in order, as lane d mod 32 sums it.
  auto dims = scf::ForOp::create(
      b, loc, index(b, loc, 0), index(b, loc, w.headDim), index(b, loc, 1), ValueRange{out},
      [&](OpBuilder &db, Location dl, Value d, ValueRange carried) {
        Value o = f32Constant(db, dl, 0.0f);
        for (int64_t j = 0; j < w.slots; ++j) {
          auto sources = scf::ForOp::create(
              db, dl, index(db, dl, 0), liveSources(db, dl, w, j), index(db, dl, 1), ValueRange{o},
              [&](OpBuilder &nb, Location l, Value source, ValueRange acc) {
                Value et = vector::ExtractOp::create(nb, l, e[j], OpFoldResult(source));
                Value t = arith::AddIOp::create(nb, l, source, index(nb, l, j * kWarpLanes));
                scf::YieldOp::create(nb, l, ValueRange{accumulate(nb, l, w, t, et, d, acc[0])});
              });
          o = sources.getResult(0);
        }
        Value column = arith::AddIOp::create(db, dl, rowBase, d);
        scf::YieldOp::create(
            db, dl,
            ValueRange{tensor::InsertOp::create(db, dl, o, carried[0], ValueRange{at, column})
                           .getResult()});
      });
  out = dims.getResult(0);
  Value mColumn = arith::AddIOp::create(b, loc, rowBase, index(b, loc, w.headDim));
  Value lColumn = arith::AddIOp::create(b, loc, rowBase, index(b, loc, w.headDim + 1));
  out = tensor::InsertOp::create(b, loc, best, out, ValueRange{at, mColumn});
  return tensor::InsertOp::create(b, loc, total, out, ValueRange{at, lColumn});
}

} // namespace

Value laneAttentionPartial(OpBuilder &b, Location loc, LaneMode mode, Operation *op, Value first,
                           Value last, Value init) {
  auto partial = cast<AttentionPartialOp>(op);
  const int64_t group = partial.getGroup(), headDim = partial.getHeadDim();
  const int64_t chunk = partial.getChunk(), chunks = partial.getChunks();
  assert(chunk % kWarpLanes == 0 && headDim % kWarpLanes == 0 && "whole warps of positions");
  HeadWork w;
  w.query = partial.getQuery();
  w.keys = partial.getKeys();
  w.values = partial.getValues();
  w.headDim = headDim;
  w.slots = chunk / kWarpLanes;
  w.root = f32Constant(b, loc, std::sqrt(float(headDim)));
  Value positions = arith::AddIOp::create(b, loc, partial.getPos(), index(b, loc, 1));
  auto units = scf::ForOp::create(
      b, loc, first, last, index(b, loc, 1), ValueRange{init},
      [&](OpBuilder &ub, Location ul, Value unit, ValueRange carried) {
        Value kvHead = arith::DivUIOp::create(ub, ul, unit, index(ub, ul, chunks));
        Value part = arith::RemUIOp::create(ub, ul, unit, index(ub, ul, chunks));
        // Positions [start, start + n) of this chunk; n may be 0.
        w.start = arith::MulIOp::create(ub, ul, part, index(ub, ul, chunk));
        Value stop = arith::MinUIOp::create(
            ub, ul, arith::AddIOp::create(ub, ul, w.start, index(ub, ul, chunk)), positions);
        w.n = arith::SubIOp::create(ub, ul, arith::MaxUIOp::create(ub, ul, stop, w.start), w.start);
        w.kvBase = arith::MulIOp::create(ub, ul, kvHead, index(ub, ul, headDim));
        Value at = arith::SubIOp::create(ub, ul, unit, first);
        auto heads = scf::ForOp::create(
            ub, ul, index(ub, ul, 0), index(ub, ul, group), index(ub, ul, 1),
            ValueRange{carried[0]}, [&](OpBuilder &hb, Location hl, Value g, ValueRange out) {
              Value head = arith::AddIOp::create(
                  hb, hl, arith::MulIOp::create(hb, hl, kvHead, index(hb, hl, group)), g);
              w.qBase = arith::MulIOp::create(hb, hl, head, index(hb, hl, headDim));
              Value rowBase = arith::MulIOp::create(hb, hl, g, index(hb, hl, headDim + 2));
              Value row = mode == LaneMode::Gpu ? gpuHead(hb, hl, w, out[0], at, rowBase)
                                                : emulatedHead(hb, hl, w, out[0], at, rowBase);
              scf::YieldOp::create(hb, hl, ValueRange{row});
            });
        scf::YieldOp::create(ub, ul, ValueRange{heads.getResult(0)});
      });
  return units.getResult(0);
}

} // namespace mlir::quill

// Prefill attention over query rows, a warp per row (see LaneReduction.h).
namespace mlir::quill {

namespace {

/// One query head of one row: where its query, keys and values are.
struct RowHead {
  Value query, keys, values; ///< [T, width], [context, kv width] twice.
  Value row, qBase, kvBase;  ///< The query row; column offsets.
  Value n;                   ///< Positions 0 .. n - 1 are visible.
  Value root;                ///< sqrt(head_dim).
  int64_t headDim;
};

/// This lane's online softmax over positions lane, lane + 32, ... < n:
/// (max, sum, weighted values[head_dim]), the max -inf and the rest 0 when
/// it has none.
SmallVector<Value> laneOnlineSoftmax(OpBuilder &b, Location loc, const RowHead &h, Value lane) {
  SmallVector<Value> initial = {f32Constant(b, loc, kNegInf), f32Constant(b, loc, 0.0f)};
  initial.append(h.headDim, f32Constant(b, loc, 0.0f));
  auto positions = scf::ForOp::create(
      b, loc, lane, h.n, index(b, loc, kWarpLanes), initial,
      [&](OpBuilder &pb, Location pl, Value t, ValueRange acc) {
        Value zero = f32Constant(pb, pl, 0.0f);
        auto dot = scf::ForOp::create(
            pb, pl, index(pb, pl, 0), index(pb, pl, h.headDim), index(pb, pl, 1), ValueRange{zero},
            [&](OpBuilder &db, Location dl, Value d, ValueRange sum) {
              Value q = tensor::ExtractOp::create(
                  db, dl, h.query, ValueRange{h.row, arith::AddIOp::create(db, dl, h.qBase, d)});
              Value k =
                  readCacheElement(db, dl, h.keys, t, arith::AddIOp::create(db, dl, h.kvBase, d));
              scf::YieldOp::create(db, dl, ValueRange{math::FmaOp::create(db, dl, q, k, sum[0])});
            });
        Value s = arith::DivFOp::create(pb, pl, dot.getResult(0), h.root);
        Value best = maximum(pb, pl, acc[0], s);
        // The old terms rescaled to the new maximum (0 at the first), this one's weight.
        Value rescale = math::ExpOp::create(pb, pl, arith::SubFOp::create(pb, pl, acc[0], best));
        Value p = math::ExpOp::create(pb, pl, arith::SubFOp::create(pb, pl, s, best));
        SmallVector<Value> next = {best,
                                   math::FmaOp::create(pb, pl, acc[1], rescale, p).getResult()};
        for (int64_t d = 0; d < h.headDim; ++d) {
          Value v = readCacheElement(pb, pl, h.values, t,
                                     arith::AddIOp::create(pb, pl, h.kvBase, index(pb, pl, d)));
          Value kept = arith::MulFOp::create(pb, pl, acc[2 + d], rescale);
          next.push_back(math::FmaOp::create(pb, pl, p, v, kept));
        }
        scf::YieldOp::create(pb, pl, next);
      });
  return SmallVector<Value>(positions.getResults());
}

/// The row's output for one query head: the lanes' softmaxes merged, the
/// values divided by the sum; inserted into `out` at (at, column ..).
Value mergeLanes(OpBuilder &b, Location loc, LaneMode mode, const RowHead &h, Value out, Value at,
                 Value column) {
  if (mode == LaneMode::Gpu) {
    Value lane = gpu::LaneIdOp::create(b, loc, b.getIndexAttr(kWarpLanes));
    SmallVector<Value> mine = laneOnlineSoftmax(b, loc, h, lane);
    Value best = warpCombine(b, loc, mode, mine[0], maximum);
    // A lane with no positions has max -inf: its weight is 0.
    Value weight = math::ExpOp::create(b, loc, arith::SubFOp::create(b, loc, mine[0], best));
    Value total = warpCombine(b, loc, mode, arith::MulFOp::create(b, loc, mine[1], weight), add);
    for (int64_t d = 0; d < h.headDim; ++d) {
      Value o = warpCombine(b, loc, mode, arith::MulFOp::create(b, loc, mine[2 + d], weight), add);
      Value c = arith::AddIOp::create(b, loc, column, index(b, loc, d));
      out = tensor::InsertOp::create(b, loc, arith::DivFOp::create(b, loc, o, total), out,
                                     ValueRange{at, c});
    }
    return out;
  }
  // Emulation: every lane's softmax into vectors over the lanes, then the
  // same weights and butterflies.
  auto lanesType = VectorType::get({kWarpLanes}, b.getF32Type());
  Value zeros = arith::ConstantOp::create(b, loc, DenseElementsAttr::get(lanesType, 0.0f));
  SmallVector<Value> initial(2 + h.headDim, zeros);
  auto lanes = scf::ForOp::create(
      b, loc, index(b, loc, 0), index(b, loc, kWarpLanes), index(b, loc, 1), initial,
      [&](OpBuilder &lb, Location ll, Value lane, ValueRange vectors) {
        SmallVector<Value> mine = laneOnlineSoftmax(lb, ll, h, lane);
        SmallVector<Value> next;
        for (auto [value, vector] : llvm::zip(mine, vectors))
          next.push_back(vector::InsertOp::create(lb, ll, value, vector, OpFoldResult(lane)));
        scf::YieldOp::create(lb, ll, next);
      });
  Value best = warpCombine(b, loc, mode, lanes.getResult(0), maximum);
  Value weights = overLanes(b, loc, zeros, [&](OpBuilder &nb, Location l, Value lane, Value w) {
    Value m = vector::ExtractOp::create(nb, l, lanes.getResult(0), OpFoldResult(lane));
    Value e = math::ExpOp::create(nb, l, arith::SubFOp::create(nb, l, m, best));
    return vector::InsertOp::create(nb, l, e, w, OpFoldResult(lane)).getResult();
  });
  Value total =
      warpCombine(b, loc, mode, arith::MulFOp::create(b, loc, lanes.getResult(1), weights), add);
  for (int64_t d = 0; d < h.headDim; ++d) {
    Value o = warpCombine(b, loc, mode,
                          arith::MulFOp::create(b, loc, lanes.getResult(2 + d), weights), add);
    Value c = arith::AddIOp::create(b, loc, column, index(b, loc, d));
    out = tensor::InsertOp::create(b, loc, arith::DivFOp::create(b, loc, o, total), out,
                                   ValueRange{at, c});
  }
  return out;
}

} // namespace

Value laneAttentionRows(OpBuilder &b, Location loc, LaneMode mode, Operation *op, Value first,
                        Value last, Value init) {
  auto attention = cast<AttentionOp>(op);
  const int64_t heads = attention.getNumHeads(), kvHeads = attention.getNumKvHeads();
  const int64_t headDim = attention.getHeadDim(), group = heads / kvHeads;
  RowHead h;
  h.query = attention.getQuery();
  h.keys = attention.getKeys();
  h.values = attention.getValues();
  h.headDim = headDim;
  h.root = f32Constant(b, loc, std::sqrt(float(headDim)));
  auto units = scf::ForOp::create(
      b, loc, first, last, index(b, loc, 1), ValueRange{init},
      [&](OpBuilder &rb, Location rl, Value unit, ValueRange unitOut) {
        // Unit u: query row u / kv heads, kv head u mod kv heads.
        h.row = arith::DivUIOp::create(rb, rl, unit, index(rb, rl, kvHeads));
        Value kvHead = arith::RemUIOp::create(rb, rl, unit, index(rb, rl, kvHeads));
        h.kvBase = arith::MulIOp::create(rb, rl, kvHead, index(rb, rl, headDim));
        // Row t is at position pos + t and sees positions 0 .. pos + t.
        h.n = arith::AddIOp::create(
            rb, rl, arith::AddIOp::create(rb, rl, attention.getPos(), h.row), index(rb, rl, 1));
        Value at = arith::SubIOp::create(rb, rl, unit, first);
        Value firstHead = arith::MulIOp::create(rb, rl, kvHead, index(rb, rl, group));
        auto queryHeads = scf::ForOp::create(
            rb, rl, index(rb, rl, 0), index(rb, rl, group), index(rb, rl, 1),
            ValueRange{unitOut[0]}, [&](OpBuilder &hb, Location hl, Value g, ValueRange out) {
              Value head = arith::AddIOp::create(hb, hl, firstHead, g);
              h.qBase = arith::MulIOp::create(hb, hl, head, index(hb, hl, headDim));
              Value column = arith::MulIOp::create(hb, hl, g, index(hb, hl, headDim));
              scf::YieldOp::create(hb, hl,
                                   ValueRange{mergeLanes(hb, hl, mode, h, out[0], at, column)});
            });
        scf::YieldOp::create(rb, rl, ValueRange{queryHeads.getResult(0)});
      });
  return units.getResult(0);
}

} // namespace mlir::quill
