// Element types the importers read (F32, F16, BF16, Q8_0) and their
// conversion to fp32, the only weight type the compiled step uses today.
#pragma once

#include <cstdint>
#include <optional>

namespace quill {

enum class SourceDType { F32, F16, BF16, Q8_0 };

/// "F32", "F16", "BF16", "Q8_0": the spelling GGUF and safetensors use.
const char *dtypeName(SourceDType dtype);

/// Q8_0 stores blocks of 32 weights: an F16 scale, then 32 int8 values;
/// weight i of a block is scale * q[i].
constexpr int64_t kQ8_0BlockElements = 32;
constexpr int64_t kQ8_0BlockBytes = 2 + 32;

/// The bytes `count` elements of `dtype` take; nullopt when `count` is not
/// a whole number of blocks or the size overflows.
std::optional<uint64_t> dtypeBytes(SourceDType dtype, uint64_t count);

/// IEEE binary16 -> binary32, exact (subnormals, infinities, NaN kept).
float halfToFloat(uint16_t bits);
/// bfloat16 -> binary32: the 16 high bits of the float, exact.
float bfloat16ToFloat(uint16_t bits);

/// Converts `count` elements stored little-endian at `src` (any alignment)
/// to fp32 at `dst`. For Q8_0 `count` must be a multiple of 32.
void convertToFloat(SourceDType dtype, const uint8_t *src, int64_t count, float *dst);

} // namespace quill
