// The number filters (abs, int, float, round) and printf-style format, with
// Python's conversion and rounding rules.
#include "runtime/chat/JinjaFilterSet.h"
#include "runtime/chat/JinjaText.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>

namespace quill::jinja {

Value filterAbs(Interpreter &interp, const Value &v, CallArgs &) {
  if (!v.isNumber())
    interp.fail("bad operand type for abs(): '" + v.pythonTypeName() + "'");
  if (v.isFloat())
    return Value(std::fabs(v.asFloat()));
  if (v.asInt() == INT64_MIN)
    interp.fail("integer overflow");
  return Value(v.asInt() < 0 ? -v.asInt() : v.asInt());
}

/// Python's float(x) on a value: false when it does not convert.
static bool parseFloat(const Value &v, double &out) {
  if (v.isNumber()) {
    out = v.asFloat();
    return true;
  }
  if (!v.isString())
    return false;
  std::string s(stripText(v.asString(), true, true));
  s.erase(std::remove(s.begin(), s.end(), '_'), s.end());
  if (s.empty() || s.find_first_of("xXpP") != std::string::npos)
    return false;
  char *end = nullptr;
  out = std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size();
}

/// Python's int(str, base).
static bool parseInt(const std::string &text, int base, int64_t &out) {
  std::string s(stripText(text, true, true));
  bool negative = false;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    negative = s[0] == '-';
    s.erase(0, 1);
  }
  if (s.size() > 1 && s[0] == '0' && std::isalpha(static_cast<unsigned char>(s[1]))) {
    char p = static_cast<char>(std::tolower(static_cast<unsigned char>(s[1])));
    int prefixBase = p == 'x' ? 16 : p == 'o' ? 8 : p == 'b' ? 2 : 0;
    if (prefixBase && (base == 0 || base == prefixBase)) {
      base = prefixBase;
      s.erase(0, 2);
      if (!s.empty() && s[0] == '_')
        s.erase(0, 1);
    }
  }
  if (base == 0)
    base = 10;
  if (s.empty() || s.front() == '_' || s.back() == '_' || s.find("__") != std::string::npos)
    return false;
  s.erase(std::remove(s.begin(), s.end(), '_'), s.end());
  errno = 0;
  char *end = nullptr;
  long long v = std::strtoll(s.c_str(), &end, base);
  if (errno == ERANGE || end != s.c_str() + s.size() ||
      !std::isalnum(static_cast<unsigned char>(s[0])))
    return false;
  out = negative ? -v : v;
  return true;
}

Value filterInt(Interpreter &interp, const Value &v, CallArgs &args) {
  ArgBinder a(interp, "int", args, {"default", "base"});
  int base = a.has(1) ? static_cast<int>(a[1].asInt()) : 10;
  int64_t i = 0;
  if (v.isInt() || v.isBool())
    return Value(v.asInt());
  if (v.isString() && parseInt(v.asString(), base, i))
    return Value(i);
  double d = 0;
  if (parseFloat(v, d)) {
    if (std::isinf(d))
      interp.fail("cannot convert float infinity to integer");
    if (!std::isnan(d) && std::fabs(d) < 9.2e18)
      return Value(static_cast<int64_t>(std::trunc(d)));
  }
  return a.get(0, Value(0));
}

Value filterFloat(Interpreter &interp, const Value &v, CallArgs &args) {
  ArgBinder a(interp, "float", args, {"default"});
  double d = 0;
  return parseFloat(v, d) ? Value(d) : a.get(0, Value(0.0));
}

Value filterRound(Interpreter &interp, const Value &v, CallArgs &args) {
  ArgBinder a(interp, "round", args, {"precision", "method"});
  int64_t precision = a.has(0) ? a[0].asInt() : 0;
  std::string method = a.has(1) ? a[1].str() : "common";
  if (!v.isNumber())
    interp.fail("type " + v.pythonTypeName() + " doesn't define __round__ method");
  precision = std::clamp<int64_t>(precision, -300, 300);
  if (method == "common") {
    if (!v.isFloat() && precision >= 0)
      return Value(v.asInt());
    // printf rounds the exact binary value half-to-even, as Python's round.
    char buf[512];
    std::snprintf(buf, sizeof buf, "%.*f", static_cast<int>(std::max<int64_t>(precision, 0)),
                  v.asFloat());
    return Value(std::strtod(buf, nullptr));
  }
  double scale = std::pow(10.0, static_cast<double>(precision));
  if (method == "floor")
    return Value(std::floor(v.asFloat() * scale) / scale);
  if (method == "ceil")
    return Value(std::ceil(v.asFloat() * scale) / scale);
  interp.fail("method must be 'common', 'ceil' or 'floor'");
}

Value filterFormat(Interpreter &interp, const Value &v, CallArgs &args) {
  std::string f = v.str(), out;
  size_t next = 0;
  for (size_t i = 0; i < f.size(); ++i) {
    if (f[i] != '%') {
      out += f[i];
      continue;
    }
    size_t j = i + 1;
    while (j < f.size() && std::strchr("-+ #0123456789.", f[j]))
      ++j;
    if (j >= f.size())
      interp.fail("incomplete format");
    char conv = f[j];
    std::string spec = f.substr(i, j - i);
    i = j;
    if (conv == '%') {
      out += '%';
      continue;
    }
    if (next >= args.positional.size())
      interp.fail("not enough arguments for format string");
    const Value &x = args.positional[next++];
    char buf[512];
    if (conv == 's' || conv == 'r') {
      std::snprintf(buf, sizeof buf, (spec + "s").c_str(),
                    (conv == 's' ? x.str() : x.repr()).c_str());
      out += spec.size() == 1 ? (conv == 's' ? x.str() : x.repr()) : std::string(buf);
    } else if (conv == 'd' || conv == 'i' || conv == 'x' || conv == 'X' || conv == 'o') {
      if (!x.isNumber())
        interp.fail("%" + std::string(1, conv) + " format: a real number is required, not " +
                    x.pythonTypeName());
      std::snprintf(buf, sizeof buf,
                    (spec + "ll" + std::string(1, conv == 'i' ? 'd' : conv)).c_str(),
                    static_cast<long long>(x.isFloat() ? std::trunc(x.asFloat()) : x.asInt()));
      out += buf;
    } else if (std::strchr("feEgG", conv)) {
      if (!x.isNumber())
        interp.fail("must be real number, not " + x.pythonTypeName());
      std::snprintf(buf, sizeof buf, (spec + conv).c_str(), x.asFloat());
      out += buf;
    } else {
      interp.fail(std::string("unsupported format character '") + conv + "'");
    }
  }
  if (next < args.positional.size())
    interp.fail("not all arguments converted during string formatting");
  return Value(std::move(out));
}

} // namespace quill::jinja
