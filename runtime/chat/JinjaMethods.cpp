// Python's str, dict and list methods that templates call (`s.strip()`,
// `d.items()`, ...). Mutating methods are refused, as HF's
// ImmutableSandboxedEnvironment refuses them.
#include "runtime/chat/JinjaInterpreter.h"
#include "runtime/chat/JinjaText.h"

#include <algorithm>

namespace quill::jinja {
namespace {

using Method = Value (*)(Interpreter &, const Value &self, CallArgs &);

std::string argString(Interpreter &interp, const Value &v, const char *what) {
  if (!v.isString())
    interp.fail(std::string(what) + " must be str, not " + v.pythonTypeName());
  return v.asString();
}

/// The code point index of byte offset `byte` in s.
int64_t codePointIndex(const std::string &s, size_t byte) {
  return static_cast<int64_t>(codePointCount(std::string_view(s).substr(0, byte)));
}

/// Python's optional [start[, end]] code point bounds as byte offsets.
void byteRange(Interpreter &interp, const std::string &s, const ArgBinder &a, size_t first,
               size_t &begin, size_t &end) {
  std::vector<size_t> offsets = codePointOffsets(s);
  int64_t n = static_cast<int64_t>(offsets.size()) - 1;
  auto bound = [&](size_t i, int64_t fallback) {
    if (!a.has(i) || a[i].isNone())
      return fallback;
    if (!a[i].isInt())
      interp.fail("slice indices must be integers or None");
    int64_t v = a[i].asInt();
    if (v < 0)
      v = std::max<int64_t>(0, v + n);
    return std::min(v, n);
  };
  int64_t b = bound(first, 0), e = bound(first + 1, n);
  begin = offsets[static_cast<size_t>(b)];
  end = std::max(begin, offsets[static_cast<size_t>(std::max(b, e))]);
}

Value strip(Interpreter &interp, const Value &self, CallArgs &args, bool left, bool right,
            const char *name) {
  ArgBinder a(interp, name, args, {"chars"});
  if (a.has(0) && !a[0].isNone()) {
    std::string chars = argString(interp, a[0], "strip arg");
    return Value(std::string(stripText(self.asString(), left, right, &chars)));
  }
  return Value(std::string(stripText(self.asString(), left, right)));
}

/// Python's str.split / str.rsplit.
Value split(Interpreter &interp, const Value &self, CallArgs &args, bool fromRight) {
  ArgBinder a(interp, fromRight ? "rsplit" : "split", args, {"sep", "maxsplit"});
  const std::string &s = self.asString();
  int64_t maxsplit = a.has(1) ? a[1].asInt() : -1;
  std::vector<std::string> parts;
  if (!a.has(0) || a[0].isNone()) {
    // Runs of whitespace separate; no empty parts.
    std::vector<std::pair<size_t, size_t>> words;
    size_t i = 0, n = 0;
    while (i < s.size()) {
      while (i < s.size() && isPythonSpace(decodeUtf8(s, i, n)))
        i += n;
      if (i >= s.size())
        break;
      size_t start = i;
      while (i < s.size() && !isPythonSpace(decodeUtf8(s, i, n)))
        i += n;
      words.emplace_back(start, i);
    }
    if (maxsplit < 0 || static_cast<size_t>(maxsplit) + 1 >= words.size()) {
      for (auto [b, e] : words)
        parts.push_back(s.substr(b, e - b));
    } else if (!fromRight) {
      for (int64_t k = 0; k < maxsplit; ++k)
        parts.push_back(s.substr(words[k].first, words[k].second - words[k].first));
      size_t rest = words[maxsplit].first;
      parts.push_back(s.substr(rest));
    } else {
      size_t keep = words.size() - static_cast<size_t>(maxsplit);
      parts.push_back(s.substr(0, words[keep - 1].second));
      for (size_t k = keep; k < words.size(); ++k)
        parts.push_back(s.substr(words[k].first, words[k].second - words[k].first));
    }
  } else {
    std::string sep = argString(interp, a[0], "separator");
    if (sep.empty())
      interp.fail("empty separator");
    if (!fromRight) {
      size_t start = 0;
      for (int64_t k = 0; maxsplit < 0 || k < maxsplit; ++k) {
        size_t at = s.find(sep, start);
        if (at == std::string::npos)
          break;
        parts.push_back(s.substr(start, at - start));
        start = at + sep.size();
      }
      parts.push_back(s.substr(start));
    } else {
      size_t end = s.size();
      for (int64_t k = 0; maxsplit < 0 || k < maxsplit; ++k) {
        if (end < sep.size())
          break;
        size_t at = s.rfind(sep, end - sep.size());
        if (at == std::string::npos)
          break;
        parts.push_back(s.substr(at + sep.size(), end - at - sep.size()));
        end = at;
      }
      parts.push_back(s.substr(0, end));
      std::reverse(parts.begin(), parts.end());
    }
  }
  std::vector<Value> items(parts.begin(), parts.end());
  return Value::list(std::move(items));
}

Value find(Interpreter &interp, const Value &self, CallArgs &args, bool fromRight, bool raise,
           const char *name) {
  ArgBinder a(interp, name, args, {"sub", "start", "end"}, 1);
  std::string sub = argString(interp, a[0], "substring");
  const std::string &s = self.asString();
  size_t begin, end;
  byteRange(interp, s, a, 1, begin, end);
  std::string_view range = std::string_view(s).substr(begin, end - begin);
  size_t at = fromRight ? range.rfind(sub) : range.find(sub);
  if (at == std::string_view::npos) {
    if (raise)
      interp.fail("substring not found");
    return Value(-1);
  }
  return Value(codePointIndex(s, begin + at));
}

Value affix(Interpreter &interp, const Value &self, CallArgs &args, bool prefix) {
  ArgBinder a(interp, prefix ? "startswith" : "endswith", args, {"prefix", "start", "end"}, 1);
  const std::string &s = self.asString();
  size_t begin, end;
  byteRange(interp, s, a, 1, begin, end);
  std::string_view range = std::string_view(s).substr(begin, end - begin);
  std::vector<Value> options = a[0].isTuple() ? a[0].items() : std::vector<Value>{a[0]};
  for (const Value &o : options) {
    std::string x = argString(interp, o, prefix ? "startswith arg" : "endswith arg");
    if (range.size() >= x.size() &&
        (prefix ? range.substr(0, x.size()) : range.substr(range.size() - x.size())) == x)
      return Value(true);
  }
  return Value(false);
}

/// str.format: {} {0} {name} {0.attr} {name[key]} fields; `{{` and `}}`.
Value format(Interpreter &interp, const Value &self, CallArgs &args) {
  const std::string &f = self.asString();
  std::string out;
  size_t autoIndex = 0;
  for (size_t i = 0; i < f.size(); ++i) {
    char c = f[i];
    if (c == '}') {
      if (i + 1 < f.size() && f[i + 1] == '}')
        ++i;
      else
        interp.fail("Single '}' encountered in format string");
      out += '}';
      continue;
    }
    if (c != '{') {
      out += c;
      continue;
    }
    if (i + 1 < f.size() && f[i + 1] == '{') {
      out += '{';
      ++i;
      continue;
    }
    size_t close = f.find('}', i);
    if (close == std::string::npos)
      interp.fail("Single '{' encountered in format string");
    std::string field = f.substr(i + 1, close - i - 1);
    i = close;
    if (field.find_first_of(":!") != std::string::npos)
      interp.fail("format specs in str.format are not supported");
    size_t split = field.find_first_of(".[");
    std::string head = field.substr(0, split);
    Value v;
    if (head.empty() || std::all_of(head.begin(), head.end(), ::isdigit)) {
      size_t index = head.empty() ? autoIndex++ : std::stoul(head);
      if (index >= args.positional.size())
        interp.fail("Replacement index " + std::to_string(index) +
                    " out of range for positional args tuple");
      v = args.positional[index];
    } else {
      bool found = false;
      for (auto &[k, kv] : args.keywords)
        if (k == head) {
          v = kv;
          found = true;
        }
      if (!found)
        interp.fail("'" + head + "'");
    }
    for (size_t p = split; p != std::string::npos && p < field.size();) {
      if (field[p] == '.') {
        size_t next = field.find_first_of(".[", p + 1);
        v = interp.getAttr(v, field.substr(p + 1, next - p - 1));
        p = next;
      } else {
        size_t end = field.find(']', p);
        std::string key = field.substr(p + 1, end - p - 1);
        bool numeric = !key.empty() && std::all_of(key.begin(), key.end(), ::isdigit);
        v = interp.getItem(v, numeric ? Value(static_cast<int64_t>(std::stoll(key))) : Value(key));
        p = end == std::string::npos ? end : end + 1;
      }
    }
    out += v.str();
  }
  return Value(std::move(out));
}

Value stringMethod(Interpreter &interp, const Value &self, const std::string &name,
                   CallArgs &args) {
  const std::string &s = self.asString();
  auto noArgs = [&]() {
    if (!args.positional.empty() || !args.keywords.empty())
      interp.fail("str." + name + "() takes no arguments");
  };
  if (name == "strip" || name == "lstrip" || name == "rstrip")
    return strip(interp, self, args, name != "rstrip", name != "lstrip", name.c_str());
  if (name == "split" || name == "rsplit")
    return split(interp, self, args, name == "rsplit");
  if (name == "startswith" || name == "endswith")
    return affix(interp, self, args, name == "startswith");
  if (name == "find" || name == "rfind" || name == "index" || name == "rindex")
    return find(interp, self, args, name[0] == 'r', name.find("index") != std::string::npos,
                name.c_str());
  if (name == "format")
    return format(interp, self, args);
  if (name == "replace") {
    ArgBinder a(interp, "replace", args, {"old", "new", "count"}, 2);
    CallArgs filterArgs{{a[0], a[1]}, {}};
    if (a.has(2))
      filterArgs.positional.push_back(a[2]);
    return applyFilter(interp, "replace", self, filterArgs);
  }
  if (name == "count") {
    ArgBinder a(interp, "count", args, {"sub"}, 1);
    std::string sub = argString(interp, a[0], "count arg");
    if (sub.empty())
      return Value(static_cast<int64_t>(codePointCount(s) + 1));
    int64_t count = 0;
    for (size_t at = s.find(sub); at != std::string::npos; at = s.find(sub, at + sub.size()))
      ++count;
    return Value(count);
  }
  if (name == "join") {
    ArgBinder a(interp, "join", args, {"iterable"}, 1);
    std::string out;
    bool first = true;
    for (const Value &v : interp.iterate(a[0])) {
      if (!v.isString())
        interp.fail("sequence item: expected str instance, " + v.pythonTypeName() + " found");
      out += (first ? "" : s) + v.asString();
      first = false;
      interp.checkSize(out.size());
    }
    return Value(std::move(out));
  }
  if (name == "splitlines") {
    noArgs();
    std::vector<Value> lines;
    size_t start = 0, i = 0, n = 0;
    while (i < s.size()) {
      char32_t c = decodeUtf8(s, i, n);
      bool lineBreak = c == '\n' || c == '\r' || c == 0x0b || c == 0x0c || c == 0x1c || c == 0x1d ||
                       c == 0x1e || c == 0x85 || c == 0x2028 || c == 0x2029;
      if (!lineBreak) {
        i += n;
        continue;
      }
      lines.emplace_back(s.substr(start, i - start));
      i += n;
      if (c == '\r' && i < s.size() && s[i] == '\n')
        ++i;
      start = i;
    }
    if (start < s.size())
      lines.emplace_back(s.substr(start));
    return Value::list(std::move(lines));
  }
  noArgs();
  if (name == "upper")
    return Value(toUpper(s));
  if (name == "lower" || name == "casefold")
    return Value(toLower(s));
  if (name == "title")
    return Value(titleText(s));
  if (name == "capitalize")
    return Value(capitalizeText(s));
  auto all = [&](auto predicate) {
    if (s.empty())
      return Value(false);
    for (unsigned char c : s)
      if (!predicate(c))
        return Value(false);
    return Value(true);
  };
  if (name == "isdigit" || name == "isdecimal" || name == "isnumeric")
    return all([](unsigned char c) { return std::isdigit(c) != 0; });
  if (name == "isalpha")
    return all([](unsigned char c) { return std::isalpha(c) != 0 || c >= 0x80; });
  if (name == "isalnum")
    return all([](unsigned char c) { return std::isalnum(c) != 0 || c >= 0x80; });
  if (name == "isspace")
    return Value(!s.empty() && stripText(s, true, false).empty());
  if (name == "islower" || name == "isupper") {
    bool cased = false;
    for (unsigned char c : s) {
      if (std::isalpha(c)) {
        cased = true;
        if ((name == "islower") != (std::islower(c) != 0))
          return Value(false);
      }
    }
    return Value(cased);
  }
  interp.fail("str." + name + " is not supported");
}

bool isStringMethod(const std::string &name) {
  static const char *const kNames[] = {
      "strip",    "lstrip",  "rstrip",     "split",      "rsplit",    "startswith",
      "endswith", "find",    "rfind",      "index",      "rindex",    "format",
      "replace",  "count",   "join",       "splitlines", "upper",     "lower",
      "casefold", "title",   "capitalize", "isdigit",    "isdecimal", "isnumeric",
      "isalpha",  "isalnum", "isspace",    "islower",    "isupper"};
  return std::find_if(std::begin(kNames), std::end(kNames),
                      [&](const char *n) { return name == n; }) != std::end(kNames);
}

Value dictMethod(Interpreter &interp, const Value &self, const std::string &name, CallArgs &args) {
  const auto &entries = self.asDict().entries;
  if (name == "get") {
    ArgBinder a(interp, "get", args, {"key", "default"}, 1);
    const Value *v = self.asDict().find(a[0]);
    return v ? *v : a.get(1, Value::none());
  }
  if (!args.positional.empty() || !args.keywords.empty())
    interp.fail("dict." + name + "() takes no arguments");
  std::vector<Value> out;
  for (const auto &[k, v] : entries) {
    if (name == "items")
      out.push_back(Value::list({k, v}, true));
    else if (name == "keys")
      out.push_back(k);
    else if (name == "values")
      out.push_back(v);
  }
  if (name == "copy")
    return Value::dict(entries);
  return Value::list(std::move(out));
}

Value listMethod(Interpreter &interp, const Value &self, const std::string &name, CallArgs &args) {
  ArgBinder a(interp, name, args, {"value"}, 1);
  const auto &items = self.items();
  if (name == "count")
    return Value(static_cast<int64_t>(
        std::count_if(items.begin(), items.end(), [&](const Value &v) { return v.equals(a[0]); })));
  for (size_t i = 0; i < items.size(); ++i)
    if (items[i].equals(a[0]))
      return Value(static_cast<int64_t>(i));
  interp.fail(a[0].repr() + " is not in list");
}

} // namespace

Value getMethod(Interpreter &, const Value &object, const std::string &name) {
  auto bind = [&](auto method) {
    Value self = object;
    std::string methodName = name;
    return Value::function(name, [self, methodName, method](Interpreter &interp, CallArgs &args) {
      return method(interp, self, methodName, args);
    });
  };
  auto unsafe = [&]() {
    return Value::undefined("access to attribute '" + name + "' of '" + object.pythonTypeName() +
                            "' object is unsafe.");
  };
  if (object.isString() && isStringMethod(name))
    return bind(stringMethod);
  if (object.isDict()) {
    if (name == "items" || name == "keys" || name == "values" || name == "get" || name == "copy")
      return bind(dictMethod);
    if (name == "pop" || name == "popitem" || name == "setdefault" || name == "update" ||
        name == "clear")
      return unsafe();
  }
  if (object.isList()) {
    if (name == "index" || name == "count")
      return bind(listMethod);
    if (!object.isTuple() &&
        (name == "append" || name == "extend" || name == "insert" || name == "pop" ||
         name == "remove" || name == "reverse" || name == "sort" || name == "clear"))
      return unsafe();
  }
  return Value();
}

} // namespace quill::jinja
