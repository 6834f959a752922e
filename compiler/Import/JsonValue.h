// A small JSON reader (RFC 8259) for the Hugging Face files the importers
// read: config.json, tokenizer.json, safetensors headers and their index.
// MLIR-free; recursion is bounded, so hostile input cannot overflow the stack.
#pragma once

#include "runtime/support/Error.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace quill {

class JsonValue;
using JsonArray = std::vector<JsonValue>;
/// Members in file order; keys may repeat (find() returns the last, as
/// Python's json module does, and callers that care check for repeats).
using JsonObject = std::vector<std::pair<std::string, JsonValue>>;

/// A JSON number: the double, and the exact integer when the text was one
/// (no fraction or exponent) that fits int64.
struct JsonNumber {
  double value = 0;
  std::optional<int64_t> integer;
};

/// One parsed JSON value.
class JsonValue {
public:
  enum class Kind { Null, Bool, Number, String, Array, Object };

  JsonValue() = default;
  explicit JsonValue(bool b) : value_(b) {}
  explicit JsonValue(JsonNumber n) : value_(n) {}
  explicit JsonValue(std::string s) : value_(std::move(s)) {}
  explicit JsonValue(JsonArray a) : value_(std::move(a)) {}
  explicit JsonValue(JsonObject o) : value_(std::move(o)) {}

  Kind kind() const { return Kind(value_.index()); }
  bool isNull() const { return kind() == Kind::Null; }
  bool isBool() const { return kind() == Kind::Bool; }
  bool isNumber() const { return kind() == Kind::Number; }
  bool isString() const { return kind() == Kind::String; }
  bool isArray() const { return kind() == Kind::Array; }
  bool isObject() const { return kind() == Kind::Object; }

  /// The typed contents, or null when the value is of another kind.
  const bool *asBool() const { return std::get_if<bool>(&value_); }
  const JsonNumber *asNumber() const { return std::get_if<JsonNumber>(&value_); }
  const std::string *asString() const { return std::get_if<std::string>(&value_); }
  const JsonArray *asArray() const { return std::get_if<JsonArray>(&value_); }
  const JsonObject *asObject() const { return std::get_if<JsonObject>(&value_); }
  /// The exact integer, when this is an integral number.
  std::optional<int64_t> asInteger() const;

  /// The member `key` of an object (the last one when repeated), or null
  /// when this is not an object or has no such member.
  const JsonValue *find(std::string_view key) const;

private:
  std::variant<std::monostate, bool, JsonNumber, std::string, JsonArray, JsonObject> value_;
};

/// "null", "a boolean", "a number", "a string", "an array", "an object".
const char *jsonKindName(JsonValue::Kind kind);

/// Nesting deeper than this is refused (real files nest a few levels).
constexpr int kMaxJsonDepth = 64;

/// Parses one JSON document (surrounding white space allowed). Errors read
/// "<sourceName>: invalid JSON at line L, column C: <what>".
ErrorOr<JsonValue> parseJson(std::string_view text, const std::string &sourceName);

/// Reads and parses a whole file; errors name the path.
ErrorOr<JsonValue> parseJsonFile(const std::string &path);

} // namespace quill
