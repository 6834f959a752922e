// The values a Jinja template computes with, modelled on the Python objects
// jinja2 sees: undefined, None, bool, int, float, str, list/tuple, dict (in
// insertion order), callables (builtins, bound methods, macros) and mutable
// namespace objects. Lists and dicts are shared and never mutated after they
// are built (HF renders in an ImmutableSandboxedEnvironment); namespaces are
// shared and mutable, as Python objects are.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace quill::jinja {

class Value;
class Interpreter;

/// A render-time error: the interpreter's internal signal, turned into an
/// ErrorOr at the ChatTemplate boundary (it never leaves the library).
class TemplateError : public std::runtime_error {
public:
  explicit TemplateError(const std::string &message) : std::runtime_error(message) {}
};

/// Positional and keyword arguments of a call.
struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keywords;
};

using NativeFunction = std::function<Value(Interpreter &, CallArgs &)>;

struct ListObject;
struct DictObject;
struct FunctionObject;
struct NamespaceObject;

/// One template value. Cheap to copy: containers are shared.
class Value {
public:
  enum class Kind { Undefined, None, Bool, Int, Float, String, List, Dict, Function, Namespace };

  Value() = default; ///< Undefined.
  static Value undefined(std::string hint = "") {
    Value v;
    v.str_ = std::move(hint);
    return v;
  }
  static Value none() { return withKind(Kind::None); }
  Value(bool b) : kind_(Kind::Bool), int_(b) {}
  Value(int i) : kind_(Kind::Int), int_(i) {}
  Value(int64_t i) : kind_(Kind::Int), int_(i) {}
  Value(double d) : kind_(Kind::Float), float_(d) {}
  Value(std::string s) : kind_(Kind::String), str_(std::move(s)) {}
  Value(const char *s) : kind_(Kind::String), str_(s) {}
  static Value list(std::vector<Value> items, bool tuple = false);
  static Value dict(std::vector<std::pair<Value, Value>> entries);
  static Value function(std::string name, NativeFunction fn);
  static Value ns(std::vector<std::pair<std::string, Value>> attrs, std::string typeName);

  Kind kind() const { return kind_; }
  bool isUndefined() const { return kind_ == Kind::Undefined; }
  bool isNone() const { return kind_ == Kind::None; }
  bool isBool() const { return kind_ == Kind::Bool; }
  bool isInt() const { return kind_ == Kind::Int; }
  bool isFloat() const { return kind_ == Kind::Float; }
  /// int, float or bool (Python's bool is an int).
  bool isNumber() const { return isInt() || isFloat() || isBool(); }
  bool isString() const { return kind_ == Kind::String; }
  bool isList() const { return kind_ == Kind::List; }
  bool isTuple() const;
  bool isDict() const { return kind_ == Kind::Dict; }
  bool isFunction() const { return kind_ == Kind::Function; }
  bool isNamespace() const { return kind_ == Kind::Namespace; }

  bool asBool() const { return int_ != 0; }
  int64_t asInt() const { return int_; } ///< For Int and Bool.
  double asFloat() const { return isFloat() ? float_ : static_cast<double>(int_); }
  const std::string &asString() const { return str_; }
  /// Why it is undefined, as jinja2's UndefinedError says it.
  const std::string &undefinedHint() const { return str_; }
  const std::vector<Value> &items() const;  ///< List or tuple.
  const DictObject &asDict() const;         ///< Dict.
  const FunctionObject &asFunction() const; ///< Function.
  NamespaceObject &asNamespace() const;     ///< Namespace.
  /// The namespace object, shared (Namespace only).
  std::shared_ptr<NamespaceObject> sharedNamespace() const;

  /// Python's bool(x).
  bool truthy() const;
  /// Python's str(x); undefined prints as "".
  std::string str() const;
  /// Python's repr(x) (used inside str() of containers); a namespace that
  /// contains itself prints as `{...}` there, as Python's does.
  std::string repr() const;
  /// How deeply containers nest inside this value (0 for a scalar).
  int depth() const;
  /// Python's `==` (1 == 1.0 == True; containers compared deeply).
  bool equals(const Value &other) const;
  /// jinja2's name for the type in messages: "dict object", "str object", ...
  std::string typeName() const;
  /// Python's type name: "dict", "str", "int", "NoneType", ...
  std::string pythonTypeName() const;

private:
  std::string reprInside(std::vector<const void *> &active) const;
  static Value withKind(Kind k) {
    Value v;
    v.kind_ = k;
    return v;
  }
  Kind kind_ = Kind::Undefined;
  int64_t int_ = 0;
  double float_ = 0;
  std::string str_;
  std::shared_ptr<void> object_;
};

/// Containers nest at most this deep: deeper ones are refused when built,
/// so printing, comparing and freeing values cannot exhaust the stack.
constexpr int kMaxValueDepth = 512;

struct ListObject {
  std::vector<Value> items;
  bool tuple = false;
  int depth = 1;
};

struct DictObject {
  std::vector<std::pair<Value, Value>> entries;
  int depth = 1;
  /// The value for `key`, or nullptr.
  const Value *find(const Value &key) const;
  const Value *find(std::string_view key) const;
};

struct FunctionObject {
  std::string name;
  NativeFunction fn;
};

struct NamespaceObject {
  std::vector<std::pair<std::string, Value>> attrs;
  std::string typeName; ///< "Namespace", or "LoopContext" (read-only).
  int depth = 1;
  bool tracked = false; ///< Known to the interpreter's cycle breaker.
  Value *find(std::string_view name);
  void set(const std::string &name, Value value);
};

/// Python's repr of a float: the shortest text that reads back the same
/// double, as Python writes it ("1.0", "1e+16", "0.30000000000000004").
std::string formatPythonFloat(double d);
/// Python's repr of a str: quoted, with Python's escapes.
std::string pythonStringRepr(std::string_view s);

} // namespace quill::jinja
