// Many horizontal reductions at once: N vectors of N lanes reduced into one
// vector whose lane j is vector j's reduction, by a tree of two-source
// shuffles. Where each vector's own reduction costs log2(N) shuffles and
// operations plus an extract, the tree costs 2 shuffles and one operation
// per vector in all.
#ifndef QUILL_COMPILER_TARGET_CPU_TRANSPOSEDREDUCE_H
#define QUILL_COMPILER_TARGET_CPU_TRANSPOSEDREDUCE_H

#include "mlir/IR/Builders.h"

#include <functional>

namespace mlir::quill {

/// Combines two vectors lane by lane (an add, a maximum).
using LaneCombine = std::function<Value(OpBuilder &, Location, Value, Value)>;

/// One vector of `vectors.size()` (= `lanes`, a power of two) lanes: lane j
/// combines vectors[j]'s lanes in a halving horizontal reduction's order
/// (lane i with lane i + lanes/2, then + lanes/4, ..., + 1), so for a
/// non-associative combine each lane has the bits that reduction gives.
Value transposedReduce(OpBuilder &b, Location loc, SmallVector<Value> vectors, int64_t lanes,
                       const LaneCombine &combine);

} // namespace mlir::quill

#endif // QUILL_COMPILER_TARGET_CPU_TRANSPOSEDREDUCE_H
