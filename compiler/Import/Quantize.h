// fp32 -> every SourceDType (F16, BF16 and ggml's Q8_0, Q4_0, Q4_K, Q6_K
// blocks, TensorConversion.h's layouts). MLIR-free, like the rest of
// compiler/Import. Which type each weight gets is quill-quantize-weights'.
#pragma once

#include "compiler/Import/TensorConversion.h"

#include <cstdint>
#include <string>

namespace quill {

/// fp32 -> IEEE binary16, round to nearest even, as ggml's
/// GGML_FP32_TO_FP16 (and x86 F16C): overflow to infinity (from 65520 on),
/// subnormals kept, NaN -> the quiet NaN 0x7E00 with the input's sign
/// (ggml's software conversion; F16C would also keep payload bits).
uint16_t floatToHalf(float value);
/// fp32 -> bfloat16 as ggml_compute_fp32_to_bf16: round to nearest even;
/// a NaN keeps its sign and high payload and is made quiet.
uint16_t floatToBfloat16(float value);

/// Writes `count` fp32 values as `type` at `dst` (dtypeBytes(type, count)
/// bytes, any alignment); for the block types `count` must be a multiple of
/// blockElements(type).
///  - F32: copied. F16, BF16: floatToHalf / floatToBfloat16.
///  - Q8_0, Q4_0: byte for byte ggml's quantize_row_q8_0_ref /
///    quantize_row_q4_0_ref, so the same bytes llama-quantize writes.
///  - Q4_K, Q6_K: valid ggml blocks from Quill's own weighted least-squares
///    search over candidate scales (in the spirit of ggml's make_qkx2_quants
///    and make_qx_quants); not llama.cpp's bytes.
void quantizeRow(SourceDType type, const float *src, int64_t count, uint8_t *dst);

} // namespace quill
