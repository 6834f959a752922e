// The expression half of the template parser (see JinjaExpressionParser.h).
#include "runtime/chat/JinjaExpressionParser.h"

namespace quill::jinja {

bool ExpressionParser::isTupleEnd(const char *extraEnd) const {
  if (cur().kind == K::VariableEnd || cur().kind == K::BlockEnd || isOp(")"))
    return true;
  return extraEnd && isName(extraEnd);
}

ExprPtr ExpressionParser::parseTuple(bool withCondexpr, const char *extraEnd, bool explicitParens) {
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

ExprPtr ExpressionParser::parseExpression() {
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

ExprPtr ExpressionParser::binary(Expr::Kind kind, const Token &t, ExprPtr l, ExprPtr r,
                                 std::string op) {
  auto e = node(kind, t);
  e->name = std::move(op);
  e->args.push_back(std::move(l));
  e->args.push_back(std::move(r));
  return e;
}

ExprPtr ExpressionParser::parseOr() {
  ExprPtr left = parseAnd();
  while (isName("or")) {
    const Token &t = cur();
    advance();
    left = binary(Expr::Kind::Or, t, std::move(left), parseAnd());
  }
  return left;
}

ExprPtr ExpressionParser::parseAnd() {
  ExprPtr left = parseNot();
  while (isName("and")) {
    const Token &t = cur();
    advance();
    left = binary(Expr::Kind::And, t, std::move(left), parseNot());
  }
  return left;
}

ExprPtr ExpressionParser::parseNot() {
  Depth d(*this);
  if (isName("not")) {
    auto e = node(Expr::Kind::Not, cur());
    advance();
    e->args.push_back(parseNot());
    return e;
  }
  return parseCompare();
}

ExprPtr ExpressionParser::parseCompare() {
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

ExprPtr ExpressionParser::parseMath1() {
  ExprPtr left = parseConcat();
  while (isOp("+") || isOp("-")) {
    const Token &t = cur();
    advance();
    left = binary(Expr::Kind::Binary, t, std::move(left), parseConcat(), t.text);
  }
  return left;
}

ExprPtr ExpressionParser::parseConcat() {
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

ExprPtr ExpressionParser::parseMath2() {
  ExprPtr left = parsePow();
  while (isOp("*") || isOp("/") || isOp("//") || isOp("%")) {
    const Token &t = cur();
    advance();
    left = binary(Expr::Kind::Binary, t, std::move(left), parsePow(), t.text);
  }
  return left;
}

ExprPtr ExpressionParser::parsePow() {
  ExprPtr left = parseUnary(true);
  while (isOp("**")) {
    const Token &t = cur();
    advance();
    left = binary(Expr::Kind::Binary, t, std::move(left), parseUnary(true), "**");
  }
  return left;
}

ExprPtr ExpressionParser::parseUnary(bool withFilter) {
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

ExprPtr ExpressionParser::parsePrimary() {
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

ExprPtr ExpressionParser::parsePostfix(ExprPtr e) {
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

ExprPtr ExpressionParser::parseSubscribed() {
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

void ExpressionParser::parseCallArgs(Expr &call) {
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

ExprPtr ExpressionParser::parseCall(ExprPtr callee) {
  auto call = node(Expr::Kind::Call, cur());
  call->args.push_back(std::move(callee));
  parseCallArgs(*call);
  return call;
}

ExprPtr ExpressionParser::parseFilterCall(const Token &at) {
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

ExprPtr ExpressionParser::parseFilterExpr(ExprPtr e) {
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

} // namespace quill::jinja
