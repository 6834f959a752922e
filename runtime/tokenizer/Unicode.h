// The few Unicode facts the pre-tokenizers need: UTF-8 decoding and the
// letter / number / white-space classes of regex \p{L}, \p{N} and \s.
#pragma once

#include "runtime/support/Utf8.h" // appendUtf8

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace quill {

/// One decoded UTF-8 character and the bytes it took.
struct Utf8Char {
  /// The codepoint; for a byte that does not start a valid sequence,
  /// kInvalidCodepointBase + the byte, which no class below contains.
  uint32_t codepoint;
  uint32_t length; ///< 1-4 bytes.
};

/// Marks a byte that is not valid UTF-8: such a byte becomes a character of
/// its own that is neither a letter, a number nor white space.
constexpr uint32_t kInvalidCodepointBase = 0x110000;

/// Decodes the character at the front of `text` (which must not be empty).
/// Overlong forms, surrogates, codepoints above U+10FFFF and truncated
/// sequences decode as one invalid byte, so any input makes progress.
Utf8Char decodeUtf8(std::string_view text);

/// General category L (Lu Ll Lt Lm Lo): regex \p{L}.
bool isUnicodeLetter(uint32_t codepoint);
/// General category N (Nd Nl No): regex \p{N}, and Rust's char::is_numeric.
bool isUnicodeNumber(uint32_t codepoint);
/// The White_Space property: regex \s in Unicode mode.
bool isUnicodeWhiteSpace(uint32_t codepoint);

} // namespace quill
