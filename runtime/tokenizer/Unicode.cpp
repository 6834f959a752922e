// UTF-8 decoding and the white-space class (the letter and number tables
// live in UnicodeTables.cpp).
#include "runtime/tokenizer/Unicode.h"

#include <string>

namespace quill {

Utf8Char decodeUtf8(std::string_view text) {
  const auto byte = [&](size_t i) { return static_cast<uint8_t>(text[i]); };
  const uint8_t lead = byte(0);
  const Utf8Char invalid{kInvalidCodepointBase + lead, 1};
  if (lead < 0x80)
    return {lead, 1};
  uint32_t length, codepoint, minimum;
  if ((lead & 0xE0) == 0xC0) {
    length = 2, codepoint = lead & 0x1F, minimum = 0x80;
  } else if ((lead & 0xF0) == 0xE0) {
    length = 3, codepoint = lead & 0x0F, minimum = 0x800;
  } else if ((lead & 0xF8) == 0xF0) {
    length = 4, codepoint = lead & 0x07, minimum = 0x10000;
  } else {
    return invalid; // A continuation byte or 0xF8..0xFF.
  }
  if (text.size() < length)
    return invalid;
  for (uint32_t i = 1; i < length; ++i) {
    if ((byte(i) & 0xC0) != 0x80)
      return invalid;
    codepoint = (codepoint << 6) | (byte(i) & 0x3F);
  }
  if (codepoint < minimum || codepoint > 0x10FFFF || (codepoint >= 0xD800 && codepoint <= 0xDFFF))
    return invalid;
  return {codepoint, length};
}

bool isUnicodeWhiteSpace(uint32_t cp) {
  // PropList.txt's White_Space, complete.
  return (cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F ||
         cp == 0x205F || cp == 0x3000;
}

} // namespace quill
