// Many horizontal reductions at once by a tree of two-source shuffles.
#include "compiler/Target/CPU/TransposedReduce.h"

#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <cassert>

namespace mlir::quill {

Value transposedReduce(OpBuilder &b, Location loc, SmallVector<Value> vectors, int64_t lanes,
                       const LaneCombine &combine) {
  assert(static_cast<int64_t>(vectors.size()) == lanes && (lanes & (lanes - 1)) == 0 &&
         "a power of two of vectors, as many as their lanes");
  // Each round combines the low half of every segment of lanes with its
  // high half, two vectors' segments at a time: after the round over
  // segments of s lanes, a vector holds each of its sources' s / 2 partial
  // results side by side.
  for (int64_t segment = lanes; vectors.size() > 1; segment /= 2) {
    SmallVector<int64_t> low, high;
    for (int64_t source = 0; source < 2; ++source)
      for (int64_t start = 0; start < lanes; start += segment)
        for (int64_t i = 0; i < segment / 2; ++i) {
          low.push_back(source * lanes + start + i);
          high.push_back(source * lanes + start + segment / 2 + i);
        }
    SmallVector<Value> next;
    for (size_t i = 0; i + 1 < vectors.size(); i += 2) {
      Value lowHalves = vector::ShuffleOp::create(b, loc, vectors[i], vectors[i + 1], low);
      Value highHalves = vector::ShuffleOp::create(b, loc, vectors[i], vectors[i + 1], high);
      next.push_back(combine(b, loc, lowHalves, highHalves));
    }
    vectors = std::move(next);
  }
  return vectors.front();
}

} // namespace mlir::quill
