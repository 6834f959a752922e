// The tree-walking renderer: statements, scopes, loops, macros, and the
// expression evaluator (operators are in JinjaOperators.cpp).
#include "runtime/chat/JinjaInterpreter.h"

#include <algorithm>

namespace quill::jinja {

Value *Scope::find(const std::string &name) {
  for (auto &[k, v] : vars)
    if (k == name)
      return &v;
  return nullptr;
}

void Scope::set(const std::string &name, Value value) {
  if (Value *slot = find(name))
    *slot = std::move(value);
  else
    vars.emplace_back(name, std::move(value));
}

Interpreter::Interpreter(const Body &program, RenderLimits limits)
    : program_(program), limits_(limits) {}

void Interpreter::fail(const std::string &message) const { throw TemplateError(message); }

void Interpreter::failUndefined(const Value &v) const {
  fail(v.undefinedHint().empty() ? "value is undefined" : v.undefinedHint());
}

void Interpreter::checkSize(size_t bytes) const {
  if (bytes > limits_.maxOutputBytes)
    fail("output too large (more than " + std::to_string(limits_.maxOutputBytes) + " bytes)");
}

void Interpreter::step() {
  if (++steps_ > limits_.maxSteps)
    fail("template ran too long (more than " + std::to_string(limits_.maxSteps) + " steps)");
}

void Interpreter::emit(std::string_view text) {
  checkSize(out_->size() + text.size());
  out_->append(text);
}

std::string Interpreter::render(const std::vector<std::pair<std::string, Value>> &variables) {
  auto builtins = std::make_shared<Scope>();
  for (auto &[name, value] : builtinGlobals(*this))
    builtins->set(name, value);
  scope_ = std::make_shared<Scope>();
  scope_->parent = builtins;
  for (const auto &[name, value] : variables)
    scope_->set(name, value);
  std::string out;
  out_ = &out;
  struct BreakCycles {
    Interpreter &i;
    ~BreakCycles() { i.breakCycles(); }
  } breakCycles{*this};
  try {
    exec(program_);
  } catch (const TemplateError &e) {
    std::string message = e.what();
    throw TemplateError("line " + std::to_string(line_) + ": " + message);
  }
  return out;
}

template <typename T>
void Interpreter::track(Tracked<T> &tracked, const std::shared_ptr<T> &object) {
  if (object->tracked)
    return;
  object->tracked = true;
  // Dropping the expired entries when the list reaches twice what was alive
  // at the last sweep keeps it within twice the live objects, at O(1) each.
  auto &objects = tracked.objects;
  if (objects.size() >= tracked.sweepAt) {
    objects.erase(std::remove_if(objects.begin(), objects.end(),
                                 [](const std::weak_ptr<T> &o) { return o.expired(); }),
                  objects.end());
    tracked.sweepAt = std::max<size_t>(64, 2 * objects.size());
  }
  objects.push_back(object);
}

void Interpreter::breakCycles() {
  scope_.reset();
  for (auto &weak : closureScopes_.objects)
    if (auto scope = weak.lock()) {
      auto doomed = std::move(scope->vars);
      scope->vars.clear();
      scope->parent.reset();
    }
  for (auto &weak : assignedNamespaces_.objects)
    if (auto ns = weak.lock()) {
      auto doomed = std::move(ns->attrs);
      ns->attrs.clear();
    }
  closureScopes_ = {};
  assignedNamespaces_ = {};
}

std::string Interpreter::capture(const Body &body, std::shared_ptr<Scope> scope) {
  std::string buffer;
  std::string *savedOut = out_;
  auto savedScope = scope_;
  out_ = &buffer;
  scope_ = std::move(scope);
  struct Restore {
    Interpreter &i;
    std::string *out;
    std::shared_ptr<Scope> scope;
    ~Restore() {
      i.out_ = out;
      i.scope_ = std::move(scope);
    }
  } restore{*this, savedOut, savedScope};
  Flow flow = exec(body);
  (void)flow; // the parser allows break/continue only inside a loop of the same body
  return buffer;
}

Value Interpreter::lookup(const std::string &name) {
  for (Scope *s = scope_.get(); s; s = s->parent.get())
    if (Value *v = s->find(name))
      return *v;
  return Value::undefined("'" + name + "' is undefined");
}

void Interpreter::assign(const std::vector<std::string> &targets, const Value &value) {
  if (targets.size() == 1) {
    scope_->set(targets[0], value);
    return;
  }
  std::vector<Value> items = iterate(value);
  if (items.size() != targets.size())
    fail(items.size() > targets.size()
             ? "too many values to unpack (expected " + std::to_string(targets.size()) + ")"
             : "not enough values to unpack (expected " + std::to_string(targets.size()) +
                   ", got " + std::to_string(items.size()) + ")");
  for (size_t i = 0; i < targets.size(); ++i)
    scope_->set(targets[i], items[i]);
}

Interpreter::Flow Interpreter::exec(const Body &body) {
  for (const auto &s : body) {
    Flow flow = exec(*s);
    if (flow != Flow::Normal)
      return flow;
  }
  return Flow::Normal;
}

Interpreter::Flow Interpreter::exec(const Stmt &s) {
  step();
  line_ = s.line;
  switch (s.kind) {
  case Stmt::Kind::Text:
    emit(s.text);
    return Flow::Normal;
  case Stmt::Kind::Output: {
    Value v = eval(*s.expr);
    emit(v.str());
    return Flow::Normal;
  }
  case Stmt::Kind::If:
    for (const auto &[condition, body] : s.branches) {
      line_ = condition->line;
      if (eval(*condition).truthy())
        return exec(body);
    }
    return exec(s.elseBody);
  case Stmt::Kind::For:
    execFor(s);
    return Flow::Normal;
  case Stmt::Kind::Set:
    if (s.attributeTarget) {
      Value target = lookup(s.targets[0]);
      if (!target.isNamespace() || target.asNamespace().typeName != "Namespace")
        fail("cannot assign attribute on non-namespace object");
      target.asNamespace().set(s.targets[1], eval(*s.expr));
      track(assignedNamespaces_, target.sharedNamespace());
    } else {
      assign(s.targets, eval(*s.expr));
    }
    return Flow::Normal;
  case Stmt::Kind::SetBlock: {
    auto inner = std::make_shared<Scope>();
    inner->parent = scope_;
    Value v(capture(s.body, inner));
    for (const auto &f : s.filters)
      v = applyFilterExpr(*f, v);
    scope_->set(s.targets[0], v);
    return Flow::Normal;
  }
  case Stmt::Kind::Macro:
    scope_->set(s.text, defineMacro(s));
    return Flow::Normal;
  case Stmt::Kind::Break:
    return Flow::Break;
  case Stmt::Kind::Continue:
    return Flow::Continue;
  case Stmt::Kind::Scope: {
    auto inner = std::make_shared<Scope>();
    inner->parent = scope_;
    for (const auto &[name, expr] : s.params)
      inner->set(name, eval(*expr));
    emit(capture(s.body, inner));
    return Flow::Normal;
  }
  case Stmt::Kind::FilterBlock: {
    auto inner = std::make_shared<Scope>();
    inner->parent = scope_;
    Value v(capture(s.body, inner));
    for (const auto &f : s.filters)
      v = applyFilterExpr(*f, v);
    emit(v.str());
    return Flow::Normal;
  }
  }
  return Flow::Normal;
}

void Interpreter::execFor(const Stmt &s) {
  std::vector<Value> items = iterate(eval(*s.expr));
  auto outer = scope_;
  if (s.condition) {
    std::vector<Value> kept;
    for (const Value &item : items) {
      step();
      scope_ = std::make_shared<Scope>();
      scope_->parent = outer;
      assign(s.targets, item);
      bool keep = eval(*s.condition).truthy();
      scope_ = outer;
      if (keep)
        kept.push_back(item);
    }
    items = std::move(kept);
  }
  struct Restore {
    Interpreter &i;
    std::shared_ptr<Scope> scope;
    ~Restore() { i.scope_ = std::move(scope); }
  } restore{*this, outer};
  if (items.empty()) {
    scope_ = std::make_shared<Scope>();
    scope_->parent = outer;
    exec(s.elseBody);
    return;
  }
  const int64_t n = static_cast<int64_t>(items.size());
  for (int64_t i = 0; i < n; ++i) {
    step();
    scope_ = std::make_shared<Scope>();
    scope_->parent = outer;
    if (s.usesLoop) {
      Value loop = Value::ns(
          {
              {"index", Value(i + 1)},
              {"index0", Value(i)},
              {"revindex", Value(n - i)},
              {"revindex0", Value(n - i - 1)},
              {"first", Value(i == 0)},
              {"last", Value(i == n - 1)},
              {"length", Value(n)},
              {"depth", Value(1)},
              {"depth0", Value(0)},
              {"previtem", i > 0 ? items[i - 1] : Value::undefined("there is no previous item")},
              {"nextitem", i + 1 < n ? items[i + 1] : Value::undefined("there is no next item")},
              {"cycle",
               Value::function(
                   "cycle",
                   [i](Interpreter &interp, CallArgs &args) {
                     if (args.positional.empty())
                       interp.fail("no items for cycling given");
                     return args.positional[static_cast<size_t>(i) % args.positional.size()];
                   })},
          },
          "LoopContext");
      scope_->set("loop", loop);
    }
    assign(s.targets, items[i]);
    if (exec(s.body) == Flow::Break)
      break;
  }
}

Value Interpreter::defineMacro(const Stmt &s) {
  const Stmt *macro = &s;
  std::shared_ptr<Scope> closure = scope_;
  track(closureScopes_, closure);
  return Value::function(s.text, [this, macro, closure](Interpreter &, CallArgs &args) {
    if (callDepth_ >= limits_.maxCallDepth)
      fail("macro calls nested too deeply (more than " + std::to_string(limits_.maxCallDepth) +
           ", runaway recursion?)");
    auto inner = std::make_shared<Scope>();
    inner->parent = closure;
    const auto &params = macro->params;
    std::vector<Value> varargs;
    for (size_t i = 0; i < args.positional.size(); ++i) {
      if (i < params.size())
        inner->set(params[i].first, args.positional[i]);
      else
        varargs.push_back(args.positional[i]);
    }
    std::vector<std::pair<Value, Value>> kwargs;
    for (auto &[key, value] : args.keywords) {
      bool known = false;
      for (const auto &p : params)
        known = known || p.first == key;
      if (known)
        inner->set(key, value);
      else
        kwargs.emplace_back(Value(key), value);
    }
    auto savedScope = scope_;
    scope_ = inner;
    for (const auto &[name, def] : params)
      if (!inner->find(name))
        inner->set(name, def ? eval(*def)
                             : Value::undefined("parameter '" + name + "' was not provided"));
    scope_ = savedScope;
    inner->set("varargs", Value::list(std::move(varargs)));
    inner->set("kwargs", Value::dict(std::move(kwargs)));
    int savedLine = line_;
    ++callDepth_;
    struct Depth {
      int &depth;
      ~Depth() { --depth; }
    } depth{callDepth_};
    Value result(capture(macro->body, inner));
    line_ = savedLine;
    return result;
  });
}

CallArgs Interpreter::evalArgs(const Expr &e, size_t firstArg) {
  CallArgs args;
  for (size_t i = firstArg; i < e.args.size(); ++i)
    args.positional.push_back(eval(*e.args[i]));
  for (const auto &[key, expr] : e.keywords)
    args.keywords.emplace_back(key, eval(*expr));
  return args;
}

Value Interpreter::applyFilterExpr(const Expr &e, Value subject) {
  CallArgs args = evalArgs(e, 1);
  line_ = e.line;
  return applyFilter(*this, e.name, subject, args);
}

Value Interpreter::call(const Value &callee, CallArgs &args) {
  if (callee.isUndefined())
    failUndefined(callee);
  if (!callee.isFunction())
    fail("'" + callee.pythonTypeName() + "' object is not callable");
  return callee.asFunction().fn(*this, args);
}

Value Interpreter::eval(const Expr &e) {
  line_ = e.line;
  switch (e.kind) {
  case Expr::Kind::Literal:
    return e.literal;
  case Expr::Kind::Name:
    return lookup(e.name);
  case Expr::Kind::List:
  case Expr::Kind::Tuple: {
    std::vector<Value> items;
    for (const auto &a : e.args)
      items.push_back(eval(*a));
    return Value::list(std::move(items), e.kind == Expr::Kind::Tuple);
  }
  case Expr::Kind::Dict: {
    std::vector<std::pair<Value, Value>> entries;
    for (size_t i = 0; i + 1 < e.args.size(); i += 2) {
      Value key = eval(*e.args[i]);
      Value value = eval(*e.args[i + 1]);
      bool replaced = false;
      for (auto &entry : entries)
        if (entry.first.equals(key)) {
          entry.second = value;
          replaced = true;
        }
      if (!replaced)
        entries.emplace_back(std::move(key), std::move(value));
    }
    return Value::dict(std::move(entries));
  }
  case Expr::Kind::GetAttr:
    return getAttr(eval(*e.args[0]), e.name);
  case Expr::Kind::GetItem: {
    Value object = eval(*e.args[0]);
    if (e.args[1]->kind == Expr::Kind::Slice)
      return slice(object, *e.args[1]);
    return getItem(object, eval(*e.args[1]));
  }
  case Expr::Kind::Slice:
    fail("a slice is only valid inside []");
  case Expr::Kind::Unary: {
    Value v = eval(*e.args[0]);
    if (v.isUndefined())
      failUndefined(v);
    if (!v.isNumber())
      fail("bad operand type for unary " + e.name + ": '" + v.pythonTypeName() + "'");
    if (e.name == "+")
      return v.isBool() ? Value(v.asInt()) : v;
    if (v.isFloat())
      return Value(-v.asFloat());
    if (v.asInt() == INT64_MIN)
      fail("integer overflow");
    return Value(-v.asInt());
  }
  case Expr::Kind::Binary: {
    Value a = eval(*e.args[0]);
    Value b = eval(*e.args[1]);
    line_ = e.line;
    return binary(e.name, a, b);
  }
  case Expr::Kind::Concat: {
    std::string s;
    for (const auto &a : e.args) {
      s += eval(*a).str();
      checkSize(s.size());
    }
    return Value(std::move(s));
  }
  case Expr::Kind::Compare: {
    Value left = eval(*e.args[0]);
    for (size_t i = 0; i < e.ops.size(); ++i) {
      Value right = eval(*e.args[i + 1]);
      line_ = e.line;
      const std::string &op = e.ops[i];
      bool ok;
      if (op == "==")
        ok = left.equals(right);
      else if (op == "!=")
        ok = !left.equals(right);
      else if (op == "<")
        ok = less(left, right);
      else if (op == ">")
        ok = less(right, left);
      else if (op == "<=")
        ok = !less(right, left);
      else if (op == ">=")
        ok = !less(left, right);
      else if (op == "in")
        ok = contains(right, left);
      else
        ok = !contains(right, left);
      if (!ok)
        return Value(false);
      left = std::move(right);
    }
    return Value(true);
  }
  case Expr::Kind::And: {
    Value a = eval(*e.args[0]);
    return a.truthy() ? eval(*e.args[1]) : a;
  }
  case Expr::Kind::Or: {
    Value a = eval(*e.args[0]);
    return a.truthy() ? a : eval(*e.args[1]);
  }
  case Expr::Kind::Not:
    return Value(!eval(*e.args[0]).truthy());
  case Expr::Kind::Cond:
    if (eval(*e.args[0]).truthy())
      return eval(*e.args[1]);
    if (e.args[2])
      return eval(*e.args[2]);
    return Value::undefined("the inline if-expression on line " + std::to_string(e.line) +
                            " evaluated to false and no else section was defined.");
  case Expr::Kind::Filter:
    return applyFilterExpr(e, eval(*e.args[0]));
  case Expr::Kind::Test: {
    Value subject = eval(*e.args[0]);
    CallArgs args = evalArgs(e, 1);
    line_ = e.line;
    return Value(applyTest(*this, e.name, subject, args) != e.negated);
  }
  case Expr::Kind::Call: {
    Value callee = eval(*e.args[0]);
    CallArgs args = evalArgs(e, 1);
    line_ = e.line;
    return call(callee, args);
  }
  }
  return Value();
}

ArgBinder::ArgBinder(Interpreter &interp, const std::string &function, CallArgs &args,
                     std::initializer_list<const char *> params, size_t required)
    : bound_(params.size()), present_(params.size(), false) {
  std::vector<const char *> names(params);
  for (size_t i = 0; i < args.positional.size(); ++i) {
    if (i < names.size()) {
      bound_[i] = args.positional[i];
      present_[i] = true;
    } else {
      rest.push_back(args.positional[i]);
    }
  }
  for (auto &[key, value] : args.keywords) {
    size_t i = 0;
    while (i < names.size() && key != names[i])
      ++i;
    if (i == names.size())
      interp.fail(function + "() got an unexpected keyword argument '" + key + "'");
    bound_[i] = value;
    present_[i] = true;
  }
  for (size_t i = 0; i < required; ++i)
    if (!present_[i])
      interp.fail(function + "() missing required argument '" + names[i] + "'");
}

} // namespace quill::jinja
