// jinja2's lexer rules, by hand (see JinjaLexer.h). The comments name the
// jinja2 regular expression each step mirrors.
#include "runtime/chat/JinjaLexer.h"

#include "runtime/chat/JinjaText.h"

#include <algorithm>
#include <cstring>

namespace quill::jinja {
namespace {

struct LexError {
  size_t pos;
  std::string message;
};

class Lexer {
public:
  Lexer(std::string source, const LexerOptions &options)
      : src_(std::move(source)), options_(options) {
    lineStarts_.push_back(0);
    for (size_t i = 0; i < src_.size(); ++i)
      if (src_[i] == '\n')
        lineStarts_.push_back(i + 1);
  }

  std::vector<Token> run() {
    size_t pos = 0;
    while (pos < src_.size())
      pos = lexRoot(pos);
    push(Token::Kind::End, src_.size());
    return std::move(tokens_);
  }

  void locate(size_t pos, int &line, int &column) const {
    auto it = std::upper_bound(lineStarts_.begin(), lineStarts_.end(), pos);
    size_t index = static_cast<size_t>(it - lineStarts_.begin()) - 1;
    line = static_cast<int>(index + 1);
    column = static_cast<int>(pos - lineStarts_[index] + 1);
  }

private:
  bool at(size_t pos, const char *s) const { return src_.compare(pos, std::strlen(s), s) == 0; }

  Token &push(Token::Kind kind, size_t pos, std::string text = "") {
    Token t;
    t.kind = kind;
    t.text = std::move(text);
    locate(pos, t.line, t.column);
    tokens_.push_back(std::move(t));
    return tokens_.back();
  }

  size_t skipSpace(size_t pos) const {
    size_t n = 0;
    while (pos < src_.size() && isPythonSpace(decodeUtf8(src_, pos, n)))
      pos += n;
    return pos;
  }

  /// Template data before a tag, with the tag's whitespace control applied
  /// (jinja2's OptionalLStrip).
  void pushData(size_t begin, size_t end, char sign, bool isVariable) {
    std::string_view text(src_.data() + begin, end - begin);
    if (sign == '-') {
      text = stripText(text, false, true);
    } else if (sign != '+' && options_.lstripBlocks && !isVariable) {
      size_t lineStart = text.rfind('\n');
      lineStart = lineStart == std::string_view::npos ? 0 : lineStart + 1;
      if ((lineStart > 0 || lineStarting_) && lineStart < text.size() &&
          stripText(text.substr(lineStart), true, false).empty())
        text = text.substr(0, lineStart);
    }
    if (!text.empty())
      push(Token::Kind::Data, begin, std::string(text));
  }

  /// The end of a block tag at pos (`+%}`, `-%}\s*`, `%}\n?`), or npos.
  size_t blockEnd(size_t pos) const {
    if (at(pos, "+%}"))
      return pos + 3;
    if (at(pos, "-%}"))
      return skipSpace(pos + 3);
    if (at(pos, "%}")) {
      pos += 2;
      if (options_.trimBlocks && pos < src_.size() && src_[pos] == '\n')
        ++pos;
      return pos;
    }
    return std::string::npos;
  }

  size_t lexRoot(size_t pos) {
    size_t tag = pos;
    for (;; ++tag) {
      tag = src_.find('{', tag);
      if (tag == std::string::npos || tag + 1 >= src_.size()) {
        push(Token::Kind::Data, pos, src_.substr(pos));
        return src_.size();
      }
      char c = src_[tag + 1];
      if (c == '{' || c == '%' || c == '#')
        break;
    }
    char type = src_[tag + 1];
    size_t after = tag + 2;
    char sign = 0;
    if (after < src_.size() && (src_[after] == '-' || src_[after] == '+'))
      sign = src_[after++];
    pushData(pos, tag, sign, type == '{');
    lineStarting_ = false;
    if (type == '#')
      return lexComment(tag, after);
    if (type == '%') {
      size_t word = skipSpace(after);
      if (at(word, "raw")) {
        size_t close = skipSpace(word + 3);
        if (at(close, "-%}"))
          return lexRaw(skipSpace(close + 3));
        if (at(close, "%}"))
          return lexRaw(close + 2);
      }
    }
    push(type == '{' ? Token::Kind::VariableBegin : Token::Kind::BlockBegin, tag);
    return lexTag(after, type == '%', tag);
  }

  size_t lexComment(size_t tag, size_t pos) {
    for (; pos < src_.size(); ++pos) {
      size_t end = std::string::npos;
      if (at(pos, "+#}"))
        end = pos + 3;
      else if (at(pos, "-#}"))
        end = skipSpace(pos + 3);
      else if (at(pos, "#}")) {
        end = pos + 2;
        if (options_.trimBlocks && end < src_.size() && src_[end] == '\n')
          ++end;
      }
      if (end != std::string::npos) {
        lineStarting_ = src_[end - 1] == '\n';
        return end;
      }
    }
    throw LexError{tag, "missing end of comment tag"};
  }

  size_t lexRaw(size_t begin) {
    for (size_t tag = src_.find("{%", begin); tag != std::string::npos;
         tag = src_.find("{%", tag + 1)) {
      size_t p = tag + 2;
      char sign = 0;
      if (p < src_.size() && (src_[p] == '-' || src_[p] == '+'))
        sign = src_[p++];
      p = skipSpace(p);
      if (!at(p, "endraw"))
        continue;
      size_t end = blockEnd(skipSpace(p + 6));
      if (end == std::string::npos)
        continue;
      pushData(begin, tag, sign, false);
      lineStarting_ = src_[end - 1] == '\n';
      return end;
    }
    throw LexError{begin, "missing end of raw directive"};
  }

  /// `(\d+_)*\d+` at pos: its end, or pos when absent.
  size_t digits(size_t pos, int base = 10) const {
    auto isDigit = [&](char c) {
      if (base == 16)
        return std::isxdigit(static_cast<unsigned char>(c)) != 0;
      return c >= '0' && c < '0' + base;
    };
    size_t end = pos;
    while (end < src_.size() && isDigit(src_[end])) {
      ++end;
      if (end + 1 < src_.size() && src_[end] == '_' && isDigit(src_[end + 1]))
        ++end;
    }
    return end;
  }

  static std::string withoutUnderscores(std::string_view s) {
    std::string out;
    for (char c : s)
      if (c != '_')
        out += c;
    return out;
  }

  /// float_re, then integer_re; npos when neither matches.
  size_t lexNumber(size_t pos) {
    size_t intEnd = digits(pos);
    if (intEnd == pos)
      return std::string::npos;
    if (pos == 0 || src_[pos - 1] != '.') {
      size_t end = intEnd;
      bool isFloat = false;
      if (end + 1 < src_.size() && src_[end] == '.' && digits(end + 1) > end + 1) {
        end = digits(end + 1);
        isFloat = true;
      }
      if (end < src_.size() && (src_[end] == 'e' || src_[end] == 'E')) {
        size_t e = end + 1;
        if (e < src_.size() && (src_[e] == '+' || src_[e] == '-'))
          ++e;
        if (digits(e) > e) {
          end = digits(e);
          isFloat = true;
        }
      }
      if (isFloat) {
        Token &t = push(Token::Kind::Float, pos, src_.substr(pos, end - pos));
        t.floatValue = std::strtod(withoutUnderscores(t.text).c_str(), nullptr);
        return end;
      }
    }
    int base = 10;
    size_t start = pos, end = intEnd;
    if (src_[pos] == '0' && pos + 1 < src_.size()) {
      char p = static_cast<char>(std::tolower(static_cast<unsigned char>(src_[pos + 1])));
      base = p == 'b' ? 2 : p == 'o' ? 8 : p == 'x' ? 16 : 10;
      if (base != 10) {
        start = pos + 2;
        if (start < src_.size() && src_[start] == '_')
          ++start;
        end = digits(start, base);
        if (end == start)
          base = 10, start = pos, end = intEnd;
      }
      if (base == 10) { // `0(_?0)*`: a decimal never starts with 0
        end = pos + 1;
        while (end < src_.size() &&
               (src_[end] == '0' ||
                (src_[end] == '_' && end + 1 < src_.size() && src_[end + 1] == '0')))
          ++end;
      }
    }
    Token &t = push(Token::Kind::Int, pos, src_.substr(pos, end - pos));
    errno = 0;
    std::string body = withoutUnderscores(src_.substr(start, end - start));
    unsigned long long v = std::strtoull(body.c_str(), nullptr, base);
    if (errno == ERANGE || v > static_cast<unsigned long long>(INT64_MAX))
      throw LexError{pos, "integer literal too large"};
    t.intValue = static_cast<int64_t>(v);
    return end;
  }

  static int hexValue(char c) {
    if (c >= '0' && c <= '9')
      return c - '0';
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
  }

  /// A quoted literal decoded as Python's unicode-escape does.
  size_t lexString(size_t pos) {
    char quote = src_[pos];
    std::string value;
    size_t i = pos + 1;
    for (; i < src_.size() && src_[i] != quote; ++i) {
      char c = src_[i];
      if (c != '\\' || i + 1 >= src_.size()) {
        value += c;
        continue;
      }
      char e = src_[++i];
      switch (e) {
      case '\n':
        break;
      case '\\':
      case '\'':
      case '"':
        value += e;
        break;
      case 'n':
        value += '\n';
        break;
      case 't':
        value += '\t';
        break;
      case 'r':
        value += '\r';
        break;
      case 'b':
        value += '\b';
        break;
      case 'f':
        value += '\f';
        break;
      case 'v':
        value += '\v';
        break;
      case 'a':
        value += '\a';
        break;
      case 'x':
      case 'u':
      case 'U': {
        int width = e == 'x' ? 2 : e == 'u' ? 4 : 8;
        char32_t cp = 0;
        for (int k = 0; k < width; ++k) {
          int h = i + 1 < src_.size() ? hexValue(src_[i + 1]) : -1;
          if (h < 0)
            throw LexError{i - 1, std::string("truncated \\") + e + " escape"};
          cp = cp * 16 + static_cast<char32_t>(h);
          ++i;
        }
        if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
          throw LexError{i, "illegal Unicode character in escape"};
        appendUtf8(cp, value);
        break;
      }
      default:
        if (e >= '0' && e <= '7') {
          char32_t cp = static_cast<char32_t>(e - '0');
          for (int k = 0; k < 2 && i + 1 < src_.size() && src_[i + 1] >= '0' && src_[i + 1] <= '7';
               ++k)
            cp = cp * 8 + static_cast<char32_t>(src_[++i] - '0');
          appendUtf8(cp, value);
        } else {
          value += '\\';
          value += e;
        }
      }
    }
    if (i >= src_.size())
      throw LexError{pos, "unterminated string literal"};
    push(Token::Kind::String, pos).text = std::move(value);
    return i + 1;
  }

  size_t lexTag(size_t pos, bool block, size_t tagStart) {
    std::vector<char> balance;
    static const char *const kOperators[] = {"//", "**", "==", "!=", ">=", "<=", "+", "-", "/",
                                             "*",  "%",  "~",  "[",  "]",  "(",  ")", "{", "}",
                                             ">",  "<",  "=",  ".",  ":",  "|",  ",", ";"};
    for (;;) {
      if (pos >= src_.size())
        throw LexError{tagStart, std::string("unexpected end of template, expected '") +
                                     (block ? "%}" : "}}") + "'"};
      if (balance.empty()) {
        size_t end = std::string::npos;
        if (block)
          end = blockEnd(pos);
        else if (at(pos, "-}}"))
          end = skipSpace(pos + 3);
        else if (at(pos, "}}"))
          end = pos + 2;
        if (end != std::string::npos) {
          push(block ? Token::Kind::BlockEnd : Token::Kind::VariableEnd, pos);
          lineStarting_ = src_[end - 1] == '\n';
          return end;
        }
      }
      size_t n = 0;
      if (isPythonSpace(decodeUtf8(src_, pos, n))) {
        pos = skipSpace(pos);
        continue;
      }
      unsigned char c = static_cast<unsigned char>(src_[pos]);
      if (std::isdigit(c)) {
        pos = lexNumber(pos);
        continue;
      }
      if (std::isalpha(c) || c == '_' || c >= 0x80) {
        size_t end = pos;
        while (end < src_.size() &&
               (std::isalnum(static_cast<unsigned char>(src_[end])) || src_[end] == '_' ||
                static_cast<unsigned char>(src_[end]) >= 0x80))
          ++end;
        push(Token::Kind::Name, pos, src_.substr(pos, end - pos));
        pos = end;
        continue;
      }
      if (c == '\'' || c == '"') {
        pos = lexString(pos);
        continue;
      }
      const char *op = nullptr;
      for (const char *candidate : kOperators)
        if (at(pos, candidate)) {
          op = candidate;
          break;
        }
      if (!op)
        throw LexError{pos, std::string("unexpected char '") + src_[pos] + "'"};
      char o = op[0];
      if (o == '(' || o == '[' || o == '{') {
        balance.push_back(o == '(' ? ')' : o == '[' ? ']' : '}');
      } else if (op[1] == 0 && (o == ')' || o == ']' || o == '}')) {
        if (balance.empty())
          throw LexError{pos, std::string("unexpected '") + o + "'"};
        if (balance.back() != o)
          throw LexError{pos,
                         std::string("unexpected '") + o + "', expected '" + balance.back() + "'"};
        balance.pop_back();
      }
      push(Token::Kind::Operator, pos, op);
      pos += std::strlen(op);
    }
  }

  std::string src_;
  LexerOptions options_;
  std::vector<size_t> lineStarts_;
  std::vector<Token> tokens_;
  bool lineStarting_ = true;
};

} // namespace

ErrorOr<std::vector<Token>> tokenize(std::string_view source, const LexerOptions &options) {
  // jinja2 reads \r\n, \r and \n as line breaks, writes them as \n, and
  // (keep_trailing_newline=False) drops one trailing newline.
  std::string normalized;
  normalized.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      normalized += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n')
        ++i;
    } else {
      normalized += source[i];
    }
  }
  if (!options.keepTrailingNewline && !normalized.empty() && normalized.back() == '\n')
    normalized.pop_back();
  Lexer lexer(std::move(normalized), options);
  try {
    return lexer.run();
  } catch (const LexError &e) {
    int line = 0, column = 0;
    lexer.locate(e.pos, line, column);
    return Status::error("line " + std::to_string(line) + ", column " + std::to_string(column) +
                         ": " + e.message);
  }
}

} // namespace quill::jinja
