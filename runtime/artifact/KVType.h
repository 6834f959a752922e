// The element type of the KV cache, fixed when an artifact is compiled
// (quill-compile --kv-type): the kernels store keys and values rounded to
// it and widen them to f32 where attention reads them.
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
};

constexpr KVType kLastKVType = KVType::BF16;

/// "f32", "f16", "bf16": the names --kv-type takes and reports print.
constexpr std::string_view kvTypeName(KVType type) {
  switch (type) {
  case KVType::F32:
    return "f32";
  case KVType::F16:
    return "f16";
  case KVType::BF16:
    return "bf16";
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

/// Bytes of one cached element.
constexpr uint32_t kvElementBytes(KVType type) { return type == KVType::F32 ? 4 : 2; }

} // namespace quill
