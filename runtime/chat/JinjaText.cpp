// Python's str semantics on UTF-8 text (see JinjaText.h).
#include "runtime/chat/JinjaText.h"

#include "runtime/support/Utf8.h"

namespace quill::jinja {

bool isPythonSpace(char32_t c) {
  if (c < 0x80)
    return c == ' ' || (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x1f);
  return c == 0x85 || c == 0xa0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200a) || c == 0x2028 ||
         c == 0x2029 || c == 0x202f || c == 0x205f || c == 0x3000;
}

char32_t decodeUtf8(std::string_view s, size_t i, size_t &length) {
  unsigned char c = static_cast<unsigned char>(s[i]);
  if (c < 0x80) {
    length = 1;
    return c;
  }
  Utf8Scan scan = scanUtf8(s, i);
  if (!scan.valid) {
    length = 1;
    return 0xfffd;
  }
  length = scan.length;
  char32_t cp = c & (0xff >> (length + 1));
  for (size_t k = 1; k < length; ++k)
    cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3f);
  return cp;
}

std::vector<size_t> codePointOffsets(std::string_view s) {
  std::vector<size_t> offsets;
  offsets.reserve(s.size() + 1);
  for (size_t i = 0, n = 0; i < s.size(); i += n) {
    offsets.push_back(i);
    decodeUtf8(s, i, n);
  }
  offsets.push_back(s.size());
  return offsets;
}

size_t codePointCount(std::string_view s) {
  size_t count = 0;
  for (size_t i = 0, n = 0; i < s.size(); i += n, ++count)
    decodeUtf8(s, i, n);
  return count;
}

static bool inChars(char32_t c, const std::string *chars) {
  if (!chars)
    return isPythonSpace(c);
  for (size_t i = 0, n = 0; i < chars->size(); i += n)
    if (decodeUtf8(*chars, i, n) == c)
      return true;
  return false;
}

std::string_view stripText(std::string_view s, bool left, bool right, const std::string *chars) {
  size_t begin = 0, end = s.size(), n = 0;
  if (left)
    while (begin < end && inChars(decodeUtf8(s, begin, n), chars))
      begin += n;
  if (right) {
    while (end > begin) {
      size_t start = end - 1;
      while (start > begin && (static_cast<unsigned char>(s[start]) & 0xc0) == 0x80 &&
             end - start < 4)
        --start;
      char32_t c = decodeUtf8(s, start, n);
      if (start + n != end) { // a stray continuation byte: one code point of its own
        start = end - 1;
        c = 0xfffd;
      }
      if (!inChars(c, chars))
        break;
      end = start;
    }
  }
  return s.substr(begin, end - begin);
}

static char32_t upperOf(char32_t c) {
  if (c >= 'a' && c <= 'z')
    return c - 32;
  if ((c >= 0xe0 && c <= 0xfe && c != 0xf7) || (c >= 0x3b1 && c <= 0x3c9 && c != 0x3c2) ||
      (c >= 0x430 && c <= 0x44f))
    return c - 32;
  if (c == 0xff)
    return 0x178;
  if (c == 0x3c2)
    return 0x3a3;
  if (c >= 0x450 && c <= 0x45f)
    return c - 80;
  return c;
}

static char32_t lowerOf(char32_t c) {
  if (c >= 'A' && c <= 'Z')
    return c + 32;
  if ((c >= 0xc0 && c <= 0xde && c != 0xd7) || (c >= 0x391 && c <= 0x3a9 && c != 0x3a2) ||
      (c >= 0x410 && c <= 0x42f))
    return c + 32;
  if (c == 0x178)
    return 0xff;
  if (c >= 0x400 && c <= 0x40f)
    return c + 80;
  return c;
}

static bool isCased(char32_t c) { return upperOf(c) != c || lowerOf(c) != c || c == 0xdf; }

template <typename F> static std::string mapText(std::string_view s, F f) {
  std::string out;
  out.reserve(s.size());
  size_t index = 0;
  for (size_t i = 0, n = 0; i < s.size(); i += n, ++index) {
    char32_t c = decodeUtf8(s, i, n);
    f(out, c, index);
  }
  return out;
}

static void appendUpper(std::string &out, char32_t c) {
  if (c == 0xdf)
    out += "SS";
  else
    appendUtf8(upperOf(c), out);
}

std::string toUpper(std::string_view s) {
  return mapText(s, [](std::string &out, char32_t c, size_t) { appendUpper(out, c); });
}

std::string toLower(std::string_view s) {
  return mapText(s, [](std::string &out, char32_t c, size_t) { appendUtf8(lowerOf(c), out); });
}

std::string capitalizeText(std::string_view s) {
  return mapText(s, [](std::string &out, char32_t c, size_t index) {
    if (index == 0)
      appendUpper(out, c);
    else
      appendUtf8(lowerOf(c), out);
  });
}

std::string titleText(std::string_view s) {
  bool previousCased = false;
  return mapText(s, [&](std::string &out, char32_t c, size_t) {
    if (previousCased)
      appendUtf8(lowerOf(c), out);
    else
      appendUpper(out, c);
    previousCased = isCased(c);
  });
}

} // namespace quill::jinja
