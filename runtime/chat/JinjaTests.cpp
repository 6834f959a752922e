// jinja2's builtin tests (`x is name(args)`).
#include "runtime/chat/JinjaInterpreter.h"
#include "runtime/chat/JinjaText.h"

#include <cmath>
#include <map>

namespace quill::jinja {
namespace {

using Test = bool (*)(Interpreter &, const Value &, CallArgs &);

const Value &argument(Interpreter &interp, CallArgs &args, const char *test) {
  if (args.positional.empty())
    interp.fail(std::string("the '") + test + "' test needs an argument");
  return args.positional[0];
}

bool tDefined(Interpreter &, const Value &v, CallArgs &) { return !v.isUndefined(); }
bool tUndefined(Interpreter &, const Value &v, CallArgs &) { return v.isUndefined(); }
bool tNone(Interpreter &, const Value &v, CallArgs &) { return v.isNone(); }
bool tBoolean(Interpreter &, const Value &v, CallArgs &) { return v.isBool(); }
bool tTrue(Interpreter &, const Value &v, CallArgs &) { return v.isBool() && v.asBool(); }
bool tFalse(Interpreter &, const Value &v, CallArgs &) { return v.isBool() && !v.asBool(); }
bool tInteger(Interpreter &, const Value &v, CallArgs &) { return v.isInt(); }
bool tFloat(Interpreter &, const Value &v, CallArgs &) { return v.isFloat(); }
bool tNumber(Interpreter &, const Value &v, CallArgs &) { return v.isNumber(); }
bool tString(Interpreter &, const Value &v, CallArgs &) { return v.isString(); }
bool tMapping(Interpreter &, const Value &v, CallArgs &) { return v.isDict(); }
// jinja2's Undefined defines __call__ (it raises), so it counts as callable.
bool tCallable(Interpreter &, const Value &v, CallArgs &) {
  return v.isFunction() || v.isUndefined();
}
bool tIterable(Interpreter &, const Value &v, CallArgs &) {
  return v.isUndefined() || v.isString() || v.isList() || v.isDict();
}
bool tSequence(Interpreter &, const Value &v, CallArgs &) {
  return v.isUndefined() || v.isString() || v.isList() || v.isDict();
}
bool tLower(Interpreter &, const Value &v, CallArgs &) {
  return v.isString() && toLower(v.asString()) == v.asString() &&
         toUpper(v.asString()) != v.asString();
}
bool tUpper(Interpreter &, const Value &v, CallArgs &) {
  return v.isString() && toUpper(v.asString()) == v.asString() &&
         toLower(v.asString()) != v.asString();
}

int64_t integerOf(Interpreter &interp, const Value &v, const char *test) {
  if (v.isUndefined())
    interp.failUndefined(v);
  if (!v.isNumber())
    interp.fail(std::string("the '") + test + "' test needs a number, not " + v.pythonTypeName());
  return v.isFloat() ? static_cast<int64_t>(v.asFloat()) : v.asInt();
}

bool tEven(Interpreter &interp, const Value &v, CallArgs &) {
  if (v.isFloat())
    return std::fmod(v.asFloat(), 2.0) == 0;
  return integerOf(interp, v, "even") % 2 == 0;
}
bool tOdd(Interpreter &interp, const Value &v, CallArgs &) {
  if (v.isFloat())
    return std::fabs(std::fmod(v.asFloat(), 2.0)) == 1;
  return integerOf(interp, v, "odd") % 2 != 0;
}
bool tDivisibleby(Interpreter &interp, const Value &v, CallArgs &args) {
  const Value &d = argument(interp, args, "divisibleby");
  Value r = interp.binary("%", v, d);
  return !r.truthy();
}
bool tEq(Interpreter &interp, const Value &v, CallArgs &a) {
  return v.equals(argument(interp, a, "eq"));
}
bool tNe(Interpreter &interp, const Value &v, CallArgs &a) {
  return !v.equals(argument(interp, a, "ne"));
}
bool tLt(Interpreter &interp, const Value &v, CallArgs &a) {
  return interp.less(v, argument(interp, a, "lt"));
}
bool tLe(Interpreter &interp, const Value &v, CallArgs &a) {
  return !interp.less(argument(interp, a, "le"), v);
}
bool tGt(Interpreter &interp, const Value &v, CallArgs &a) {
  return interp.less(argument(interp, a, "gt"), v);
}
bool tGe(Interpreter &interp, const Value &v, CallArgs &a) {
  return !interp.less(v, argument(interp, a, "ge"));
}
bool tIn(Interpreter &interp, const Value &v, CallArgs &a) {
  return interp.contains(argument(interp, a, "in"), v);
}
bool tSameas(Interpreter &interp, const Value &v, CallArgs &a) {
  // Python's `is`: identity. None, booleans and numbers compare by value;
  // containers built separately are never the same object.
  const Value &other = argument(interp, a, "sameas");
  if (v.kind() != other.kind() || v.isList() || v.isDict())
    return false;
  return v.equals(other);
}
bool tFilter(Interpreter &, const Value &v, CallArgs &) {
  return v.isString() && hasFilter(v.asString());
}
bool tTest(Interpreter &, const Value &v, CallArgs &) {
  return v.isString() && hasTest(v.asString());
}
bool tEscaped(Interpreter &, const Value &, CallArgs &) { return false; }

const std::map<std::string, Test> &tests() {
  static const std::map<std::string, Test> table = {
      {"defined", tDefined},
      {"undefined", tUndefined},
      {"none", tNone},
      {"boolean", tBoolean},
      {"true", tTrue},
      {"false", tFalse},
      {"integer", tInteger},
      {"float", tFloat},
      {"number", tNumber},
      {"string", tString},
      {"mapping", tMapping},
      {"callable", tCallable},
      {"iterable", tIterable},
      {"sequence", tSequence},
      {"lower", tLower},
      {"upper", tUpper},
      {"even", tEven},
      {"odd", tOdd},
      {"divisibleby", tDivisibleby},
      {"eq", tEq},
      {"equalto", tEq},
      {"==", tEq},
      {"ne", tNe},
      {"!=", tNe},
      {"lt", tLt},
      {"lessthan", tLt},
      {"<", tLt},
      {"le", tLe},
      {"<=", tLe},
      {"gt", tGt},
      {"greaterthan", tGt},
      {">", tGt},
      {"ge", tGe},
      {">=", tGe},
      {"in", tIn},
      {"sameas", tSameas},
      {"filter", tFilter},
      {"test", tTest},
      {"escaped", tEscaped},
  };
  return table;
}

} // namespace

bool hasTest(const std::string &name) { return tests().count(name) != 0; }

bool applyTest(Interpreter &interp, const std::string &name, const Value &subject, CallArgs &args) {
  auto it = tests().find(name);
  if (it == tests().end())
    interp.fail("no test named '" + name + "'");
  return it->second(interp, subject, args);
}

} // namespace quill::jinja
