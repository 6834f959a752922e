// A strict recursive-descent JSON parser with a depth limit.
#include "compiler/Import/JsonValue.h"

#include "runtime/support/ReadFile.h"
#include "runtime/tokenizer/Unicode.h"

#include <charconv>
#include <cstdio>
#include <cstring>

namespace quill {

std::optional<int64_t> JsonValue::asInteger() const {
  const JsonNumber *n = asNumber();
  return n ? n->integer : std::nullopt;
}

const JsonValue *JsonValue::find(std::string_view key) const {
  const JsonObject *object = asObject();
  if (!object)
    return nullptr;
  for (auto it = object->rbegin(); it != object->rend(); ++it)
    if (it->first == key)
      return &it->second;
  return nullptr;
}

const char *jsonKindName(JsonValue::Kind kind) {
  switch (kind) {
  case JsonValue::Kind::Null:
    return "null";
  case JsonValue::Kind::Bool:
    return "a boolean";
  case JsonValue::Kind::Number:
    return "a number";
  case JsonValue::Kind::String:
    return "a string";
  case JsonValue::Kind::Array:
    return "an array";
  case JsonValue::Kind::Object:
    return "an object";
  }
  return "?";
}

namespace {

/// The parser state: the text, the position, and the first error.
class Parser {
public:
  Parser(std::string_view text, const std::string &sourceName)
      : text_(text), sourceName_(sourceName) {}

  ErrorOr<JsonValue> parseDocument() {
    skipSpace();
    JsonValue value = parseValue(0);
    if (!failed_) {
      skipSpace();
      if (pos_ != text_.size())
        fail("unexpected text after the JSON value");
    }
    if (failed_)
      return Status::error(error_);
    return value;
  }

private:
  void fail(const std::string &what) {
    if (failed_)
      return;
    failed_ = true;
    size_t line = 1, column = 1;
    for (size_t i = 0; i < pos_ && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    error_ = sourceName_ + ": invalid JSON at line " + std::to_string(line) + ", column " +
             std::to_string(column) + ": " + what;
  }

  bool atEnd() const { return pos_ >= text_.size(); }
  char peek() const { return atEnd() ? '\0' : text_[pos_]; }

  void skipSpace() {
    while (!atEnd() && (peek() == ' ' || peek() == '\t' || peek() == '\n' || peek() == '\r'))
      ++pos_;
  }

  bool consumeWord(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word)
      return false;
    pos_ += word.size();
    return true;
  }

  JsonValue parseValue(int depth) {
    if (depth > kMaxJsonDepth) {
      fail("nesting deeper than " + std::to_string(kMaxJsonDepth) + " levels");
      return {};
    }
    if (atEnd()) {
      fail("unexpected end of input");
      return {};
    }
    switch (peek()) {
    case '{':
      return parseObject(depth);
    case '[':
      return parseArray(depth);
    case '"': {
      std::string s;
      parseString(s);
      return JsonValue(std::move(s));
    }
    case 't':
      if (consumeWord("true"))
        return JsonValue(true);
      break;
    case 'f':
      if (consumeWord("false"))
        return JsonValue(false);
      break;
    case 'n':
      if (consumeWord("null"))
        return JsonValue();
      break;
    default:
      if (peek() == '-' || (peek() >= '0' && peek() <= '9'))
        return parseNumber();
      break;
    }
    fail(std::string("unexpected character '") + printable(peek()) + "'");
    return {};
  }

  static std::string printable(char c) {
    if (static_cast<unsigned char>(c) >= 0x20 && static_cast<unsigned char>(c) < 0x7F)
      return std::string(1, c);
    char buffer[8];
    std::snprintf(buffer, sizeof buffer, "\\x%02X", static_cast<unsigned char>(c));
    return buffer;
  }

  JsonValue parseObject(int depth) {
    ++pos_; // '{'
    JsonObject members;
    skipSpace();
    if (peek() == '}') {
      ++pos_;
      return JsonValue(std::move(members));
    }
    while (!failed_) {
      skipSpace();
      if (peek() != '"') {
        fail(atEnd() ? "unexpected end of input in an object" : "expected a string key");
        break;
      }
      std::string key;
      if (!parseString(key))
        break;
      skipSpace();
      if (peek() != ':') {
        fail("expected ':' after an object key");
        break;
      }
      ++pos_;
      skipSpace();
      JsonValue value = parseValue(depth + 1);
      if (failed_)
        break;
      members.emplace_back(std::move(key), std::move(value));
      skipSpace();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() == '}') {
        ++pos_;
        return JsonValue(std::move(members));
      }
      fail(atEnd() ? "unexpected end of input in an object" : "expected ',' or '}' in an object");
    }
    return {};
  }

  JsonValue parseArray(int depth) {
    ++pos_; // '['
    JsonArray items;
    skipSpace();
    if (peek() == ']') {
      ++pos_;
      return JsonValue(std::move(items));
    }
    while (!failed_) {
      skipSpace();
      JsonValue value = parseValue(depth + 1);
      if (failed_)
        break;
      items.push_back(std::move(value));
      skipSpace();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() == ']') {
        ++pos_;
        return JsonValue(std::move(items));
      }
      fail(atEnd() ? "unexpected end of input in an array" : "expected ',' or ']' in an array");
    }
    return {};
  }

  /// Four hex digits at pos_, or -1.
  int parseHex4() {
    if (text_.size() - pos_ < 4)
      return -1;
    int value = 0;
    for (int i = 0; i < 4; ++i) {
      char c = text_[pos_ + i];
      int digit = c >= '0' && c <= '9'   ? c - '0'
                  : c >= 'a' && c <= 'f' ? c - 'a' + 10
                  : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                         : -1;
      if (digit < 0)
        return -1;
      value = value * 16 + digit;
    }
    pos_ += 4;
    return value;
  }

  bool parseString(std::string &out) {
    ++pos_; // '"'
    while (true) {
      if (atEnd()) {
        fail("unterminated string");
        return false;
      }
      char c = text_[pos_];
      if (c == '"') {
        ++pos_;
        return true;
      }
      if (static_cast<unsigned char>(c) < 0x20) {
        fail("control character in a string");
        return false;
      }
      if (c != '\\') {
        out += c;
        ++pos_;
        continue;
      }
      ++pos_;
      char e = peek();
      ++pos_;
      switch (e) {
      case '"':
      case '\\':
      case '/':
        out += e;
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'u': {
        int unit = parseHex4();
        if (unit < 0) {
          fail("bad \\u escape");
          return false;
        }
        uint32_t codepoint = uint32_t(unit);
        if (unit >= 0xD800 && unit <= 0xDBFF) {
          // A high surrogate must be followed by an escaped low one.
          int low = -1;
          if (consumeWord("\\u"))
            low = parseHex4();
          if (low < 0xDC00 || low > 0xDFFF) {
            fail("unpaired UTF-16 surrogate in a \\u escape");
            return false;
          }
          codepoint = 0x10000 + ((uint32_t(unit) - 0xD800) << 10) + (uint32_t(low) - 0xDC00);
        } else if (unit >= 0xDC00 && unit <= 0xDFFF) {
          fail("unpaired UTF-16 surrogate in a \\u escape");
          return false;
        }
        appendUtf8(codepoint, out);
        break;
      }
      default:
        --pos_;
        fail("bad escape in a string");
        return false;
      }
    }
  }

  JsonValue parseNumber() {
    // The RFC's grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
    const size_t start = pos_;
    auto digits = [&] {
      size_t from = pos_;
      while (!atEnd() && peek() >= '0' && peek() <= '9')
        ++pos_;
      return pos_ - from;
    };
    if (peek() == '-')
      ++pos_;
    if (peek() == '0') {
      ++pos_;
    } else if (digits() == 0) {
      fail("bad number");
      return {};
    }
    bool integral = true;
    if (peek() == '.') {
      ++pos_;
      integral = false;
      if (digits() == 0) {
        fail("bad number: no digits after '.'");
        return {};
      }
    }
    if (peek() == 'e' || peek() == 'E') {
      ++pos_;
      integral = false;
      if (peek() == '+' || peek() == '-')
        ++pos_;
      if (digits() == 0) {
        fail("bad number: no digits in the exponent");
        return {};
      }
    }
    const char *first = text_.data() + start, *last = text_.data() + pos_;
    JsonNumber number;
    // from_chars ignores the locale; a range error leaves the value as is.
    if (std::from_chars(first, last, number.value).ec == std::errc::invalid_argument) {
      fail("bad number");
      return {};
    }
    int64_t integer;
    if (integral && std::from_chars(first, last, integer).ec == std::errc())
      number.integer = integer;
    return JsonValue(number);
  }

  std::string_view text_;
  const std::string &sourceName_;
  size_t pos_ = 0;
  bool failed_ = false;
  std::string error_;
};

} // namespace

ErrorOr<JsonValue> parseJson(std::string_view text, const std::string &sourceName) {
  return Parser(text, sourceName).parseDocument();
}

ErrorOr<JsonValue> parseJsonFile(const std::string &path) {
  auto text = readSmallFile(path, kMaxJsonFileBytes, "JSON file");
  if (!text)
    return text.status();
  return parseJson(*text, path);
}

} // namespace quill
