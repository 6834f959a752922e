// The token cursor and the expression half of the template parser: jinja2's
// parse_condexpr down to parse_primary, with its operator precedence. The
// statement parser (JinjaParser.cpp) builds on it. Internal to QuillChat.
#pragma once

#include "runtime/chat/JinjaAst.h"
#include "runtime/chat/JinjaLexer.h"

#include <string>
#include <vector>

namespace quill::jinja {

/// Deeper expression nesting than this is refused (the parser recurses).
constexpr int kMaxNesting = 400;

struct ParseError {
  int line, column;
  std::string message;
};

/// Tokens with a read position and the checks every parse step uses.
class TokenStream {
public:
  explicit TokenStream(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}

protected:
  using K = Token::Kind;

  const Token &cur() const { return tokens_[pos_]; }
  const Token &peek(size_t k = 1) const { return tokens_[std::min(pos_ + k, tokens_.size() - 1)]; }
  void advance() {
    if (pos_ + 1 < tokens_.size())
      ++pos_;
  }
  [[noreturn]] void fail(const Token &t, std::string message) const {
    throw ParseError{t.line, t.column, std::move(message)};
  }
  static std::string describe(const Token &t) {
    switch (t.kind) {
    case K::Data:
      return "template data";
    case K::VariableBegin:
      return "begin of print statement";
    case K::VariableEnd:
      return "end of print statement";
    case K::BlockBegin:
      return "begin of statement block";
    case K::BlockEnd:
      return "end of statement block";
    case K::String:
      return "string";
    case K::Int:
    case K::Float:
      return t.text;
    case K::End:
      return "end of template";
    default:
      return t.text;
    }
  }
  bool isOp(const char *op) const { return cur().kind == K::Operator && cur().text == op; }
  bool isName(const char *name) const { return cur().kind == K::Name && cur().text == name; }
  bool skipOp(const char *op) {
    if (!isOp(op))
      return false;
    advance();
    return true;
  }
  bool skipName(const char *name) {
    if (!isName(name))
      return false;
    advance();
    return true;
  }
  void expectOp(const char *op) {
    if (!skipOp(op))
      fail(cur(), std::string("expected '") + op + "', got '" + describe(cur()) + "'");
  }
  std::string expectName() {
    if (cur().kind != K::Name)
      fail(cur(), "expected a name, got '" + describe(cur()) + "'");
    std::string name = cur().text;
    advance();
    return name;
  }

  ExprPtr node(Expr::Kind kind, const Token &at) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->line = at.line;
    e->column = at.column;
    return e;
  }

  std::vector<Token> tokens_;
  size_t pos_ = 0;
};

/// Expressions, from a ternary down to literals, names and postfix forms.
class ExpressionParser : public TokenStream {
public:
  using TokenStream::TokenStream;

protected:
  struct Depth {
    explicit Depth(ExpressionParser &p) : p(p) {
      if (++p.depth_ > kMaxNesting)
        p.fail(p.cur(), "expression nested too deeply");
    }
    ~Depth() { --p.depth_; }
    ExpressionParser &p;
  };

  bool isTupleEnd(const char *extraEnd) const;
  /// Comma-separated expressions: a Tuple unless there is one and no comma.
  ExprPtr parseTuple(bool withCondexpr, const char *extraEnd = nullptr,
                     bool explicitParens = false);
  ExprPtr parseExpression();
  ExprPtr binary(Expr::Kind kind, const Token &t, ExprPtr l, ExprPtr r, std::string op = "");
  ExprPtr parseOr();
  ExprPtr parseAnd();
  ExprPtr parseNot();
  ExprPtr parseCompare();
  ExprPtr parseMath1();
  ExprPtr parseConcat();
  ExprPtr parseMath2();
  ExprPtr parsePow();
  ExprPtr parseUnary(bool withFilter);
  ExprPtr parsePrimary();
  ExprPtr parsePostfix(ExprPtr e);
  ExprPtr parseSubscribed();
  void parseCallArgs(Expr &call);
  ExprPtr parseCall(ExprPtr callee);
  /// `name[.name](args)` after a `|`; args[0] is left null for the subject.
  ExprPtr parseFilterCall(const Token &at);
  ExprPtr parseFilterExpr(ExprPtr e);

  int depth_ = 0;
};

} // namespace quill::jinja
