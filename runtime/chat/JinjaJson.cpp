// JSON into and out of template values (see JinjaJson.h).
#include "runtime/chat/JinjaJson.h"

#include "runtime/support/Json.h"

#include "runtime/chat/JinjaInterpreter.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>

namespace quill::jinja {
namespace {

/// Deeper JSON nesting than this is refused before parsing (the parser and
/// the converter recurse).
constexpr int kMaxJsonDepth = 256;

using Json = nlohmann::ordered_json;

Value fromJson(const Json &j) {
  switch (j.type()) {
  case Json::value_t::null:
    return Value::none();
  case Json::value_t::boolean:
    return Value(j.get<bool>());
  case Json::value_t::number_integer:
    return Value(j.get<int64_t>());
  case Json::value_t::number_unsigned: {
    uint64_t u = j.get<uint64_t>();
    if (u > static_cast<uint64_t>(INT64_MAX))
      return Value(static_cast<double>(u));
    return Value(static_cast<int64_t>(u));
  }
  case Json::value_t::number_float:
    return Value(j.get<double>());
  case Json::value_t::string:
    return Value(j.get<std::string>());
  case Json::value_t::array: {
    std::vector<Value> items;
    items.reserve(j.size());
    for (const auto &x : j)
      items.push_back(fromJson(x));
    return Value::list(std::move(items));
  }
  case Json::value_t::object: {
    std::vector<std::pair<Value, Value>> entries;
    entries.reserve(j.size());
    for (const auto &[k, x] : j.items())
      entries.emplace_back(Value(k), fromJson(x));
    return Value::dict(std::move(entries));
  }
  default:
    return Value::none();
  }
}

/// A string as json.dumps(ensure_ascii=False) writes it (jsonQuote's
/// escapes are Python's).
void writeString(std::string &out, const std::string &s) { out += jsonQuote(s); }

struct JsonWriter {
  Interpreter &interp;
  std::optional<int> indent;
  const std::string &itemSep;
  const std::string &keySep;
  bool sortKeys;
  std::string out;

  void newline(int level) {
    if (indent)
      out += "\n" + std::string(static_cast<size_t>(std::max(*indent, 0) * level), ' ');
  }

  void writeFloat(double d) {
    if (std::isnan(d))
      out += "NaN";
    else if (std::isinf(d))
      out += d < 0 ? "-Infinity" : "Infinity";
    else
      out += formatPythonFloat(d);
  }

  std::string keyText(const Value &k) {
    if (k.isString())
      return k.asString();
    if (k.isBool())
      return k.asBool() ? "true" : "false";
    if (k.isInt())
      return std::to_string(k.asInt());
    if (k.isNone())
      return "null";
    if (k.isFloat()) {
      std::string saved;
      std::swap(saved, out);
      writeFloat(k.asFloat());
      std::swap(saved, out);
      return saved;
    }
    interp.fail("keys must be str, int, float, bool or None, not " + k.pythonTypeName());
  }

  void write(const Value &v, int level) {
    if (level > kMaxJsonDepth)
      interp.fail("tojson: value nested too deeply");
    interp.checkSize(out.size());
    switch (v.kind()) {
    case Value::Kind::None:
      out += "null";
      return;
    case Value::Kind::Bool:
      out += v.asBool() ? "true" : "false";
      return;
    case Value::Kind::Int:
      out += std::to_string(v.asInt());
      return;
    case Value::Kind::Float:
      writeFloat(v.asFloat());
      return;
    case Value::Kind::String:
      writeString(out, v.asString());
      return;
    case Value::Kind::List: {
      if (v.items().empty()) {
        out += "[]";
        return;
      }
      out += '[';
      for (size_t i = 0; i < v.items().size(); ++i) {
        if (i)
          out += itemSep;
        newline(level + 1);
        write(v.items()[i], level + 1);
      }
      newline(level);
      out += ']';
      return;
    }
    case Value::Kind::Dict: {
      std::vector<std::pair<std::string, const Value *>> entries;
      for (const auto &[k, x] : v.asDict().entries)
        entries.emplace_back(keyText(k), &x);
      if (entries.empty()) {
        out += "{}";
        return;
      }
      if (sortKeys)
        std::stable_sort(entries.begin(), entries.end(),
                         [](const auto &a, const auto &b) { return a.first < b.first; });
      out += '{';
      for (size_t i = 0; i < entries.size(); ++i) {
        if (i)
          out += itemSep;
        newline(level + 1);
        writeString(out, entries[i].first);
        out += keySep;
        write(*entries[i].second, level + 1);
      }
      newline(level);
      out += '}';
      return;
    }
    default:
      interp.fail("Object of type " + v.pythonTypeName() + " is not JSON serializable");
    }
  }
};

/// The deepest bracket nesting of a JSON text, outside strings.
int jsonDepth(std::string_view text) {
  int depth = 0, deepest = 0;
  bool inString = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (inString) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        inString = false;
    } else if (c == '"') {
      inString = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return deepest;
}

} // namespace

ErrorOr<Value> valueFromJson(std::string_view text) {
  if (jsonDepth(text) > kMaxJsonDepth)
    return Status::error("JSON nested more than " + std::to_string(kMaxJsonDepth) + " deep");
  try {
    return fromJson(Json::parse(text.begin(), text.end()));
  } catch (const nlohmann::json::exception &e) {
    std::string message = e.what();
    // "[json.exception.parse_error.101] parse error at line 1, column 2: ..."
    size_t bracket = message.find("] ");
    if (bracket != std::string::npos)
      message.erase(0, bracket + 2);
    return Status::error(message);
  }
}

std::string toJson(Interpreter &interp, const Value &v, std::optional<int> indent,
                   const std::string &itemSeparator, const std::string &keySeparator,
                   bool sortKeys) {
  JsonWriter writer{interp, indent, itemSeparator, keySeparator, sortKeys, {}};
  writer.write(v, 0);
  return std::move(writer.out);
}

} // namespace quill::jinja
