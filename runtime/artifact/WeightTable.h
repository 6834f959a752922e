// The artifact's table of stored weights: each tensor (or compile-time pack
// of tensors) with its encoding and byte range in the Weights section, so a
// runtime that never parses the model can say what it streams.
//
// Section layout (little-endian): u32 count, then per entry u32 encoding
// (bits 0-7 the WeightEncoding, bits 8-15 the rows per row group, 0 for
// the file's rows), u64 offset, u64 bytes, u64 elements, u32 name length,
// name bytes.
#pragma once

#include "runtime/support/Error.h"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace quill {

/// How weights are stored, in GGUF's layouts. The order is the compiler's
/// SourceDType's (TensorConversion.h), which converts by value.
enum class WeightEncoding : uint32_t { F32 = 0, F16, BF16, Q8_0, Q4_0, Q4_K, Q6_K };
constexpr size_t kWeightEncodingCount = 7;

/// Consecutive weights of a row are stored in blocks of `blockElements`
/// taking `blockBytes`.
struct WeightEncodingInfo {
  const char *name; ///< "f32", "f16", "bf16", "q8_0", "q4_0", "q4_k", "q6_k".
  int64_t blockElements;
  int64_t blockBytes;
};
/// GGUF's block geometry, indexed by WeightEncoding: Q8_0 an f16 scale and
/// 32 int8; Q4_0 an f16 scale and 16 bytes of nibbles; Q4_K and Q6_K
/// super-blocks of 256.
inline constexpr WeightEncodingInfo kWeightEncodings[kWeightEncodingCount] = {
    {"f32", 1, 4},    {"f16", 1, 2},      {"bf16", 1, 2},     {"q8_0", 32, 34},
    {"q4_0", 32, 18}, {"q4_k", 256, 144}, {"q6_k", 256, 210},
};
constexpr const WeightEncodingInfo &weightEncodingInfo(WeightEncoding encoding) {
  return kWeightEncodings[static_cast<uint32_t>(encoding)];
}

/// One stored tensor; a pack's name joins its parts' names with '+'.
struct WeightEntry {
  std::string name;
  WeightEncoding encoding = WeightEncoding::F32;
  uint64_t offset = 0;
  uint64_t bytes = 0;
  uint64_t elements = 0;
  /// Rows per group where the matrix is stored in row groups (the layout
  /// the CPU's int8 kernels read, #quill.row_groups: 8 or 16); 0 for the
  /// file's rows.
  uint32_t rowGroups = 0;
};

constexpr size_t kMaxWeightNameBytes = 1024;
constexpr uint32_t kMaxWeightEntries = 1u << 20;

std::vector<uint8_t> encodeWeightTable(const std::vector<WeightEntry> &entries);
/// Decodes and checks a table against a Weights section of `weightBytes`:
/// known encodings, printable names, whole blocks whose bytes the encoding
/// implies, and ranges in offset order inside the section, none overlapping.
ErrorOr<std::vector<WeightEntry>> decodeWeightTable(const uint8_t *data, size_t size,
                                                    uint64_t weightBytes);

/// Stored bytes per encoding, indexed by WeightEncoding.
std::array<uint64_t, kWeightEncodingCount> bytesByEncoding(const std::vector<WeightEntry> &entries);
/// The encoding holding the most bytes: "q4_k" for a Q4_K_M model, whose
/// classifier and some projections are Q6_K and norms f32. Empty for an
/// empty table.
std::string dominantEncoding(const std::vector<WeightEntry> &entries);
/// "520 B", "3.4 kB", "116.4 MB" (decimal units).
std::string byteSizeText(uint64_t bytes);
/// One line: total bytes, then each encoding present with its bytes and
/// tensor count, largest first, and how many of them are in row groups
/// ("116.4 MB: q8_0 116.1 MB (73, 72 in row groups of 16), f32 0.3 MB (25)").
std::string describeWeights(const std::vector<WeightEntry> &entries);

} // namespace quill
