// Python semantics of the template values: truthiness, str/repr, equality.
#include "runtime/chat/JinjaValue.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace quill::jinja {

/// 1 + the deepest of `values`; refused past kMaxValueDepth.
template <typename Range, typename Get> static int nestedDepth(const Range &values, Get get) {
  int deepest = 0;
  for (const auto &x : values)
    deepest = std::max(deepest, get(x).depth());
  if (deepest + 1 > kMaxValueDepth)
    throw TemplateError("value nested too deeply (more than " + std::to_string(kMaxValueDepth) +
                        " levels)");
  return deepest + 1;
}

int Value::depth() const {
  switch (kind_) {
  case Kind::List:
    return static_cast<ListObject *>(object_.get())->depth;
  case Kind::Dict:
    return asDict().depth;
  case Kind::Namespace:
    return asNamespace().depth;
  default:
    return 0;
  }
}

Value Value::list(std::vector<Value> items, bool tuple) {
  Value v = withKind(Kind::List);
  auto object = std::make_shared<ListObject>();
  object->depth = nestedDepth(items, [](const Value &x) -> const Value & { return x; });
  object->items = std::move(items);
  object->tuple = tuple;
  v.object_ = std::move(object);
  return v;
}

Value Value::dict(std::vector<std::pair<Value, Value>> entries) {
  Value v = withKind(Kind::Dict);
  auto object = std::make_shared<DictObject>();
  object->depth = nestedDepth(entries, [](const auto &e) -> const Value & { return e.second; });
  object->entries = std::move(entries);
  v.object_ = std::move(object);
  return v;
}

Value Value::function(std::string name, NativeFunction fn) {
  Value v = withKind(Kind::Function);
  v.object_ = std::make_shared<FunctionObject>(FunctionObject{std::move(name), std::move(fn)});
  return v;
}

Value Value::ns(std::vector<std::pair<std::string, Value>> attrs, std::string typeName) {
  Value v = withKind(Kind::Namespace);
  v.object_ =
      std::make_shared<NamespaceObject>(NamespaceObject{std::move(attrs), std::move(typeName)});
  return v;
}

bool Value::isTuple() const { return isList() && static_cast<ListObject *>(object_.get())->tuple; }
const std::vector<Value> &Value::items() const {
  return static_cast<ListObject *>(object_.get())->items;
}
std::shared_ptr<NamespaceObject> Value::sharedNamespace() const {
  return std::static_pointer_cast<NamespaceObject>(object_);
}
const DictObject &Value::asDict() const { return *static_cast<DictObject *>(object_.get()); }
const FunctionObject &Value::asFunction() const {
  return *static_cast<FunctionObject *>(object_.get());
}
NamespaceObject &Value::asNamespace() const {
  return *static_cast<NamespaceObject *>(object_.get());
}

const Value *DictObject::find(const Value &key) const {
  for (const auto &[k, v] : entries)
    if (k.equals(key))
      return &v;
  return nullptr;
}

const Value *DictObject::find(std::string_view key) const {
  for (const auto &[k, v] : entries)
    if (k.isString() && k.asString() == key)
      return &v;
  return nullptr;
}

Value *NamespaceObject::find(std::string_view name) {
  for (auto &[k, v] : attrs)
    if (k == name)
      return &v;
  return nullptr;
}

void NamespaceObject::set(const std::string &name, Value value) {
  if (value.depth() + 1 > kMaxValueDepth)
    throw TemplateError("value nested too deeply (more than " + std::to_string(kMaxValueDepth) +
                        " levels)");
  depth = std::max(depth, value.depth() + 1);
  if (Value *slot = find(name))
    *slot = std::move(value);
  else
    attrs.emplace_back(name, std::move(value));
}

bool Value::truthy() const {
  switch (kind_) {
  case Kind::Undefined:
  case Kind::None:
    return false;
  case Kind::Bool:
  case Kind::Int:
    return int_ != 0;
  case Kind::Float:
    return float_ != 0;
  case Kind::String:
    return !str_.empty();
  case Kind::List:
    return !items().empty();
  case Kind::Dict:
    return !asDict().entries.empty();
  case Kind::Function:
  case Kind::Namespace:
    return true;
  }
  return false;
}

std::string formatPythonFloat(double d) {
  if (std::isnan(d))
    return "nan";
  if (std::isinf(d))
    return d < 0 ? "-inf" : "inf";
  // The shortest round-trip digits, then Python's layout of them: fixed
  // notation for exponents in [-4, 16), scientific otherwise.
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  bool negative = sci[0] == '-';
  if (negative)
    sci.erase(0, 1);
  size_t e = sci.find('e');
  std::string digits = sci.substr(0, e);
  int exponent = std::atoi(sci.c_str() + e + 1);
  digits.erase(std::remove(digits.begin(), digits.end(), '.'), digits.end());
  std::string out = negative ? "-" : "";
  int n = static_cast<int>(digits.size());
  if (exponent >= -4 && exponent < 16) {
    if (exponent < 0) {
      out += "0." + std::string(-exponent - 1, '0') + digits;
    } else if (exponent + 1 >= n) {
      out += digits + std::string(exponent + 1 - n, '0') + ".0";
    } else {
      out += digits.substr(0, exponent + 1) + "." + digits.substr(exponent + 1);
    }
    return out;
  }
  out += digits.substr(0, 1);
  if (n > 1)
    out += "." + digits.substr(1);
  char exp[16];
  std::snprintf(exp, sizeof exp, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
  return out + exp;
}

std::string pythonStringRepr(std::string_view s) {
  char quote = (s.find('\'') != std::string_view::npos && s.find('"') == std::string_view::npos)
                   ? '"'
                   : '\'';
  std::string out(1, quote);
  for (unsigned char c : s) {
    if (c == '\\')
      out += "\\\\";
    else if (c == static_cast<unsigned char>(quote))
      out += std::string("\\") + quote;
    else if (c == '\n')
      out += "\\n";
    else if (c == '\r')
      out += "\\r";
    else if (c == '\t')
      out += "\\t";
    else if (c < 0x20 || c == 0x7f) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    } else
      out += static_cast<char>(c);
  }
  return out + quote;
}

std::string Value::str() const {
  switch (kind_) {
  case Kind::Undefined:
    return "";
  case Kind::String:
    return str_;
  default:
    return repr();
  }
}

std::string Value::repr() const {
  std::vector<const void *> active;
  return reprInside(active);
}

std::string Value::reprInside(std::vector<const void *> &active) const {
  bool container = isList() || isDict() || isNamespace();
  if (container && std::find(active.begin(), active.end(), object_.get()) != active.end())
    return isList() ? "[...]" : isDict() ? "{...}" : "<" + asNamespace().typeName + " {...}>";
  if (container)
    active.push_back(object_.get());
  struct Pop {
    std::vector<const void *> &active;
    bool container;
    ~Pop() {
      if (container)
        active.pop_back();
    }
  } pop{active, container};
  switch (kind_) {
  case Kind::Undefined:
    return "Undefined";
  case Kind::None:
    return "None";
  case Kind::Bool:
    return int_ ? "True" : "False";
  case Kind::Int:
    return std::to_string(int_);
  case Kind::Float:
    return formatPythonFloat(float_);
  case Kind::String:
    return pythonStringRepr(str_);
  case Kind::List: {
    const auto &xs = items();
    std::string out = isTuple() ? "(" : "[";
    for (size_t i = 0; i < xs.size(); ++i)
      out += (i ? ", " : "") + xs[i].reprInside(active);
    if (isTuple() && xs.size() == 1)
      out += ",";
    return out + (isTuple() ? ")" : "]");
  }
  case Kind::Dict: {
    std::string out = "{";
    bool first = true;
    for (const auto &[k, v] : asDict().entries) {
      out += (first ? "" : ", ") + k.reprInside(active) + ": " + v.reprInside(active);
      first = false;
    }
    return out + "}";
  }
  case Kind::Function:
    return "<function " + asFunction().name + ">";
  case Kind::Namespace: {
    std::string out = "<" + asNamespace().typeName + " {";
    bool first = true;
    for (const auto &[k, v] : asNamespace().attrs) {
      out += (first ? "" : ", ") + pythonStringRepr(k) + ": " + v.reprInside(active);
      first = false;
    }
    return out + "}>";
  }
  }
  return "";
}

bool Value::equals(const Value &other) const {
  if (isNumber() && other.isNumber()) {
    if (isFloat() || other.isFloat())
      return asFloat() == other.asFloat();
    return int_ == other.int_;
  }
  if (kind_ != other.kind_)
    return false;
  switch (kind_) {
  case Kind::Undefined:
  case Kind::None:
    return true;
  case Kind::String:
    return str_ == other.str_;
  case Kind::List: {
    if (isTuple() != other.isTuple())
      return false;
    const auto &a = items(), &b = other.items();
    if (a.size() != b.size())
      return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (!a[i].equals(b[i]))
        return false;
    return true;
  }
  case Kind::Dict: {
    const auto &a = asDict().entries;
    const auto &b = other.asDict();
    if (a.size() != b.entries.size())
      return false;
    for (const auto &[k, v] : a) {
      const Value *w = b.find(k);
      if (!w || !v.equals(*w))
        return false;
    }
    return true;
  }
  default:
    return object_ == other.object_;
  }
}

std::string Value::pythonTypeName() const {
  switch (kind_) {
  case Kind::Undefined:
    return "Undefined";
  case Kind::None:
    return "NoneType";
  case Kind::Bool:
    return "bool";
  case Kind::Int:
    return "int";
  case Kind::Float:
    return "float";
  case Kind::String:
    return "str";
  case Kind::List:
    return isTuple() ? "tuple" : "list";
  case Kind::Dict:
    return "dict";
  case Kind::Function:
    return "function";
  case Kind::Namespace:
    return asNamespace().typeName;
  }
  return "object";
}

std::string Value::typeName() const {
  if (isNone())
    return "None";
  return pythonTypeName() + " object";
}

} // namespace quill::jinja
