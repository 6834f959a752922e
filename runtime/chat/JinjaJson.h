// JSON into and out of template values: parsing the messages/tools a caller
// passes (key order kept, as Python's json.loads keeps it) and Python's
// json.dumps for HF's `tojson` filter.
#pragma once

#include "runtime/chat/JinjaValue.h"
#include "runtime/support/Error.h"

#include <optional>
#include <string>
#include <string_view>

namespace quill::jinja {

class Interpreter;

/// The value of a JSON text; or "line L, column C: what is wrong".
ErrorOr<Value> valueFromJson(std::string_view text);

/// Python's json.dumps(v, ensure_ascii=False, indent=indent,
/// separators=(itemSeparator, keySeparator), sort_keys=sortKeys).
/// A value JSON cannot hold (undefined, a macro) fails as Python's does.
std::string toJson(Interpreter &interp, const Value &v, std::optional<int> indent,
                   const std::string &itemSeparator, const std::string &keySeparator,
                   bool sortKeys);

} // namespace quill::jinja
