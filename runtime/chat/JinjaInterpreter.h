// Renders a parsed template: statements, expressions, scopes, macros and
// loops with jinja2's semantics. Filters, tests and methods live in their own
// files (JinjaFilters.cpp, JinjaTests.cpp, JinjaMethods.cpp) and reach the
// interpreter through this interface.
//
// Errors inside a render are TemplateError exceptions; ChatTemplate turns
// them into ErrorOr values, so none leaves the library.
#pragma once

#include "runtime/chat/JinjaAst.h"

#include <ctime>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace quill::jinja {

/// Bounds that keep a hostile or buggy template from hanging or exhausting
/// memory; crossing one is a clear render error.
struct RenderLimits {
  size_t maxOutputBytes = 64u << 20; ///< Also bounds any one string built.
  int maxCallDepth = 200;            ///< Nested macro calls.
  uint64_t maxSteps = 5'000'000;     ///< Statements plus loop iterations (~1 s).
};

/// Variables of one scope, in definition order.
struct Scope {
  std::vector<std::pair<std::string, Value>> vars;
  std::shared_ptr<Scope> parent;
  bool tracked = false; ///< Known to the interpreter's cycle breaker.
  Value *find(const std::string &name);
  void set(const std::string &name, Value value);
};

class Interpreter {
public:
  Interpreter(const Body &program, RenderLimits limits);

  /// Renders the program with `variables` as the template's globals.
  /// Throws TemplateError, its message "line N: ...".
  std::string render(const std::vector<std::pair<std::string, Value>> &variables);

  /// strftime_now's clock: a fixed time (UTC) for reproducible output, or
  /// the local time now when unset.
  std::optional<std::time_t> fixedNow;

  // ---- for filters, tests and methods ----
  [[noreturn]] void fail(const std::string &message) const;
  /// jinja2's getattr: attribute (methods) first, then item.
  Value getAttr(const Value &object, const std::string &name);
  /// jinja2's getitem: item first, then attribute.
  Value getItem(const Value &object, const Value &key);
  Value call(const Value &callee, CallArgs &args);
  /// The items a for loop visits: a list's items, a dict's keys, a
  /// string's characters; nothing for undefined.
  std::vector<Value> iterate(const Value &v);
  /// Python's len().
  int64_t length(const Value &v);
  /// Python's `a < b` (numbers, strings, sequences).
  bool less(const Value &a, const Value &b);
  bool contains(const Value &container, const Value &item);
  Value binary(const std::string &op, const Value &a, const Value &b);
  /// Refuses a string longer than the output limit.
  void checkSize(size_t bytes) const;
  /// A user-facing error for using an undefined value.
  [[noreturn]] void failUndefined(const Value &v) const;

private:
  enum class Flow { Normal, Break, Continue };
  Flow exec(const Body &body);
  Flow exec(const Stmt &stmt);
  Value eval(const Expr &e);
  void emit(std::string_view text);
  std::string capture(const Body &body, std::shared_ptr<Scope> scope);
  void step();
  Value lookup(const std::string &name);
  void assign(const std::vector<std::string> &targets, const Value &value);
  void execFor(const Stmt &s);
  Value defineMacro(const Stmt &s);
  Value applyFilterExpr(const Expr &e, Value subject);
  CallArgs evalArgs(const Expr &e, size_t firstArg);
  Value slice(const Value &object, const Expr &sliceExpr);
  template <typename T> struct Tracked {
    std::vector<std::weak_ptr<T>> objects;
    size_t sweepAt = 64;
  };
  template <typename T> void track(Tracked<T> &tracked, const std::shared_ptr<T> &object);
  void breakCycles();

  const Body &program_;
  RenderLimits limits_;
  std::shared_ptr<Scope> scope_;
  std::string *out_ = nullptr;
  int line_ = 0;
  int callDepth_ = 0;
  uint64_t steps_ = 0;
  // Reference cycles a render can build: a macro's closure holds the scope
  // that holds the macro, and `{% set ns.self = ns %}`. Lists and dicts are
  // immutable, so every cycle passes through a macro's closure scope or an
  // assigned namespace; breakCycles() empties those when a render ends, so
  // that rendering frees everything it made (a server renders forever).
  Tracked<Scope> closureScopes_;
  Tracked<NamespaceObject> assignedNamespaces_;
};

/// Binds call arguments to named parameters as Python does, for builtins.
class ArgBinder {
public:
  ArgBinder(Interpreter &interp, const std::string &function, CallArgs &args,
            std::initializer_list<const char *> params, size_t required = 0);
  bool has(size_t i) const { return present_[i]; }
  const Value &operator[](size_t i) const { return bound_[i]; }
  Value get(size_t i, Value fallback) const { return present_[i] ? bound_[i] : fallback; }
  /// Positional arguments past the named parameters (for *args).
  std::vector<Value> rest;

private:
  std::vector<Value> bound_;
  std::vector<bool> present_;
};

// Implemented in JinjaFilters.cpp / JinjaTests.cpp / JinjaMethods.cpp.
bool hasFilter(const std::string &name);
Value applyFilter(Interpreter &interp, const std::string &name, const Value &subject,
                  CallArgs &args);
bool hasTest(const std::string &name);
bool applyTest(Interpreter &interp, const std::string &name, const Value &subject, CallArgs &args);
/// The bound method `object.name`, or undefined when there is none.
Value getMethod(Interpreter &interp, const Value &object, const std::string &name);
/// The builtin globals: range, dict, namespace, raise_exception, strftime_now.
std::vector<std::pair<std::string, Value>> builtinGlobals(Interpreter &interp);

} // namespace quill::jinja
