// A minimal JSON writer for quill-run's machine-readable output.
#pragma once

#include <string>
#include <string_view>

namespace quill {

/// `text` as a quoted JSON string: control characters escaped (\n, \t, \b,
/// ... as Python's json.dumps writes them, the rest as \u00XX), ill-formed
/// UTF-8 replaced by U+FFFD (see Utf8.h), so the output is always valid
/// JSON in UTF-8.
std::string jsonQuote(std::string_view text);

/// `x` as a JSON number that reads back as the same double (%.17g), or
/// null where it is not finite (JSON has no infinity or NaN).
std::string jsonNumber(double x);

} // namespace quill
