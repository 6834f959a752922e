// Python's str semantics on UTF-8 text: what counts as whitespace (str.isspace,
// regex \s), code point iteration, and case mapping for the scripts templates
// meet (ASCII, Latin-1, Greek, Cyrillic).
#pragma once

#include "runtime/support/Utf8.h" // appendUtf8

#include <string>
#include <string_view>
#include <vector>

namespace quill::jinja {

/// Whether Python's str.isspace() holds for code point c.
bool isPythonSpace(char32_t c);
/// The code point at s[i] and its byte length; an ill-formed byte is one
/// code point (U+FFFD) of length 1.
char32_t decodeUtf8(std::string_view s, size_t i, size_t &length);

/// The byte offset of each code point of s, plus s.size() at the end.
std::vector<size_t> codePointOffsets(std::string_view s);
size_t codePointCount(std::string_view s);

/// Python's str.strip/lstrip/rstrip: whitespace when chars is null, else
/// any code point of *chars.
std::string_view stripText(std::string_view s, bool left, bool right,
                           const std::string *chars = nullptr);

std::string toUpper(std::string_view s);
std::string toLower(std::string_view s);
/// Python's str.capitalize(): first code point upper, the rest lower.
std::string capitalizeText(std::string_view s);
/// jinja2's title filter / str.title(): words start upper, the rest lower.
std::string titleText(std::string_view s);

} // namespace quill::jinja
