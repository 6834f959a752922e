// A recursive-descent parser mirroring jinja2's Parser: statements by tag
// name, expressions from parse_condexpr down to parse_primary.
#include "runtime/chat/JinjaParser.h"

#include <algorithm>

namespace quill::jinja {
namespace {

struct ParseError {
  int line, column;
  std::string message;
};

/// Deeper expression nesting than this is refused (the parser recurses).
constexpr int kMaxNesting = 400;

class Parser {
public:
  explicit Parser(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}

  Body parseAll() {
    Body body = parseBody({}, nullptr);
    return body;
  }

private:
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
  void expectBlockEnd() {
    if (cur().kind != K::BlockEnd)
      fail(cur(), "expected end of statement block, got '" + describe(cur()) + "'");
    advance();
  }

  ExprPtr node(Expr::Kind kind, const Token &at) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->line = at.line;
    e->column = at.column;
    return e;
  }
  StmtPtr stmt(Stmt::Kind kind, const Token &at) {
    auto s = std::make_unique<Stmt>();
    s->kind = kind;
    s->line = at.line;
    s->column = at.column;
    return s;
  }

  // ---- statements ----

  /// Statements up to `{% <one of endTags>`, which is left unread (the
  /// position is on its name). `opener` is the tag that opened the block.
  Body parseBody(const std::vector<std::string> &endTags, const Token *opener) {
    Body body;
    for (;;) {
      const Token &t = cur();
      if (t.kind == K::Data) {
        auto s = stmt(Stmt::Kind::Text, t);
        s->text = t.text;
        body.push_back(std::move(s));
        advance();
      } else if (t.kind == K::VariableBegin) {
        advance();
        auto s = stmt(Stmt::Kind::Output, t);
        s->expr = parseTuple(true);
        if (cur().kind != K::VariableEnd)
          fail(cur(), "expected end of print statement, got '" + describe(cur()) + "'");
        advance();
        body.push_back(std::move(s));
      } else if (t.kind == K::BlockBegin) {
        const Token &name = peek();
        if (name.kind == K::Name &&
            std::find(endTags.begin(), endTags.end(), name.text) != endTags.end()) {
          advance();
          return body;
        }
        if (name.kind == K::Name && opener &&
            (name.text.rfind("end", 0) == 0 || name.text == "else" || name.text == "elif"))
          fail(name, "unexpected '" + name.text + "', " + expected(endTags, *opener));
        advance();
        body.push_back(parseStatement(t));
      } else if (t.kind == K::End) {
        if (opener)
          fail(t, "unexpected end of template, " + expected(endTags, *opener));
        return body;
      } else {
        fail(t, "unexpected '" + describe(t) + "'");
      }
    }
  }

  static std::string expected(const std::vector<std::string> &tags, const Token &opener) {
    std::string list;
    for (size_t i = 0; i < tags.size(); ++i)
      list += (i == 0 ? "" : i + 1 == tags.size() ? " or " : ", ") + ("'" + tags[i] + "'");
    return "expected " + list + " to close the '" + opener.text + "' from line " +
           std::to_string(opener.line);
  }

  StmtPtr parseStatement(const Token &begin) {
    const Token &tag = cur();
    if (tag.kind != K::Name)
      fail(tag, "tag name expected");
    std::string name = tag.text;
    advance();
    if (name == "if")
      return parseIf(tag);
    if (name == "for")
      return parseFor(tag);
    if (name == "set")
      return parseSet(tag);
    if (name == "macro")
      return parseMacro(tag);
    if (name == "break" || name == "continue") {
      if (loopDepth_ == 0)
        fail(tag, "'" + name + "' outside of a loop");
      expectBlockEnd();
      return stmt(name == "break" ? Stmt::Kind::Break : Stmt::Kind::Continue, tag);
    }
    if (name == "generation" || name == "with") {
      auto s = stmt(Stmt::Kind::Scope, tag);
      s->newScope = true;
      if (name == "with") {
        while (cur().kind != K::BlockEnd) {
          if (!s->params.empty())
            expectOp(",");
          std::string target = expectName();
          expectOp("=");
          s->params.emplace_back(target, parseExpression());
        }
      }
      expectBlockEnd();
      s->body = parseBody({"end" + name}, &tag);
      advance();
      expectBlockEnd();
      return s;
    }
    if (name == "filter") {
      auto s = stmt(Stmt::Kind::FilterBlock, tag);
      do
        s->filters.push_back(parseFilterCall(tag));
      while (skipOp("|"));
      expectBlockEnd();
      s->body = parseBody({"endfilter"}, &tag);
      advance();
      expectBlockEnd();
      return s;
    }
    (void)begin;
    static const char *const kUnsupported[] = {"call",    "include", "import",     "from",
                                               "extends", "block",   "autoescape", "print"};
    for (const char *u : kUnsupported)
      if (name == u)
        fail(tag, "the '" + name + "' tag is not supported in chat templates");
    fail(tag, "unknown tag '" + name + "'");
  }

  StmtPtr parseIf(const Token &tag) {
    auto s = stmt(Stmt::Kind::If, tag);
    ExprPtr condition = parseTuple(true);
    for (;;) {
      expectBlockEnd();
      Body body = parseBody({"elif", "else", "endif"}, &tag);
      s->branches.emplace_back(std::move(condition), std::move(body));
      std::string which = cur().text;
      advance();
      if (which == "elif") {
        condition = parseTuple(true);
        continue;
      }
      if (which == "else") {
        expectBlockEnd();
        s->elseBody = parseBody({"endif"}, &tag);
        advance();
      }
      expectBlockEnd();
      return s;
    }
  }

  std::vector<std::string> parseTargets() {
    std::vector<std::string> names;
    bool parens = skipOp("(");
    do {
      if (parens && isOp(")"))
        break;
      names.push_back(expectName());
    } while (skipOp(","));
    if (parens)
      expectOp(")");
    return names;
  }

  StmtPtr parseFor(const Token &tag) {
    auto s = stmt(Stmt::Kind::For, tag);
    s->targets = parseTargets();
    if (!skipName("in"))
      fail(cur(), "expected 'in', got '" + describe(cur()) + "'");
    s->expr = parseTuple(false, "recursive");
    if (skipName("if"))
      s->condition = parseExpression();
    if (isName("recursive"))
      fail(cur(), "recursive loops are not supported");
    expectBlockEnd();
    ++loopDepth_;
    s->body = parseBody({"endfor", "else"}, &tag);
    --loopDepth_;
    if (cur().text == "else") {
      advance();
      expectBlockEnd();
      s->elseBody = parseBody({"endfor"}, &tag);
    }
    advance();
    expectBlockEnd();
    return s;
  }

  StmtPtr parseSet(const Token &tag) {
    if (cur().kind == K::Name && peek().kind == K::Operator && peek().text == "." &&
        peek(2).kind == K::Name) {
      auto s = stmt(Stmt::Kind::Set, tag);
      s->attributeTarget = true;
      s->targets.push_back(expectName());
      advance();
      s->targets.push_back(expectName());
      expectOp("=");
      s->expr = parseTuple(true);
      expectBlockEnd();
      return s;
    }
    std::vector<std::string> targets = parseTargets();
    if (skipOp("=")) {
      auto s = stmt(Stmt::Kind::Set, tag);
      s->targets = std::move(targets);
      s->expr = parseTuple(true);
      expectBlockEnd();
      return s;
    }
    if (targets.size() != 1)
      fail(cur(), "expected '='");
    auto s = stmt(Stmt::Kind::SetBlock, tag);
    s->targets = std::move(targets);
    while (skipOp("|"))
      s->filters.push_back(parseFilterCall(tag));
    expectBlockEnd();
    s->body = parseBody({"endset"}, &tag);
    advance();
    expectBlockEnd();
    return s;
  }

  StmtPtr parseMacro(const Token &tag) {
    auto s = stmt(Stmt::Kind::Macro, tag);
    s->text = expectName();
    expectOp("(");
    while (!skipOp(")")) {
      if (!s->params.empty())
        expectOp(",");
      if (skipOp(")"))
        break;
      std::string param = expectName();
      ExprPtr def;
      if (skipOp("="))
        def = parseExpression();
      s->params.emplace_back(param, std::move(def));
    }
    expectBlockEnd();
    int savedLoops = loopDepth_;
    loopDepth_ = 0;
    s->body = parseBody({"endmacro"}, &tag);
    loopDepth_ = savedLoops;
    advance();
    if (cur().kind == K::Name)
      advance(); // {% endmacro name %}
    expectBlockEnd();
    return s;
  }

  // ---- expressions ----

  struct Depth {
    explicit Depth(Parser &p) : p(p) {
      if (++p.depth_ > kMaxNesting)
        p.fail(p.cur(), "expression nested too deeply");
    }
    ~Depth() { --p.depth_; }
    Parser &p;
  };

  bool isTupleEnd(const char *extraEnd) const {
    if (cur().kind == K::VariableEnd || cur().kind == K::BlockEnd || isOp(")"))
      return true;
    return extraEnd && isName(extraEnd);
  }

  ExprPtr parseTuple(bool withCondexpr, const char *extraEnd = nullptr,
                     bool explicitParens = false) {
    const Token &start = cur();
    std::vector<ExprPtr> items;
    bool isTuple = false;
    for (;;) {
      if (!items.empty())
        expectOp(",");
      if (isTupleEnd(extraEnd))
        break;
      items.push_back(withCondexpr ? parseExpression() : parseOr());
      if (isOp(","))
        isTuple = true;
      else
        break;
    }
    if (!isTuple) {
      if (!items.empty())
        return std::move(items[0]);
      if (!explicitParens)
        fail(cur(), "expected an expression, got '" + describe(cur()) + "'");
    }
    auto e = node(Expr::Kind::Tuple, start);
    e->args = std::move(items);
    return e;
  }

  ExprPtr parseExpression() {
    Depth d(*this);
    ExprPtr expr = parseOr();
    while (isName("if")) {
      const Token &t = cur();
      advance();
      auto cond = node(Expr::Kind::Cond, t);
      cond->args.push_back(parseOr());
      cond->args.push_back(std::move(expr));
      cond->args.push_back(skipName("else") ? parseExpression() : nullptr);
      expr = std::move(cond);
    }
    return expr;
  }

  ExprPtr binary(Expr::Kind kind, const Token &t, ExprPtr l, ExprPtr r, std::string op = "") {
    auto e = node(kind, t);
    e->name = std::move(op);
    e->args.push_back(std::move(l));
    e->args.push_back(std::move(r));
    return e;
  }

  ExprPtr parseOr() {
    ExprPtr left = parseAnd();
    while (isName("or")) {
      const Token &t = cur();
      advance();
      left = binary(Expr::Kind::Or, t, std::move(left), parseAnd());
    }
    return left;
  }

  ExprPtr parseAnd() {
    ExprPtr left = parseNot();
    while (isName("and")) {
      const Token &t = cur();
      advance();
      left = binary(Expr::Kind::And, t, std::move(left), parseNot());
    }
    return left;
  }

  ExprPtr parseNot() {
    Depth d(*this);
    if (isName("not")) {
      auto e = node(Expr::Kind::Not, cur());
      advance();
      e->args.push_back(parseNot());
      return e;
    }
    return parseCompare();
  }

  ExprPtr parseCompare() {
    const Token &start = cur();
    ExprPtr first = parseMath1();
    ExprPtr cmp;
    for (;;) {
      std::string op;
      if (cur().kind == K::Operator &&
          (cur().text == "==" || cur().text == "!=" || cur().text == "<" || cur().text == "<=" ||
           cur().text == ">" || cur().text == ">=")) {
        op = cur().text;
        advance();
      } else if (skipName("in")) {
        op = "in";
      } else if (isName("not") && peek().kind == K::Name && peek().text == "in") {
        advance();
        advance();
        op = "notin";
      } else {
        break;
      }
      if (!cmp) {
        cmp = node(Expr::Kind::Compare, start);
        cmp->args.push_back(std::move(first));
      }
      cmp->ops.push_back(op);
      cmp->args.push_back(parseMath1());
    }
    return cmp ? std::move(cmp) : std::move(first);
  }

  ExprPtr parseMath1() {
    ExprPtr left = parseConcat();
    while (isOp("+") || isOp("-")) {
      const Token &t = cur();
      advance();
      left = binary(Expr::Kind::Binary, t, std::move(left), parseConcat(), t.text);
    }
    return left;
  }

  ExprPtr parseConcat() {
    const Token &start = cur();
    ExprPtr first = parseMath2();
    if (!isOp("~"))
      return first;
    auto e = node(Expr::Kind::Concat, start);
    e->args.push_back(std::move(first));
    while (skipOp("~"))
      e->args.push_back(parseMath2());
    return e;
  }

  ExprPtr parseMath2() {
    ExprPtr left = parsePow();
    while (isOp("*") || isOp("/") || isOp("//") || isOp("%")) {
      const Token &t = cur();
      advance();
      left = binary(Expr::Kind::Binary, t, std::move(left), parsePow(), t.text);
    }
    return left;
  }

  ExprPtr parsePow() {
    ExprPtr left = parseUnary(true);
    while (isOp("**")) {
      const Token &t = cur();
      advance();
      left = binary(Expr::Kind::Binary, t, std::move(left), parseUnary(true), "**");
    }
    return left;
  }

  ExprPtr parseUnary(bool withFilter) {
    Depth d(*this);
    ExprPtr e;
    if (isOp("-") || isOp("+")) {
      e = node(Expr::Kind::Unary, cur());
      e->name = cur().text;
      advance();
      e->args.push_back(parseUnary(false));
    } else {
      e = parsePrimary();
    }
    e = parsePostfix(std::move(e));
    if (withFilter)
      e = parseFilterExpr(std::move(e));
    return e;
  }

  ExprPtr parsePrimary() {
    Depth d(*this);
    const Token &t = cur();
    if (t.kind == K::Name) {
      advance();
      auto e = node(Expr::Kind::Literal, t);
      if (t.text == "true" || t.text == "True")
        e->literal = Value(true);
      else if (t.text == "false" || t.text == "False")
        e->literal = Value(false);
      else if (t.text == "none" || t.text == "None")
        e->literal = Value::none();
      else {
        e->kind = Expr::Kind::Name;
        e->name = t.text;
      }
      return e;
    }
    if (t.kind == K::String) {
      auto e = node(Expr::Kind::Literal, t);
      std::string s;
      while (cur().kind == K::String) {
        s += cur().text;
        advance();
      }
      e->literal = Value(std::move(s));
      return e;
    }
    if (t.kind == K::Int || t.kind == K::Float) {
      auto e = node(Expr::Kind::Literal, t);
      e->literal = t.kind == K::Int ? Value(t.intValue) : Value(t.floatValue);
      advance();
      return e;
    }
    if (skipOp("(")) {
      ExprPtr e = parseTuple(true, nullptr, true);
      expectOp(")");
      return e;
    }
    if (isOp("[")) {
      auto e = node(Expr::Kind::List, t);
      advance();
      while (!skipOp("]")) {
        if (!e->args.empty())
          expectOp(",");
        if (skipOp("]"))
          break;
        e->args.push_back(parseExpression());
      }
      return e;
    }
    if (isOp("{")) {
      auto e = node(Expr::Kind::Dict, t);
      advance();
      while (!skipOp("}")) {
        if (!e->args.empty())
          expectOp(",");
        if (skipOp("}"))
          break;
        e->args.push_back(parseExpression());
        expectOp(":");
        e->args.push_back(parseExpression());
      }
      return e;
    }
    fail(t, "unexpected '" + describe(t) + "'");
  }

  ExprPtr parsePostfix(ExprPtr e) {
    for (;;) {
      const Token &t = cur();
      if (skipOp(".")) {
        if (cur().kind == K::Name) {
          auto g = node(Expr::Kind::GetAttr, t);
          g->name = cur().text;
          advance();
          g->args.push_back(std::move(e));
          e = std::move(g);
        } else if (cur().kind == K::Int) {
          auto g = node(Expr::Kind::GetItem, t);
          auto index = node(Expr::Kind::Literal, cur());
          index->literal = Value(cur().intValue);
          advance();
          g->args.push_back(std::move(e));
          g->args.push_back(std::move(index));
          e = std::move(g);
        } else {
          fail(cur(), "expected name or number");
        }
      } else if (skipOp("[")) {
        auto g = node(Expr::Kind::GetItem, t);
        g->args.push_back(std::move(e));
        std::vector<ExprPtr> subs;
        while (!isOp("]")) {
          if (!subs.empty())
            expectOp(",");
          subs.push_back(parseSubscribed());
        }
        expectOp("]");
        if (subs.empty())
          fail(t, "expected subscript expression");
        if (subs.size() == 1) {
          g->args.push_back(std::move(subs[0]));
        } else {
          auto tuple = node(Expr::Kind::Tuple, t);
          tuple->args = std::move(subs);
          g->args.push_back(std::move(tuple));
        }
        e = std::move(g);
      } else if (isOp("(")) {
        e = parseCall(std::move(e));
      } else {
        return e;
      }
    }
  }

  ExprPtr parseSubscribed() {
    const Token &t = cur();
    ExprPtr first;
    if (!isOp(":")) {
      first = parseExpression();
      if (!isOp(":"))
        return first;
    }
    auto slice = node(Expr::Kind::Slice, t);
    advance(); // ':'
    slice->args.push_back(std::move(first));
    slice->args.push_back(isOp("]") || isOp(",") || isOp(":") ? nullptr : parseExpression());
    ExprPtr step;
    if (skipOp(":") && !isOp("]") && !isOp(","))
      step = parseExpression();
    slice->args.push_back(std::move(step));
    return slice;
  }

  void parseCallArgs(Expr &call) {
    expectOp("(");
    bool first = true;
    while (!skipOp(")")) {
      if (!first)
        expectOp(",");
      first = false;
      if (skipOp(")"))
        break;
      if (isOp("*") || isOp("**"))
        fail(cur(), "*args and **kwargs in calls are not supported");
      if (cur().kind == K::Name && peek().kind == K::Operator && peek().text == "=") {
        std::string key = cur().text;
        advance();
        advance();
        call.keywords.emplace_back(key, parseExpression());
      } else {
        if (!call.keywords.empty())
          fail(cur(), "positional argument after a keyword argument");
        call.args.push_back(parseExpression());
      }
    }
  }

  ExprPtr parseCall(ExprPtr callee) {
    auto call = node(Expr::Kind::Call, cur());
    call->args.push_back(std::move(callee));
    parseCallArgs(*call);
    return call;
  }

  /// `name[.name](args)` after a `|`; args[0] is left null for the subject.
  ExprPtr parseFilterCall(const Token &at) {
    auto f = node(Expr::Kind::Filter, cur().kind == K::Name ? cur() : at);
    f->name = expectName();
    while (isOp(".") && peek().kind == K::Name) {
      advance();
      f->name += "." + expectName();
    }
    f->args.push_back(nullptr);
    if (isOp("("))
      parseCallArgs(*f);
    return f;
  }

  ExprPtr parseFilterExpr(ExprPtr e) {
    for (;;) {
      if (isOp("|")) {
        const Token &bar = cur();
        advance();
        ExprPtr f = parseFilterCall(bar);
        f->args[0] = std::move(e);
        e = std::move(f);
      } else if (isName("is")) {
        auto test = node(Expr::Kind::Test, cur());
        advance();
        test->negated = skipName("not");
        test->name = expectName();
        while (isOp(".") && peek().kind == K::Name) {
          advance();
          test->name += "." + expectName();
        }
        test->args.push_back(std::move(e));
        if (isOp("(")) {
          parseCallArgs(*test);
        } else if ((cur().kind == K::Name || cur().kind == K::String || cur().kind == K::Int ||
                    cur().kind == K::Float || isOp("(") || isOp("[") || isOp("{")) &&
                   !isName("else") && !isName("or") && !isName("and")) {
          if (isName("is"))
            fail(cur(), "you cannot chain multiple tests with is");
          test->args.push_back(parsePostfix(parsePrimary()));
        }
        e = std::move(test);
      } else if (isOp("(")) {
        e = parseCall(std::move(e));
      } else {
        return e;
      }
    }
  }

  std::vector<Token> tokens_;
  size_t pos_ = 0;
  int depth_ = 0;
  int loopDepth_ = 0;
};

} // namespace

ErrorOr<Body> parseTemplate(std::string_view source, const LexerOptions &options) {
  auto tokens = tokenize(source, options);
  if (!tokens)
    return tokens.status();
  Parser parser(tokens.take());
  try {
    return parser.parseAll();
  } catch (const ParseError &e) {
    return Status::error("line " + std::to_string(e.line) + ", column " + std::to_string(e.column) +
                         ": " + e.message);
  }
}

} // namespace quill::jinja
