// UTF-8 well-formedness and replacement.
#include "runtime/support/Utf8.h"

namespace quill {

Utf8Scan scanUtf8(std::string_view s, size_t i) {
  auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = byte(i);
  if (c < 0x80)
    return {1, true, false};
  // Continuation bytes after the lead; the second's range is narrower for
  // some leads (Table 3-7), which rules out overlongs, surrogates and
  // code points past U+10FFFF.
  size_t follow;
  unsigned char low = 0x80, high = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) {
    follow = 1;
  } else if (c >= 0xE0 && c <= 0xEF) {
    follow = 2;
    low = c == 0xE0 ? 0xA0 : 0x80;
    high = c == 0xED ? 0x9F : 0xBF;
  } else if (c >= 0xF0 && c <= 0xF4) {
    follow = 3;
    low = c == 0xF0 ? 0x90 : 0x80;
    high = c == 0xF4 ? 0x8F : 0xBF;
  } else {
    return {1, false, false}; // A stray continuation, C0, C1 or F5..FF.
  }
  for (size_t k = 1; k <= follow; ++k) {
    if (i + k >= s.size())
      return {k, false, true};
    const unsigned char b = byte(i + k);
    if (b < (k == 1 ? low : 0x80) || b > (k == 1 ? high : 0xBF))
      return {k, false, false};
  }
  return {follow + 1, true, false};
}

std::string Utf8Stream::push(std::string_view piece) {
  pending_.append(piece);
  std::string out;
  size_t i = 0;
  while (i < pending_.size()) {
    Utf8Scan scan = scanUtf8(pending_, i);
    if (scan.incomplete)
      break;
    if (scan.valid)
      out.append(pending_, i, scan.length);
    else
      out.append(kReplacementCharacter);
    i += scan.length;
  }
  pending_.erase(0, i);
  return out;
}

std::string Utf8Stream::finish() {
  std::string out = pending_.empty() ? "" : std::string(kReplacementCharacter);
  pending_.clear();
  return out;
}

size_t firstIllFormedUtf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    Utf8Scan scan = scanUtf8(s, i);
    if (!scan.valid)
      return i;
    i += scan.length;
  }
  return std::string_view::npos;
}

void appendUtf8(uint32_t cp, std::string &out) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

} // namespace quill
