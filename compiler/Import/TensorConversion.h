// Element types the importers read (F32, F16, BF16 and ggml's Q8_0, Q4_0,
// Q4_K, Q6_K blocks) and their conversion to fp32, the only weight type the
// compiled step uses today. The block layouts are ggml's (ggml-common.h),
// little-endian; dequantization does ggml's dequantize_row_* arithmetic.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace quill {

enum class SourceDType { F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q6_K };

/// "F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_K", "Q6_K": the spelling GGUF
/// and safetensors use.
const char *dtypeName(SourceDType dtype);
/// The type `name` spells (dtypeName's spellings, any letter case).
std::optional<SourceDType> dtypeFromName(std::string_view name);

/// Elements per block: 1 for F32 / F16 / BF16, 32 for Q8_0 / Q4_0 and 256
/// (ggml's QK_K super-block) for Q4_K / Q6_K.
int64_t blockElements(SourceDType dtype);
/// Bytes per block: 4, 2, 2, 34, 18, 144, 210 in the enum's order.
int64_t blockBytes(SourceDType dtype);

/// Q8_0 stores blocks of 32 weights: an F16 scale d, then 32 int8 q;
/// weight i of a block is d * q[i].
constexpr int64_t kQ8_0BlockElements = 32;
constexpr int64_t kQ8_0BlockBytes = 2 + 32;
/// Q4_0: an F16 scale d, then 16 bytes of nibbles; byte j holds weight j
/// (low nibble) and weight j + 16 (high nibble), each d * (q - 8).
constexpr int64_t kQ4_0BlockElements = 32;
constexpr int64_t kQ4_0BlockBytes = 2 + 16;
/// Q4_K: F16 d and dmin, 12 bytes of eight 6-bit (scale, min) pairs, then
/// 128 bytes of nibbles; weight = d * scale * q - dmin * min per 32-weight
/// sub-block.
constexpr int64_t kQ4_KBlockElements = 256;
constexpr int64_t kQ4_KBlockBytes = 2 + 2 + 12 + 128;
/// Q6_K: 128 bytes of low nibbles (ql), 64 bytes of high bit pairs (qh), 16
/// int8 scales, then F16 d; weight = d * scale * (q - 32) per 16 weights.
constexpr int64_t kQ6_KBlockElements = 256;
constexpr int64_t kQ6_KBlockBytes = 128 + 64 + 16 + 2;

/// The bytes `count` elements of `dtype` take; nullopt when `count` is not
/// a whole number of blocks or the size overflows.
std::optional<uint64_t> dtypeBytes(SourceDType dtype, uint64_t count);

/// IEEE binary16 -> binary32, exact (subnormals, infinities, NaN kept).
float halfToFloat(uint16_t bits);
/// bfloat16 -> binary32: the 16 high bits of the float, exact.
float bfloat16ToFloat(uint16_t bits);

/// Converts `count` elements stored little-endian at `src` (any alignment)
/// to fp32 at `dst`. For the block types `count` must be a multiple of
/// blockElements(dtype). Results are bitwise those of ggml's reference
/// dequantize_row_* (fp32, unfused, in ggml's order of operations).
void convertToFloat(SourceDType dtype, const uint8_t *src, int64_t count, float *dst);

/// Q4_K's 6-bit (scale, min) of sub-block `j` (0-7) from the 12 packed
/// bytes (ggml's get_scale_min_k4): sub-blocks 0-3 use the low 6 bits of
/// bytes j and j + 4; 4-7 take 4 low bits from byte j + 4 and the 2 high
/// bits from the top of bytes j - 4 (scale) and j (min).
void q4KScaleMin(int j, const uint8_t *packed, uint8_t &scale, uint8_t &min);

} // namespace quill
