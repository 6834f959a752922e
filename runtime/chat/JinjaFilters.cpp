// jinja2's builtin filters (`x | name(args)`), with HF's tojson override.
#include "runtime/chat/JinjaFilterSet.h"
#include "runtime/chat/JinjaJson.h"
#include "runtime/chat/JinjaText.h"
#include "runtime/support/MarkupEscape.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>

namespace quill::jinja {
namespace {

using Filter = Value (*)(Interpreter &, const Value &, CallArgs &);

/// jinja2's make_attrgetter: "a.b.0" looked up part by part with getitem.
Value attributeOf(Interpreter &interp, const Value &item, const std::string &path) {
  Value v = item;
  size_t start = 0;
  for (;;) {
    size_t dot = path.find('.', start);
    std::string part = path.substr(start, dot == std::string::npos ? dot : dot - start);
    bool numeric = !part.empty() && std::all_of(part.begin(), part.end(), ::isdigit);
    if (v.isUndefined())
      return v;
    v = interp.getItem(v, numeric ? Value(static_cast<int64_t>(std::stoll(part))) : Value(part));
    if (dot == std::string::npos)
      return v;
    start = dot + 1;
  }
}

/// The value a sort/unique/min/max compares: the attribute, lowered unless
/// case-sensitive.
Value sortKey(Interpreter &interp, const Value &item, const Value &attribute, bool caseSensitive) {
  Value v = attribute.isString() ? attributeOf(interp, item, attribute.asString()) : item;
  if (!caseSensitive && v.isString())
    return Value(toLower(v.asString()));
  return v;
}

Value fTojson(Interpreter &interp, const Value &v, CallArgs &args) {
  ArgBinder a(interp, "tojson", args, {"ensure_ascii", "indent", "separators", "sort_keys"});
  std::optional<int> indent;
  if (a.has(1) && !a[1].isNone()) {
    if (!a[1].isInt())
      interp.fail("tojson: indent must be an integer");
    indent = static_cast<int>(std::clamp<int64_t>(a[1].asInt(), -1, 64));
  }
  std::string itemSep = indent ? "," : ", ", keySep = ": ";
  if (a.has(2) && !a[2].isNone()) {
    if (!a[2].isList() || a[2].items().size() != 2 || !a[2].items()[0].isString() ||
        !a[2].items()[1].isString())
      interp.fail("tojson: separators must be a pair of strings");
    itemSep = a[2].items()[0].asString();
    keySep = a[2].items()[1].asString();
  }
  std::string out = toJson(interp, v, indent, itemSep, keySep, a.has(3) && a[3].truthy());
  if (a.has(0) && a[0].truthy()) { // ensure_ascii: non-ASCII as \uXXXX escapes
    std::string ascii;
    for (size_t i = 0, n = 0; i < out.size(); i += n) {
      char32_t c = decodeUtf8(out, i, n);
      auto hex = [&](char32_t u) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(u));
        ascii += buf;
      };
      if (c < 0x80)
        ascii += static_cast<char>(c);
      else if (c < 0x10000)
        hex(c);
      else {
        hex(0xd800 + ((c - 0x10000) >> 10));
        hex(0xdc00 + ((c - 0x10000) & 0x3ff));
      }
    }
    out = ascii;
  }
  return Value(std::move(out));
}

Value fLength(Interpreter &interp, const Value &v, CallArgs &) { return Value(interp.length(v)); }

Value fString(Interpreter &, const Value &v, CallArgs &) { return Value(v.str()); }

Value fTrim(Interpreter &interp, const Value &v, CallArgs &args) {
  ArgBinder a(interp, "trim", args, {"chars"});
  std::string s = v.str();
  if (a.has(0) && !a[0].isNone()) {
    std::string chars = a[0].str();
    return Value(std::string(stripText(s, true, true, &chars)));
  }
  return Value(std::string(stripText(s, true, true)));
}

Value fUpper(Interpreter &, const Value &v, CallArgs &) { return Value(toUpper(v.str())); }
Value fLower(Interpreter &, const Value &v, CallArgs &) { return Value(toLower(v.str())); }
Value fCapitalize(Interpreter &, const Value &v, CallArgs &) {
  return Value(capitalizeText(v.str()));
}

/// jinja2's title: words begin after whitespace, '-', '(', '{', '[' or '<'.
Value fTitle(Interpreter &, const Value &v, CallArgs &) {
  std::string s = v.str(), out, word;
  auto flush = [&]() {
    out += capitalizeText(word);
    word.clear();
  };
  for (size_t i = 0, n = 0; i < s.size(); i += n) {
    char32_t c = decodeUtf8(s, i, n);
    if (isPythonSpace(c) || c == '-' || c == '(' || c == '{' || c == '[' || c == '<') {
      flush();
      out += s.substr(i, n);
    } else {
      word += s.substr(i, n);
    }
  }
  flush();
  return Value(std::move(out));
}

Value fReplace(Interpreter &interp, const Value &v, CallArgs &args) {
  ArgBinder a(interp, "replace", args, {"old", "new", "count"}, 2);
  std::string s = v.str(), from = a[0].str(), to = a[1].str(), out;
  int64_t count = a.has(2) && !a[2].isNone() ? a[2].asInt() : -1;
  if (from.empty()) {
    std::vector<size_t> offsets = codePointOffsets(s);
    for (size_t k = 0; k < offsets.size(); ++k) {
      if (count < 0 || static_cast<int64_t>(k) < count)
        out += to;
      if (k + 1 < offsets.size())
        out.append(s, offsets[k], offsets[k + 1] - offsets[k]);
      interp.checkSize(out.size());
    }
    return Value(std::move(out));
  }
  size_t start = 0;
  for (int64_t k = 0; count < 0 || k < count; ++k) {
    size_t at = s.find(from, start);
    if (at == std::string::npos)
      break;
    out.append(s, start, at - start);
    out += to;
    interp.checkSize(out.size());
    start = at + from.size();
  }
  out.append(s, start, std::string::npos);
  return Value(std::move(out));
}

Value fDefault(Interpreter &interp, const Value &v, CallArgs &args) {
  ArgBinder a(interp, "default", args, {"default_value", "boolean"});
  bool boolean = a.has(1) && a[1].truthy();
  if (v.isUndefined() || (boolean && !v.truthy()))
    return a.get(0, Value(""));
  return v;
}

Value fItems(Interpreter &interp, const Value &v, CallArgs &) {
  if (v.isUndefined())
    return Value::list({});
  if (!v.isDict())
    interp.fail("Can only get item pairs from a mapping.");
  std::vector<Value> out;
  for (const auto &[k, x] : v.asDict().entries)
    out.push_back(Value::list({k, x}, true));
  return Value::list(std::move(out));
}

Value fList(Interpreter &interp, const Value &v, CallArgs &) {
  return Value::list(interp.iterate(v));
}

Value fFirst(Interpreter &interp, const Value &v, CallArgs &) {
  std::vector<Value> items = interp.iterate(v);
  return items.empty() ? Value::undefined("No first item, sequence was empty.") : items.front();
}

Value fLast(Interpreter &interp, const Value &v, CallArgs &) {
  std::vector<Value> items = interp.iterate(v);
  return items.empty() ? Value::undefined("No last item, sequence was empty.") : items.back();
}

Value fJoin(Interpreter &interp, const Value &v, CallArgs &args) {
  ArgBinder a(interp, "join", args, {"d", "attribute"});
  std::string sep = a.has(0) ? a[0].str() : "", out;
  bool first = true;
  for (const Value &item : interp.iterate(v)) {
    Value x = a.has(1) && !a[1].isNone() ? attributeOf(interp, item, a[1].str()) : item;
    out += (first ? "" : sep) + x.str();
    first = false;
    interp.checkSize(out.size());
  }
  return Value(std::move(out));
}

Value fReverse(Interpreter &interp, const Value &v, CallArgs &) {
  std::vector<Value> items = interp.iterate(v);
  std::reverse(items.begin(), items.end());
  if (!v.isString())
    return Value::list(std::move(items));
  std::string out;
  for (const Value &c : items)
    out += c.asString();
  return Value(std::move(out));
}

/// select/reject (attribute empty) and selectattr/rejectattr.
Value selectItems(Interpreter &interp, const Value &v, CallArgs &args, bool byAttribute,
                  bool keep) {
  std::vector<Value> positional = args.positional;
  std::string attribute;
  if (byAttribute) {
    if (positional.empty())
      interp.fail("selectattr/rejectattr need an attribute name");
    attribute = positional.front().str();
    positional.erase(positional.begin());
  }
  std::string test;
  if (!positional.empty()) {
    test = positional.front().str();
    positional.erase(positional.begin());
  }
  std::vector<Value> out;
  for (const Value &item : interp.iterate(v)) {
    Value x = byAttribute ? attributeOf(interp, item, attribute) : item;
    bool pass;
    if (test.empty()) {
      pass = x.truthy();
    } else {
      CallArgs testArgs{positional, args.keywords};
      pass = applyTest(interp, test, x, testArgs);
    }
    if (pass == keep)
      out.push_back(item);
  }
  return Value::list(std::move(out));
}

Value fSelect(Interpreter &i, const Value &v, CallArgs &a) { return selectItems(i, v, a, 0, 1); }
Value fReject(Interpreter &i, const Value &v, CallArgs &a) { return selectItems(i, v, a, 0, 0); }
Value fSelectattr(Interpreter &i, const Value &v, CallArgs &a) {
  return selectItems(i, v, a, 1, 1);
}
Value fRejectattr(Interpreter &i, const Value &v, CallArgs &a) {
  return selectItems(i, v, a, 1, 0);
}

Value fMap(Interpreter &interp, const Value &v, CallArgs &args) {
  std::vector<Value> out;
  const Value *attribute = nullptr, *fallback = nullptr;
  for (const auto &[k, x] : args.keywords) {
    if (k == "attribute")
      attribute = &x;
    else if (k == "default")
      fallback = &x;
  }
  for (const Value &item : interp.iterate(v)) {
    if (attribute) {
      Value x = attributeOf(interp, item, attribute->str());
      out.push_back(x.isUndefined() && fallback ? *fallback : x);
    } else {
      if (args.positional.empty())
        interp.fail("map requires a filter argument");
      CallArgs filterArgs{{args.positional.begin() + 1, args.positional.end()}, args.keywords};
      out.push_back(applyFilter(interp, args.positional[0].str(), item, filterArgs));
    }
  }
  return Value::list(std::move(out));
}

void sortValues(Interpreter &interp, std::vector<Value> &items, const Value &attribute,
                bool caseSensitive, bool reverse) {
  std::vector<std::pair<Value, Value>> keyed;
  for (const Value &item : items)
    keyed.emplace_back(sortKey(interp, item, attribute, caseSensitive), item);
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto &x, const auto &y) {
    return reverse ? interp.less(y.first, x.first) : interp.less(x.first, y.first);
  });
  for (size_t i = 0; i < items.size(); ++i)
    items[i] = keyed[i].second;
}

Value fSort(Interpreter &interp, const Value &v, CallArgs &args) {
  ArgBinder a(interp, "sort", args, {"reverse", "case_sensitive", "attribute"});
  std::vector<Value> items = interp.iterate(v);
  sortValues(interp, items, a[2], a[1].truthy(), a[0].truthy());
  return Value::list(std::move(items));
}

Value fDictsort(Interpreter &interp, const Value &v, CallArgs &args) {
  ArgBinder a(interp, "dictsort", args, {"case_sensitive", "by", "reverse"});
  CallArgs none;
  Value pairs = fItems(interp, v, none);
  std::vector<Value> items = pairs.items();
  bool byValue = a.has(1) && a[1].str() == "value";
  std::stable_sort(items.begin(), items.end(), [&](const Value &x, const Value &y) {
    Value kx = sortKey(interp, x.items()[byValue], Value(), a[0].truthy());
    Value ky = sortKey(interp, y.items()[byValue], Value(), a[0].truthy());
    return a[2].truthy() ? interp.less(ky, kx) : interp.less(kx, ky);
  });
  return Value::list(std::move(items));
}

Value fUnique(Interpreter &interp, const Value &v, CallArgs &args) {
  ArgBinder a(interp, "unique", args, {"case_sensitive", "attribute"});
  std::vector<Value> out, seen;
  for (const Value &item : interp.iterate(v)) {
    Value key = sortKey(interp, item, a[1], a[0].truthy());
    if (std::none_of(seen.begin(), seen.end(), [&](const Value &s) { return s.equals(key); })) {
      seen.push_back(key);
      out.push_back(item);
    }
  }
  return Value::list(std::move(out));
}

Value minMax(Interpreter &interp, const Value &v, CallArgs &args, bool max) {
  ArgBinder a(interp, max ? "max" : "min", args, {"case_sensitive", "attribute"});
  std::vector<Value> items = interp.iterate(v);
  if (items.empty())
    return Value::undefined("No aggregated item, sequence was empty.");
  size_t best = 0;
  for (size_t i = 1; i < items.size(); ++i) {
    Value ki = sortKey(interp, items[i], a[1], a[0].truthy());
    Value kb = sortKey(interp, items[best], a[1], a[0].truthy());
    if (max ? interp.less(kb, ki) : interp.less(ki, kb))
      best = i;
  }
  return items[best];
}
Value fMax(Interpreter &i, const Value &v, CallArgs &a) { return minMax(i, v, a, true); }
Value fMin(Interpreter &i, const Value &v, CallArgs &a) { return minMax(i, v, a, false); }

Value fSum(Interpreter &interp, const Value &v, CallArgs &args) {
  ArgBinder a(interp, "sum", args, {"attribute", "start"});
  Value total = a.get(1, Value(0));
  for (const Value &item : interp.iterate(v))
    total = interp.binary(
        "+", total, a.has(0) && !a[0].isNone() ? attributeOf(interp, item, a[0].str()) : item);
  return total;
}

Value fIndent(Interpreter &interp, const Value &v, CallArgs &args) {
  ArgBinder a(interp, "indent", args, {"width", "first", "blank"});
  std::string indentation =
      a.has(0) && a[0].isString()
          ? a[0].asString()
          : std::string(a.has(0) ? std::max<int64_t>(a[0].asInt(), 0) : 4, ' ');
  std::string s = v.str() + "\n";
  CallArgs none;
  Value lines = getMethod(interp, Value(s), "splitlines");
  std::vector<Value> parts = interp.call(lines, none).items();
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    const std::string &line = parts[i].asString();
    if (i == 0)
      out += line;
    else
      out += "\n" + (line.empty() && !a[2].truthy() ? "" : indentation) + line;
    interp.checkSize(out.size());
  }
  if (a[1].truthy())
    out = indentation + out;
  return Value(std::move(out));
}

Value fEscape(Interpreter &, const Value &v, CallArgs &) {
  return Value(escapeMarkup(v.str(), "&#34;"));
}

Value fWordcount(Interpreter &, const Value &v, CallArgs &) {
  std::string s = v.str();
  int64_t words = 0;
  bool inWord = false;
  for (size_t i = 0, n = 0; i < s.size(); i += n) {
    char32_t c = decodeUtf8(s, i, n);
    bool word = c >= 0x80 ? !isPythonSpace(c) : (std::isalnum(static_cast<int>(c)) || c == '_');
    if (word && !inWord)
      ++words;
    inWord = word;
  }
  return Value(words);
}

Value fAttr(Interpreter &interp, const Value &v, CallArgs &args) {
  ArgBinder a(interp, "attr", args, {"name"}, 1);
  return interp.getAttr(v, a[0].str());
}

const std::map<std::string, Filter> &filters() {
  static const std::map<std::string, Filter> table = {
      {"abs", filterAbs},
      {"attr", fAttr},
      {"capitalize", fCapitalize},
      {"count", fLength},
      {"d", fDefault},
      {"default", fDefault},
      {"dictsort", fDictsort},
      {"e", fEscape},
      {"escape", fEscape},
      {"first", fFirst},
      {"float", filterFloat},
      {"forceescape", fEscape},
      {"format", filterFormat},
      {"indent", fIndent},
      {"int", filterInt},
      {"items", fItems},
      {"join", fJoin},
      {"last", fLast},
      {"length", fLength},
      {"list", fList},
      {"lower", fLower},
      {"map", fMap},
      {"max", fMax},
      {"min", fMin},
      {"reject", fReject},
      {"rejectattr", fRejectattr},
      {"replace", fReplace},
      {"reverse", fReverse},
      {"round", filterRound},
      {"safe", fString},
      {"select", fSelect},
      {"selectattr", fSelectattr},
      {"sort", fSort},
      {"string", fString},
      {"sum", fSum},
      {"title", fTitle},
      {"tojson", fTojson},
      {"trim", fTrim},
      {"unique", fUnique},
      {"upper", fUpper},
      {"wordcount", fWordcount},
  };
  return table;
}

} // namespace

bool hasFilter(const std::string &name) { return filters().count(name) != 0; }

Value applyFilter(Interpreter &interp, const std::string &name, const Value &subject,
                  CallArgs &args) {
  auto it = filters().find(name);
  if (it == filters().end())
    interp.fail("no filter named '" + name + "'");
  return it->second(interp, subject, args);
}

} // namespace quill::jinja
