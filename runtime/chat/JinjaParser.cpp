// The statement half of the template parser, mirroring jinja2's Parser:
// statements by tag name over the expression parser (JinjaExpressionParser.h).
#include "runtime/chat/JinjaParser.h"

#include "runtime/chat/JinjaExpressionParser.h"

#include <algorithm>

namespace quill::jinja {
namespace {

bool mentions(const Expr *e, const std::string &name) {
  if (!e)
    return false;
  if (e->kind == Expr::Kind::Name && e->name == name)
    return true;
  for (const auto &a : e->args)
    if (mentions(a.get(), name))
      return true;
  for (const auto &[k, a] : e->keywords)
    if (mentions(a.get(), name))
      return true;
  return false;
}

/// Whether any statement of `body` (nested ones too) reads variable `name`.
bool mentions(const Body &body, const std::string &name) {
  for (const auto &s : body) {
    if (mentions(s->expr.get(), name) || mentions(s->condition.get(), name) ||
        mentions(s->body, name) || mentions(s->elseBody, name))
      return true;
    for (const auto &f : s->filters)
      if (mentions(f.get(), name))
        return true;
    for (const auto &[k, e] : s->params)
      if (mentions(e.get(), name))
        return true;
    for (const auto &[c, b] : s->branches)
      if (mentions(c.get(), name) || mentions(b, name))
        return true;
  }
  return false;
}

class Parser : public ExpressionParser {
public:
  using ExpressionParser::ExpressionParser;

  Body parseAll() {
    Body body = parseBody({}, nullptr);
    return body;
  }

private:
  void expectBlockEnd() {
    if (cur().kind != K::BlockEnd)
      fail(cur(), "expected end of statement block, got '" + describe(cur()) + "'");
    advance();
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
    s->usesLoop = mentions(s->body, "loop");
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
