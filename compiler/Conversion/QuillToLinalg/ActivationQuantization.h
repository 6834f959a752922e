// Q8_0 activations (quill.linear's `q8_input`): each block of 32 inputs
// rounded to int8 values q and one scale d, so that x ~ d * q; and bf16
// activations (`bf16_input`): each input rounded to bf16. The scalar rules
// are shared by the target-neutral form and a target's int8 and bf16
// kernels, so that both round every value the same way.
#pragma once

#include "mlir/IR/Builders.h"

#include <utility>

namespace mlir::quill {

/// Elements of a Q8_0 block of activations.
constexpr int64_t kQ8Block = 32;

/// A block's scale d = amax / 127 and its inverse (0 where d is 0), from
/// the block's largest magnitude `amax` (an f32 scalar), as llama.cpp's
/// quantize_row_q8_0 takes them.
std::pair<Value, Value> q8Scales(OpBuilder &b, Location loc, Value amax);
/// roundeven(x * inverse): a block's int8 values as f32 (scalars or
/// vectors of one type).
Value q8Round(OpBuilder &b, Location loc, Value x, Value inverse);

/// d * roundeven(x * inverse): the value a rounded input stands for.
Value q8Dequantized(OpBuilder &b, Location loc, Value x, Value d, Value inverse);

/// The Q8_0 blocks' scales of `input` ([K] or [T, K], K a multiple of 32),
/// as linalg.generic ops: [K / 32] or [T, K / 32] each.
struct Q8BlockScales {
  Value scales;   ///< d = max |x| / 127.
  Value inverses; ///< 1 / d (0 where d is 0).
};
Q8BlockScales q8BlockScales(OpBuilder &b, Location loc, Value input);

/// `input` ([K] or [T, K], K a multiple of 32) rounded to Q8_0 blocks along
/// its last dimension and back to f32 (d * q): the values a product over
/// q8_input multiplies, as linalg.generic ops.
Value q8RoundTrip(OpBuilder &b, Location loc, Value input);

/// `x` (f32 scalars or vectors) rounded to bf16 (to nearest even) and
/// widened back to f32.
Value bf16Rounded(OpBuilder &b, Location loc, Value x);
/// Every element of `input` (an f32 tensor) so rounded, as a linalg.generic.
Value bf16RoundTrip(OpBuilder &b, Location loc, Value input);

} // namespace mlir::quill
