// Small builders shared by the quill-to-linalg lowerings.
#include "compiler/Conversion/QuillToLinalg/LinalgBuilders.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Math/IR/Math.h"

using namespace mlir;

namespace mlir::quill {

arith::FastMathFlagsAttr reductionFastMath(OpBuilder &b) {
  return arith::FastMathFlagsAttr::get(
      b.getContext(), arith::FastMathFlags::reassoc | arith::FastMathFlags::contract);
}

Value f32Constant(OpBuilder &b, Location loc, float value) {
  return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(value));
}

Value filledTensor(OpBuilder &b, Location loc, ArrayRef<OpFoldResult> sizes,
                   float value) {
  Value empty = tensor::EmptyOp::create(b, loc, sizes, b.getF32Type());
  return linalg::FillOp::create(b, loc, ValueRange{f32Constant(b, loc, value)},
                                ValueRange{empty})
      ->getResult(0);
}

Value scratchSlice(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
                   ArrayRef<OpFoldResult> sizes, std::optional<float> value) {
  // An allocation, not a tensor.empty: empties of one shape would be merged
  // by CSE and their slices folded into dynamically sized heap buffers.
  Value full = bufferization::AllocTensorOp::create(
      b, loc, RankedTensorType::get(shape, b.getF32Type()), ValueRange{});
  SmallVector<OpFoldResult> zeros(shape.size(), b.getIndexAttr(0));
  SmallVector<OpFoldResult> ones(shape.size(), b.getIndexAttr(1));
  Value slice = tensor::ExtractSliceOp::create(b, loc, full, zeros, sizes, ones);
  if (!value)
    return slice;
  return linalg::FillOp::create(b, loc, ValueRange{f32Constant(b, loc, *value)},
                                ValueRange{slice})
      ->getResult(0);
}

Value buildGeneric(OpBuilder &b, Location loc, ValueRange inputs, Value init,
                   ArrayRef<AffineMap> maps,
                   ArrayRef<utils::IteratorType> iterators,
                   const ScalarBody &body) {
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{init.getType()}, inputs, ValueRange{init}, maps,
      iterators, [&](OpBuilder &nested, Location nestedLoc, ValueRange args) {
        linalg::YieldOp::create(nested, nestedLoc,
                                ValueRange{body(nested, nestedLoc, args)});
      });
  return generic->getResult(0);
}

Value buildElementwise(OpBuilder &b, Location loc, ValueRange inputs,
                       Value init, const ScalarBody &body) {
  unsigned rank = cast<RankedTensorType>(init.getType()).getRank();
  AffineMap identity = b.getMultiDimIdentityMap(rank);
  SmallVector<AffineMap> maps(inputs.size() + 1, identity);
  SmallVector<utils::IteratorType> iterators(rank, utils::IteratorType::parallel);
  return buildGeneric(b, loc, inputs, init, maps, iterators, body);
}

Value swigluScalar(OpBuilder &b, Location loc, Value gate, Value up) {
  Value expNeg = math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, gate));
  Value one = f32Constant(b, loc, 1.0f);
  Value sigmoid =
      arith::DivFOp::create(b, loc, one, arith::AddFOp::create(b, loc, one, expNeg));
  Value silu = arith::MulFOp::create(b, loc, gate, sigmoid);
  return arith::MulFOp::create(b, loc, silu, up);
}

Value castTo(OpBuilder &b, Location loc, Value value, Type type) {
  if (value.getType() == type)
    return value;
  return tensor::CastOp::create(b, loc, type, value);
}

} // namespace mlir::quill
