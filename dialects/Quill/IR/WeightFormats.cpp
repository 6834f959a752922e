// Weight encodings: the block sizes of each weight element type.
#include "dialects/Quill/IR/WeightFormats.h"

#include "dialects/Quill/IR/QuillDialect.h"

#include "mlir/IR/Builders.h"

namespace mlir::quill {

template <typename BlockType> static WeightFormat blockFormat(llvm::StringRef name) {
  return {name, BlockType::kBlockElements, BlockType::kBlockBytes};
}

std::optional<WeightFormat> weightFormatOf(Type type) {
  if (type.isF32())
    return WeightFormat{"f32", 1, 4};
  if (type.isF16())
    return WeightFormat{"f16", 1, 2};
  if (type.isBF16())
    return WeightFormat{"bf16", 1, 2};
  if (isa<Q8_0Type>(type))
    return blockFormat<Q8_0Type>("q8_0");
  if (isa<Q4_0Type>(type))
    return blockFormat<Q4_0Type>("q4_0");
  if (isa<Q4_KType>(type))
    return blockFormat<Q4_KType>("q4_k");
  if (isa<Q6_KType>(type))
    return blockFormat<Q6_KType>("q6_k");
  return std::nullopt;
}

Type weightElementType(MLIRContext *ctx, llvm::StringRef name) {
  Builder b(ctx);
  if (name == "f32")
    return b.getF32Type();
  if (name == "f16")
    return b.getF16Type();
  if (name == "bf16")
    return b.getBF16Type();
  if (name == "q8_0")
    return Q8_0Type::get(ctx);
  if (name == "q4_0")
    return Q4_0Type::get(ctx);
  if (name == "q4_k")
    return Q4_KType::get(ctx);
  if (name == "q6_k")
    return Q6_KType::get(ctx);
  return {};
}

int64_t rowGroupsOf(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  auto groups = tensor ? dyn_cast_or_null<RowGroupsAttr>(tensor.getEncoding()) : RowGroupsAttr();
  return groups ? groups.getLanes() : 0;
}

bool isBlockQuantized(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor)
    return false;
  std::optional<WeightFormat> format = weightFormatOf(tensor.getElementType());
  return format && format->isBlockQuantized();
}

int64_t rowStorageBytes(RankedTensorType type) {
  std::optional<WeightFormat> format = weightFormatOf(type.getElementType());
  int64_t bits = format ? 0 : type.getElementType().getIntOrFloatBitWidth();
  int64_t columns = type.getDimSize(type.getRank() - 1);
  if (!format)
    return columns * bits / 8;
  return columns / format->blockElements * format->blockBytes;
}

int64_t storageBytes(RankedTensorType type) {
  int64_t rows = type.getRank() == 1 ? 1 : type.getNumElements() / type.getShape().back();
  return rows * rowStorageBytes(type);
}

RankedTensorType storageBytesType(RankedTensorType weight) {
  SmallVector<int64_t> shape(weight.getShape());
  shape.back() = rowStorageBytes(weight);
  return RankedTensorType::get(shape, IntegerType::get(weight.getContext(), 8));
}

} // namespace mlir::quill
