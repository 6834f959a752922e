// Q8_0 activations: the rounding rules and their target-neutral form.
#include "compiler/Conversion/QuillToLinalg/ActivationQuantization.h"

#include "compiler/Conversion/QuillToLinalg/LinalgBuilders.h"

#include "mlir/Dialect/Math/IR/Math.h"

namespace mlir::quill {

std::pair<Value, Value> q8Scales(OpBuilder &b, Location loc, Value amax) {
  // No fast-math flags: every target must round the same values the same way.
  Value d = arith::DivFOp::create(b, loc, amax, f32Constant(b, loc, 127.0f));
  Value zero = f32Constant(b, loc, 0.0f);
  Value isZero = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, d, zero);
  Value inverse = arith::DivFOp::create(b, loc, f32Constant(b, loc, 1.0f), d);
  return {d, arith::SelectOp::create(b, loc, isZero, zero, inverse)};
}

Value q8Round(OpBuilder &b, Location loc, Value x, Value inverse) {
  return math::RoundEvenOp::create(b, loc, arith::MulFOp::create(b, loc, x, inverse));
}

namespace {
/// `input` ([..., K]) as [..., K / 32, 32], and the reassociation back.
std::pair<Value, SmallVector<ReassociationIndices>> asBlocks(OpBuilder &b, Location loc,
                                                             Value input) {
  auto type = cast<RankedTensorType>(input.getType());
  const int64_t rank = type.getRank();
  const int64_t width = type.getDimSize(rank - 1);
  SmallVector<int64_t> blocked(type.getShape().drop_back());
  blocked.append({width / kQ8Block, kQ8Block});
  SmallVector<ReassociationIndices> groups;
  for (int64_t d = 0; d + 1 < rank; ++d)
    groups.push_back({d});
  groups.push_back({rank - 1, rank});
  auto blockedType = RankedTensorType::get(blocked, b.getF32Type());
  return {tensor::ExpandShapeOp::create(b, loc, blockedType, input, groups), groups};
}
} // namespace

Q8BlockScales q8BlockScales(OpBuilder &b, Location loc, Value input) {
  Value blocks = asBlocks(b, loc, input).first;
  auto blockedType = cast<RankedTensorType>(blocks.getType());
  MLIRContext *ctx = b.getContext();
  const unsigned loops = blockedType.getRank();
  AffineMap all = AffineMap::getMultiDimIdentityMap(loops, ctx);
  AffineMap perBlock = all.dropResult(loops - 1);
  using utils::IteratorType;
  SmallVector<IteratorType> reduce(loops, IteratorType::parallel);
  reduce.back() = IteratorType::reduction;
  // The block grid's sizes (a live-rows slice has a dynamic row count).
  SmallVector<OpFoldResult> scaleSizes = tensor::getMixedSizes(b, loc, blocks);
  scaleSizes.pop_back();
  // max |x| of each block (order-free: exact whatever the vectorization).
  Value amax = buildGeneric(b, loc, ValueRange{blocks}, filledTensor(b, loc, scaleSizes, 0.0f),
                            {all, perBlock}, reduce,
                            [](OpBuilder &nb, Location l, ValueRange args) -> Value {
                              Value magnitude = math::AbsFOp::create(nb, l, args[0]);
                              return arith::MaximumFOp::create(nb, l, args[1], magnitude);
                            });
  // Each block's scale and its inverse once.
  AffineMap same = AffineMap::getMultiDimIdentityMap(loops - 1, ctx);
  auto perBlockValue = [&](bool inverse) {
    return buildGeneric(b, loc, ValueRange{amax},
                        tensor::EmptyOp::create(b, loc, scaleSizes, b.getF32Type()), {same, same},
                        SmallVector<IteratorType>(loops - 1, IteratorType::parallel),
                        [inverse](OpBuilder &nb, Location l, ValueRange args) -> Value {
                          auto [d, inv] = q8Scales(nb, l, args[0]);
                          return inverse ? inv : d;
                        });
  };
  return {perBlockValue(false), perBlockValue(true)};
}

Value q8RoundTrip(OpBuilder &b, Location loc, Value input) {
  auto type = cast<RankedTensorType>(input.getType());
  auto [blocks, groups] = asBlocks(b, loc, input);
  auto blockedType = cast<RankedTensorType>(blocks.getType());
  Q8BlockScales scales = q8BlockScales(b, loc, input);
  const unsigned loops = blockedType.getRank();
  AffineMap all = AffineMap::getMultiDimIdentityMap(loops, b.getContext());
  AffineMap perBlock = all.dropResult(loops - 1);
  Value init =
      tensor::EmptyOp::create(b, loc, tensor::getMixedSizes(b, loc, blocks), b.getF32Type());
  Value rounded =
      buildGeneric(b, loc, ValueRange{blocks, scales.scales, scales.inverses}, init,
                   {all, perBlock, perBlock, all},
                   SmallVector<utils::IteratorType>(loops, utils::IteratorType::parallel),
                   [](OpBuilder &nb, Location l, ValueRange args) -> Value {
                     return q8Dequantized(nb, l, args[0], args[1], args[2]);
                   });
  return tensor::CollapseShapeOp::create(b, loc, type, rounded, groups);
}

Value q8Dequantized(OpBuilder &b, Location loc, Value x, Value d, Value inverse) {
  return arith::MulFOp::create(b, loc, d, q8Round(b, loc, x, inverse));
}

Value bf16Rounded(OpBuilder &b, Location loc, Value x) {
  Type bf16 = b.getBF16Type(), f32 = b.getF32Type();
  if (auto vector = dyn_cast<VectorType>(x.getType())) {
    bf16 = vector.clone(bf16);
    f32 = vector.clone(f32);
  }
  Value rounded = arith::TruncFOp::create(b, loc, bf16, x);
  return arith::ExtFOp::create(b, loc, f32, rounded);
}

Value bf16RoundTrip(OpBuilder &b, Location loc, Value input) {
  Value init =
      tensor::EmptyOp::create(b, loc, tensor::getMixedSizes(b, loc, input), b.getF32Type());
  return buildElementwise(b, loc, ValueRange{input}, init,
                          [](OpBuilder &nb, Location l, ValueRange args) -> Value {
                            return bf16Rounded(nb, l, args[0]);
                          });
}

} // namespace mlir::quill
