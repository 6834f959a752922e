// The element type of the KV cache, fixed when an artifact is compiled
// (quill-compile --kv-type): the kernels store keys and values rounded to
// it (or quantized to GGUF's Q8_0 blocks) and widen them to f32 where
// attention reads them.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace quill {

/// Stored in the artifact's config: the values are part of the format.
enum class KVType : uint8_t {
  F32 = 0,  ///< The default: keeps the fp32 golden text exact.
  F16 = 1,  ///< IEEE half, rounded to nearest even.
  BF16 = 2, ///< bfloat16, rounded to nearest even.
  Q8_0 = 3, ///< GGUF Q8_0 blocks of 32 along each head: an fp16 scale, 32 int8.
};

constexpr KVType kLastKVType = KVType::Q8_0;

/// "f32", "f16", "bf16", "q8_0": the names --kv-type takes and reports print.
constexpr std::string_view kvTypeName(KVType type) {
  switch (type) {
  case KVType::F32:
    return "f32";
  case KVType::F16:
    return "f16";
  case KVType::BF16:
    return "bf16";
  case KVType::Q8_0:
    return "q8_0";
  }
  return "?";
}

/// The type a name stands for, or nothing.
constexpr std::optional<KVType> parseKVType(std::string_view name) {
  for (uint8_t v = 0; v <= uint8_t(kLastKVType); ++v)
    if (kvTypeName(KVType(v)) == name)
      return KVType(v);
  return std::nullopt;
}

/// Elements per Q8_0 block, and the bytes of one (an fp16 scale, 32 int8).
constexpr uint32_t kQ8BlockElements = 32;
constexpr uint32_t kQ8BlockBytes = 34;

/// Bytes `elements` cached values take (a whole number of blocks for Q8_0).
constexpr uint64_t kvBytesOf(KVType type, uint64_t elements) {
  switch (type) {
  case KVType::F32:
    return elements * 4;
  case KVType::F16:
  case KVType::BF16:
    return elements * 2;
  case KVType::Q8_0:
    return elements / kQ8BlockElements * kQ8BlockBytes;
  }
  return 0;
}

} // namespace quill
