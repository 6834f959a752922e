// Well-formed UTF-8 (Unicode's Table 3-7: no overlong forms, no surrogates,
// nothing past U+10FFFF) for text that leaves the runtime: JSON strings and
// streamed output. Ill-formed bytes become U+FFFD, one per maximal subpart,
// as Unicode recommends (and Python's errors="replace" does).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace quill {

/// U+FFFD REPLACEMENT CHARACTER in UTF-8.
constexpr std::string_view kReplacementCharacter = "\xEF\xBF\xBD";

/// What the bytes at s[i] begin.
struct Utf8Scan {
  /// A whole character (valid), else the ill-formed maximal subpart to
  /// replace; or, when `incomplete`, the valid prefix that reaches the end.
  size_t length = 0;
  bool valid = false;
  bool incomplete = false; ///< A valid start the text ends inside.
};
Utf8Scan scanUtf8(std::string_view s, size_t i);

/// The offset of the first byte of `s` that is not well-formed UTF-8, or
/// std::string_view::npos when it all is.
size_t firstIllFormedUtf8(std::string_view s);

/// Appends the UTF-8 bytes of `codepoint` (<= U+10FFFF) to `out`.
void appendUtf8(uint32_t codepoint, std::string &out);

/// Decodes byte pieces (tokens) into well-formed UTF-8 text: bytes of an
/// incomplete character wait until it completes, so no piece it returns
/// splits a character; ill-formed bytes become U+FFFD.
class Utf8Stream {
public:
  /// The text `piece` completes (possibly empty).
  std::string push(std::string_view piece);
  /// At the end: a character still incomplete becomes U+FFFD.
  std::string finish();

private:
  std::string pending_; ///< The start of an incomplete character.
};

} // namespace quill
