// The functions every template can call: jinja2's range, dict and namespace,
// and HF's raise_exception and strftime_now.
#include "runtime/chat/JinjaInterpreter.h"

#include <ctime>

namespace quill::jinja {
namespace {

/// jinja2's sandbox refuses longer ranges (MAX_RANGE).
constexpr int64_t kMaxRange = 100000;

Value range(Interpreter &interp, CallArgs &args) {
  if (!args.keywords.empty())
    interp.fail("range() takes no keyword arguments");
  std::vector<int64_t> a;
  for (const Value &v : args.positional) {
    if (!v.isInt() && !v.isBool())
      interp.fail("'" + v.pythonTypeName() + "' object cannot be interpreted as an integer");
    a.push_back(v.asInt());
  }
  if (a.empty() || a.size() > 3)
    interp.fail("range expected 1 to 3 arguments, got " + std::to_string(a.size()));
  int64_t start = a.size() == 1 ? 0 : a[0], stop = a.size() == 1 ? a[0] : a[1];
  int64_t step = a.size() == 3 ? a[2] : 1;
  if (step == 0)
    interp.fail("range() arg 3 must not be zero");
  std::vector<Value> items;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
    if (static_cast<int64_t>(items.size()) >= kMaxRange)
      interp.fail("Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
    items.emplace_back(i);
    if ((step > 0 && i > INT64_MAX - step) || (step < 0 && i < INT64_MIN - step))
      break;
  }
  return Value::list(std::move(items));
}

std::vector<std::pair<std::string, Value>> attributesOf(Interpreter &interp, CallArgs &args,
                                                        const char *function) {
  std::vector<std::pair<std::string, Value>> attrs;
  auto put = [&](const std::string &k, const Value &v) {
    for (auto &entry : attrs)
      if (entry.first == k) {
        entry.second = v;
        return;
      }
    attrs.emplace_back(k, v);
  };
  if (args.positional.size() > 1)
    interp.fail(std::string(function) + " expected at most 1 argument, got " +
                std::to_string(args.positional.size()));
  if (!args.positional.empty()) {
    const Value &init = args.positional[0];
    if (init.isDict()) {
      for (const auto &[k, v] : init.asDict().entries)
        put(k.str(), v);
    } else {
      for (const Value &pair : interp.iterate(init)) {
        if (!pair.isList() || pair.items().size() != 2)
          interp.fail(std::string(function) + ": expected a mapping or key/value pairs");
        put(pair.items()[0].str(), pair.items()[1]);
      }
    }
  }
  for (const auto &[k, v] : args.keywords)
    put(k, v);
  return attrs;
}

Value makeDict(Interpreter &interp, CallArgs &args) {
  std::vector<std::pair<Value, Value>> entries;
  for (auto &[k, v] : attributesOf(interp, args, "dict"))
    entries.emplace_back(Value(k), v);
  return Value::dict(std::move(entries));
}

Value makeNamespace(Interpreter &interp, CallArgs &args) {
  return Value::ns(attributesOf(interp, args, "namespace"), "Namespace");
}

Value raiseException(Interpreter &interp, CallArgs &args) {
  interp.fail(args.positional.empty() ? std::string() : args.positional[0].str());
}

Value strftimeNow(Interpreter &interp, CallArgs &args) {
  if (args.positional.size() != 1 || !args.positional[0].isString())
    interp.fail("strftime_now() takes one format string");
  std::tm tm{};
  if (interp.fixedNow) {
    gmtime_r(&*interp.fixedNow, &tm);
  } else {
    std::time_t now = std::time(nullptr);
    localtime_r(&now, &tm);
  }
  const std::string &format = args.positional[0].asString();
  if (format.empty())
    return Value("");
  std::string buffer(256 + format.size() * 16, '\0');
  size_t n = std::strftime(buffer.data(), buffer.size(), format.c_str(), &tm);
  if (n == 0)
    interp.fail("strftime_now: the format's output is too long");
  buffer.resize(n);
  return Value(std::move(buffer));
}

} // namespace

std::vector<std::pair<std::string, Value>> builtinGlobals(Interpreter &) {
  return {
      {"range", Value::function("range", range)},
      {"dict", Value::function("dict", makeDict)},
      {"namespace", Value::function("namespace", makeNamespace)},
      {"raise_exception", Value::function("raise_exception", raiseException)},
      {"strftime_now", Value::function("strftime_now", strftimeNow)},
  };
}

} // namespace quill::jinja
