// KV-cache element types in kernels: views by head, rounded or quantized
// writes, widened or decoded reads.
#include "compiler/Conversion/QuillToLinalg/CacheAccess.h"

#include "compiler/Conversion/QuillToLinalg/ActivationQuantization.h"
#include "compiler/Conversion/QuillToLinalg/LinalgBuilders.h"
#include "compiler/Conversion/QuillToLinalg/WeightDecoding.h"
#include "dialects/Quill/IR/QuillDialect.h"
#include "dialects/Quill/IR/WeightFormats.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

namespace mlir::quill {

namespace {
constexpr int64_t kBlockBytes = Q8_0Type::kBlockBytes;
static_assert(Q8_0Type::kBlockElements == kQ8Block);

/// The bytes a Q8_0 row of `elements` takes.
Value blockBytesOf(OpBuilder &b, Location loc, Value elements) {
  Value blocks =
      arith::DivUIOp::create(b, loc, elements, arith::ConstantIndexOp::create(b, loc, kQ8Block));
  return arith::MulIOp::create(b, loc, blocks, arith::ConstantIndexOp::create(b, loc, kBlockBytes));
}

/// Float rows rounded to `element` and inserted at `offsets`.
Value storeFloatRows(OpBuilder &b, Location loc, Value rows, Type element, Value storage,
                     ArrayRef<OpFoldResult> offsets) {
  auto rowsType = cast<RankedTensorType>(rows.getType());
  const int64_t rank = cast<RankedTensorType>(storage.getType()).getRank();
  SmallVector<OpFoldResult> sizes(rank, b.getIndexAttr(1));
  sizes[rank - 1] = tensor::getMixedSize(b, loc, rows, rowsType.getRank() - 1);
  if (rowsType.getRank() == 2)
    sizes[rank - 2] = tensor::getMixedSize(b, loc, rows, 0);
  Value rounded = roundToElement(b, loc, rows, element);
  SmallVector<OpFoldResult> strides(rank, b.getIndexAttr(1));
  return tensor::InsertSliceOp::create(b, loc, rounded, storage, offsets, sizes, strides);
}

/// Each block of 32 of each row: its largest magnitude, the fp16 scale's
/// two bytes, then the 32 int8 values, written with tensor.insert in
/// scalar loops (a cache write is a few rows; LLVM vectorizes the inner
/// loops).
Value storeQ8Rows(OpBuilder &b, Location loc, Value rows, Value storage,
                  ArrayRef<OpFoldResult> offsets) {
  auto rowsType = cast<RankedTensorType>(rows.getType());
  const bool single = rowsType.getRank() == 1;
  const int64_t rank = cast<RankedTensorType>(storage.getType()).getRank();
  auto index = [&](OpBuilder &nb, Location l, int64_t v) -> Value {
    return arith::ConstantIndexOp::create(nb, l, v);
  };
  Value count = single ? index(b, loc, 1) : tensor::DimOp::create(b, loc, rows, 0).getResult();
  Value width = tensor::DimOp::create(b, loc, rows, rowsType.getRank() - 1);
  Value blocks = arith::DivUIOp::create(b, loc, width, index(b, loc, kQ8Block));
  SmallVector<Value> leading;
  for (int64_t d = 0; d + 2 < rank; ++d)
    leading.push_back(getValueOrCreateConstantIndexOp(b, loc, offsets[d]));
  Value firstRow = getValueOrCreateConstantIndexOp(b, loc, offsets[rank - 2]);
  Value firstByte =
      blockBytesOf(b, loc, getValueOrCreateConstantIndexOp(b, loc, offsets[rank - 1]));
  Type i8 = b.getI8Type();

  auto rowLoop = scf::ForOp::create(
      b, loc, index(b, loc, 0), count, index(b, loc, 1), ValueRange{storage},
      [&](OpBuilder &rb, Location rl, Value r, ValueRange rowCarried) {
        auto element = [&](OpBuilder &eb, Location el, Value column) -> Value {
          if (single)
            return tensor::ExtractOp::create(eb, el, rows, ValueRange{column});
          return tensor::ExtractOp::create(eb, el, rows, ValueRange{r, column});
        };
        Value row = arith::AddIOp::create(rb, rl, firstRow, r);
        auto blockLoop = scf::ForOp::create(
            rb, rl, index(rb, rl, 0), blocks, index(rb, rl, 1), ValueRange{rowCarried[0]},
            [&](OpBuilder &kb, Location kl, Value block, ValueRange carried) {
              Value first = arith::MulIOp::create(kb, kl, block, index(kb, kl, kQ8Block));
              Value base = arith::AddIOp::create(
                  kb, kl, firstByte,
                  arith::MulIOp::create(kb, kl, block, index(kb, kl, kBlockBytes)));
              auto column = [&](OpBuilder &ib, Location il, Value i) {
                return arith::AddIOp::create(ib, il, first, i).getResult();
              };
              auto amaxLoop = scf::ForOp::create(
                  kb, kl, index(kb, kl, 0), index(kb, kl, kQ8Block), index(kb, kl, 1),
                  ValueRange{f32Constant(kb, kl, 0.0f)},
                  [&](OpBuilder &ib, Location il, Value i, ValueRange acc) {
                    Value x = element(ib, il, column(ib, il, i));
                    Value magnitude = math::AbsFOp::create(ib, il, x);
                    scf::YieldOp::create(
                        ib, il, ValueRange{arith::MaximumFOp::create(ib, il, acc[0], magnitude)});
                  });
              auto [d, inverse] = q8Scales(kb, kl, amaxLoop.getResult(0));
              auto store = [&](OpBuilder &sb, Location sl, Value byte, Value offset, Value into) {
                SmallVector<Value> at(leading);
                at.append({row, arith::AddIOp::create(sb, sl, base, offset)});
                return tensor::InsertOp::create(sb, sl, byte, into, at).getResult();
              };
              // The scale as fp16 (round to nearest even), little-endian.
              Value half = arith::TruncFOp::create(kb, kl, kb.getF16Type(), d);
              Value bits = arith::BitcastOp::create(kb, kl, kb.getI16Type(), half);
              Value low = arith::TruncIOp::create(kb, kl, i8, bits);
              Value high = arith::TruncIOp::create(
                  kb, kl, i8,
                  arith::ShRUIOp::create(kb, kl, bits,
                                         arith::ConstantIntOp::create(kb, kl, kb.getI16Type(), 8)));
              Value into = store(kb, kl, low, index(kb, kl, 0), carried[0]);
              into = store(kb, kl, high, index(kb, kl, 1), into);
              auto quantLoop = scf::ForOp::create(
                  kb, kl, index(kb, kl, 0), index(kb, kl, kQ8Block), index(kb, kl, 1),
                  ValueRange{into}, [&](OpBuilder &ib, Location il, Value i, ValueRange acc) {
                    Value q = q8Round(ib, il, element(ib, il, column(ib, il, i)), inverse);
                    Value byte = arith::FPToSIOp::create(ib, il, i8, q);
                    Value offset = arith::AddIOp::create(ib, il, i, index(ib, il, 2));
                    scf::YieldOp::create(ib, il, ValueRange{store(ib, il, byte, offset, acc[0])});
                  });
              scf::YieldOp::create(kb, kl, quantLoop.getResults());
            });
        scf::YieldOp::create(rb, rl, blockLoop.getResults());
      });
  return rowLoop.getResult(0);
}
} // namespace

bool isQuantizedCache(Value cache) {
  Type element = cast<ShapedType>(cache.getType()).getElementType();
  return isa<Q8_0Type>(element) || element.isInteger(8);
}

Value cacheStorage(Value cache) { return weightStorage(cache); }

Value asCache(OpBuilder &b, Location loc, Type cacheType, Value storage) {
  if (storage.getType() == cacheType)
    return storage;
  return WeightViewOp::create(b, loc, cacheType, storage);
}

int64_t headWidth(Value cache, int64_t headDim) {
  return isQuantizedCache(cache) ? headDim / kQ8Block * kBlockBytes : headDim;
}

Value headsView(OpBuilder &b, Location loc, Value cache, int64_t kvHeads, int64_t headDim) {
  Value storage = cacheStorage(cache);
  auto type = cast<RankedTensorType>(storage.getType());
  const int64_t rank = type.getRank();
  SmallVector<int64_t> shape(type.getShape().drop_back());
  shape.append({kvHeads, headWidth(cache, headDim)});
  SmallVector<ReassociationIndices> groups;
  for (int64_t d = 0; d + 1 < rank; ++d)
    groups.push_back({d});
  groups.push_back({rank - 1, rank});
  return tensor::ExpandShapeOp::create(b, loc, type.clone(shape), storage, groups);
}

Value storeCacheRows(OpBuilder &b, Location loc, Value rows, Type element, Value storage,
                     ArrayRef<OpFoldResult> offsets) {
  if (isa<Q8_0Type>(element))
    return storeQ8Rows(b, loc, rows, storage, offsets);
  return storeFloatRows(b, loc, rows, element, storage, offsets);
}

Value readHeadElement(OpBuilder &b, Location loc, Value view, ValueRange leading, Value d) {
  Type element = cast<ShapedType>(view.getType()).getElementType();
  if (element.isInteger(8))
    element = Q8_0Type::get(b.getContext());
  return decodeElement(b, loc, view, element, leading, d);
}

Value readCacheElement(OpBuilder &b, Location loc, Value cache, Value position, Value column) {
  return decodeElement(b, loc, cacheStorage(cache), elementTypeOf(cache), ValueRange{position},
                       column);
}

} // namespace mlir::quill
