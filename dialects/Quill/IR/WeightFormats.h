// How a weight tensor's element type stores it: plain floats (f32, f16,
// bf16) or GGUF blocks (!quill.q8_0, ...). Passes size weights in bytes
// through these, never through the element bit width.
#pragma once

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/StringRef.h"

#include <optional>

namespace mlir::quill {

/// A weight encoding: consecutive weights of a row are stored in blocks of
/// `blockElements` taking `blockBytes` (1 weight of 4 bytes for f32).
struct WeightFormat {
  llvm::StringRef name; ///< "f32", "f16", "bf16", "q8_0", "q4_0", "q4_k", "q6_k".
  int64_t blockElements = 1;
  int64_t blockBytes = 4;
  /// Whether the blocks hold scales and quantized values (not plain floats).
  bool isBlockQuantized() const { return blockElements > 1; }
};

/// The encoding of weights of `elementType`, or nullopt for a type no
/// weight may have.
std::optional<WeightFormat> weightFormatOf(Type elementType);
/// The element type of the encoding called `name` (as WeightFormat::name),
/// or null.
Type weightElementType(MLIRContext *ctx, llvm::StringRef name);

/// Whether `type` is a weight matrix of GGUF blocks.
bool isBlockQuantized(Type type);

/// The rows per group of a weight stored in row groups
/// (`#quill.row_groups<L>` as its encoding): L, or 0 for the plain layout.
int64_t rowGroupsOf(Type type);

/// Bytes one row of `type` ([rows, columns] or [columns]) takes; its
/// columns must be whole blocks.
int64_t rowStorageBytes(RankedTensorType type);
/// Bytes all of `type` takes.
int64_t storageBytes(RankedTensorType type);

/// The [rows, row bytes] i8 tensor a block-quantized weight's kernel
/// argument is (a Q8_0 block pool's: [blocks, block size, row bytes]).
RankedTensorType storageBytesType(RankedTensorType weight);

} // namespace mlir::quill
