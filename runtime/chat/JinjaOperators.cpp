// Python's operators on template values: arithmetic, comparison, `in`,
// iteration, len(), and jinja2's getattr/getitem/slicing.
#include "runtime/chat/JinjaInterpreter.h"
#include "runtime/chat/JinjaText.h"

#include <cmath>

namespace quill::jinja {

Value Interpreter::getAttr(const Value &object, const std::string &name) {
  if (object.isUndefined())
    failUndefined(object);
  if (object.isNamespace()) {
    if (Value *v = object.asNamespace().find(name))
      return *v;
  } else {
    Value method = getMethod(*this, object, name);
    if (!method.isUndefined() || !method.undefinedHint().empty())
      return method;
    if (object.isDict())
      if (const Value *v = object.asDict().find(std::string_view(name)))
        return *v;
  }
  return Value::undefined("'" + object.typeName() + "' has no attribute '" + name + "'");
}

static bool pythonIndex(int64_t index, int64_t size, int64_t &out) {
  if (index < 0)
    index += size;
  if (index < 0 || index >= size)
    return false;
  out = index;
  return true;
}

Value Interpreter::getItem(const Value &object, const Value &key) {
  if (object.isUndefined())
    failUndefined(object);
  if (object.isDict()) {
    if (const Value *v = object.asDict().find(key))
      return *v;
  } else if ((object.isList() || object.isString()) && (key.isInt() || key.isBool())) {
    int64_t i = 0;
    if (object.isList()) {
      if (pythonIndex(key.asInt(), static_cast<int64_t>(object.items().size()), i))
        return object.items()[static_cast<size_t>(i)];
    } else {
      std::vector<size_t> offsets = codePointOffsets(object.asString());
      if (pythonIndex(key.asInt(), static_cast<int64_t>(offsets.size()) - 1, i))
        return Value(object.asString().substr(offsets[i], offsets[i + 1] - offsets[i]));
    }
  }
  if (key.isString()) {
    Value v = getAttr(object, key.asString());
    if (!v.isUndefined())
      return v;
    return Value::undefined("'" + object.typeName() + "' has no attribute '" + key.asString() +
                            "'");
  }
  return Value::undefined(object.typeName() + " has no element " + key.repr());
}

/// Python's slice.indices(): normalized start, stop, step for a length.
static void sliceIndices(Interpreter &interp, const Value &startV, const Value &stopV,
                         const Value &stepV, int64_t length, int64_t &start, int64_t &stop,
                         int64_t &step) {
  auto asIndex = [&](const Value &v) {
    if (!v.isInt() && !v.isBool())
      interp.fail("slice indices must be integers or None");
    return v.asInt();
  };
  step = stepV.isNone() ? 1 : asIndex(stepV);
  if (step == 0)
    interp.fail("slice step cannot be zero");
  auto clamp = [&](const Value &v, int64_t fallback) {
    if (v.isNone())
      return fallback;
    int64_t i = asIndex(v);
    if (i < 0) {
      i += length;
      if (i < 0)
        i = step < 0 ? -1 : 0;
    } else if (i >= length) {
      i = step < 0 ? length - 1 : length;
    }
    return i;
  };
  start = clamp(startV, step < 0 ? length - 1 : 0);
  stop = clamp(stopV, step < 0 ? -1 : length);
}

Value Interpreter::slice(const Value &object, const Expr &sliceExpr) {
  Value parts[3];
  for (int i = 0; i < 3; ++i)
    parts[i] = sliceExpr.args[i] ? eval(*sliceExpr.args[i]) : Value::none();
  if (object.isUndefined())
    failUndefined(object);
  if (!object.isList() && !object.isString())
    fail("'" + object.pythonTypeName() + "' object is not subscriptable");
  std::vector<size_t> offsets;
  int64_t length;
  if (object.isList()) {
    length = static_cast<int64_t>(object.items().size());
  } else {
    offsets = codePointOffsets(object.asString());
    length = static_cast<int64_t>(offsets.size()) - 1;
  }
  int64_t start, stop, step;
  sliceIndices(*this, parts[0], parts[1], parts[2], length, start, stop, step);
  std::vector<Value> items;
  std::string text;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
    if (object.isList())
      items.push_back(object.items()[static_cast<size_t>(i)]);
    else
      text.append(object.asString(), offsets[i], offsets[i + 1] - offsets[i]);
  }
  if (object.isString())
    return Value(std::move(text));
  return Value::list(std::move(items), object.isTuple());
}

std::vector<Value> Interpreter::iterate(const Value &v) {
  switch (v.kind()) {
  case Value::Kind::Undefined:
    return {};
  case Value::Kind::List:
    return v.items();
  case Value::Kind::Dict: {
    std::vector<Value> keys;
    for (const auto &entry : v.asDict().entries)
      keys.push_back(entry.first);
    return keys;
  }
  case Value::Kind::String: {
    std::vector<Value> chars;
    const std::string &s = v.asString();
    for (size_t i = 0, n = 0; i < s.size(); i += n) {
      decodeUtf8(s, i, n);
      chars.emplace_back(s.substr(i, n));
    }
    return chars;
  }
  default:
    fail("'" + v.pythonTypeName() + "' object is not iterable");
  }
}

int64_t Interpreter::length(const Value &v) {
  switch (v.kind()) {
  case Value::Kind::Undefined:
    return 0;
  case Value::Kind::String:
    return static_cast<int64_t>(codePointCount(v.asString()));
  case Value::Kind::List:
    return static_cast<int64_t>(v.items().size());
  case Value::Kind::Dict:
    return static_cast<int64_t>(v.asDict().entries.size());
  default:
    fail("object of type '" + v.pythonTypeName() + "' has no len()");
  }
}

bool Interpreter::less(const Value &a, const Value &b) {
  if (a.isUndefined())
    failUndefined(a);
  if (b.isUndefined())
    failUndefined(b);
  if (a.isNumber() && b.isNumber()) {
    if (a.isFloat() || b.isFloat())
      return a.asFloat() < b.asFloat();
    return a.asInt() < b.asInt();
  }
  if (a.isString() && b.isString())
    return a.asString() < b.asString(); // UTF-8 byte order is code point order
  if (a.isList() && b.isList() && a.isTuple() == b.isTuple()) {
    const auto &x = a.items(), &y = b.items();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i)
      if (!x[i].equals(y[i]))
        return less(x[i], y[i]);
    return x.size() < y.size();
  }
  fail("'<' not supported between instances of '" + a.pythonTypeName() + "' and '" +
       b.pythonTypeName() + "'");
}

bool Interpreter::contains(const Value &container, const Value &item) {
  switch (container.kind()) {
  case Value::Kind::Undefined:
    return false;
  case Value::Kind::String:
    if (!item.isString())
      fail("'in <string>' requires string as left operand, not " + item.pythonTypeName());
    return container.asString().find(item.asString()) != std::string::npos;
  case Value::Kind::List:
    for (const Value &v : container.items())
      if (v.equals(item))
        return true;
    return false;
  case Value::Kind::Dict:
    return container.asDict().find(item) != nullptr;
  default:
    fail("argument of type '" + container.pythonTypeName() + "' is not iterable");
  }
}

static Value repeat(Interpreter &interp, const Value &seq, int64_t times) {
  if (times <= 0)
    return seq.isString() ? Value("") : Value::list({}, seq.isTuple());
  size_t unit = seq.isString() ? seq.asString().size() : seq.items().size() * sizeof(Value);
  if (unit && static_cast<uint64_t>(times) > (64ull << 30) / unit)
    interp.checkSize(SIZE_MAX);
  interp.checkSize(unit * static_cast<size_t>(times));
  if (seq.isString()) {
    std::string s;
    for (int64_t i = 0; i < times; ++i)
      s += seq.asString();
    return Value(std::move(s));
  }
  std::vector<Value> items;
  for (int64_t i = 0; i < times; ++i)
    items.insert(items.end(), seq.items().begin(), seq.items().end());
  return Value::list(std::move(items), seq.isTuple());
}

Value Interpreter::binary(const std::string &op, const Value &a, const Value &b) {
  if (a.isUndefined())
    failUndefined(a);
  if (b.isUndefined())
    failUndefined(b);
  auto unsupported = [&]() {
    fail("unsupported operand type(s) for " + op + ": '" + a.pythonTypeName() + "' and '" +
         b.pythonTypeName() + "'");
  };
  bool numbers = a.isNumber() && b.isNumber();
  bool floats = numbers && (a.isFloat() || b.isFloat());
  int64_t x = a.asInt(), y = b.asInt(), r = 0;
  if (op == "+") {
    if (floats)
      return Value(a.asFloat() + b.asFloat());
    if (numbers) {
      if (__builtin_add_overflow(x, y, &r))
        fail("integer overflow");
      return Value(r);
    }
    if (a.isString() && b.isString()) {
      checkSize(a.asString().size() + b.asString().size());
      return Value(a.asString() + b.asString());
    }
    if (a.isList() && b.isList() && a.isTuple() == b.isTuple()) {
      std::vector<Value> items = a.items();
      items.insert(items.end(), b.items().begin(), b.items().end());
      return Value::list(std::move(items), a.isTuple());
    }
    if (a.isString() || a.isList())
      fail("can only concatenate " + a.pythonTypeName() + " (not \"" + b.pythonTypeName() +
           "\") to " + a.pythonTypeName());
    unsupported();
  }
  if (op == "*") {
    if (floats)
      return Value(a.asFloat() * b.asFloat());
    if (numbers) {
      if (__builtin_mul_overflow(x, y, &r))
        fail("integer overflow");
      return Value(r);
    }
    if ((a.isString() || a.isList()) && (b.isInt() || b.isBool()))
      return repeat(*this, a, y);
    if ((b.isString() || b.isList()) && (a.isInt() || a.isBool()))
      return repeat(*this, b, x);
    unsupported();
  }
  if (op == "%" && a.isString()) {
    CallArgs args{b.isTuple() ? b.items() : std::vector<Value>{b}, {}};
    return applyFilter(*this, "format", a, args);
  }
  if (!numbers)
    unsupported();
  if (op == "-") {
    if (floats)
      return Value(a.asFloat() - b.asFloat());
    if (__builtin_sub_overflow(x, y, &r))
      fail("integer overflow");
    return Value(r);
  }
  if (op == "/") {
    if (b.asFloat() == 0)
      fail("division by zero");
    return Value(a.asFloat() / b.asFloat());
  }
  if (op == "//" || op == "%") {
    if (floats) {
      double p = a.asFloat(), q = b.asFloat();
      if (q == 0)
        fail(op == "//" ? "float floor division by zero" : "float modulo");
      double m = std::fmod(p, q);
      if (m != 0 && ((m < 0) != (q < 0)))
        m += q;
      return op == "%" ? Value(m) : Value(std::floor((p - m) / q + 0.5));
    }
    if (y == 0)
      fail(op == "//" ? "integer division or modulo by zero" : "integer modulo by zero");
    if (x == INT64_MIN && y == -1)
      fail("integer overflow");
    int64_t q = x / y, m = x % y;
    if (m != 0 && ((m < 0) != (y < 0))) {
      q -= 1;
      m += y;
    }
    return op == "%" ? Value(m) : Value(q);
  }
  if (op == "**") {
    if (floats || y < 0) {
      if (a.asFloat() == 0 && b.asFloat() < 0)
        fail("0.0 cannot be raised to a negative power");
      return Value(std::pow(a.asFloat(), b.asFloat()));
    }
    int64_t result = 1, base = x;
    for (int64_t e = y; e > 0; e >>= 1) {
      if ((e & 1) && __builtin_mul_overflow(result, base, &result))
        fail("integer overflow");
      if (e > 1 && __builtin_mul_overflow(base, base, &base))
        fail("integer overflow");
    }
    return Value(result);
  }
  fail("unknown operator " + op);
}

} // namespace quill::jinja
