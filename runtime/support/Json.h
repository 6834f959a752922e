// A minimal JSON writer for quill-run's machine-readable output.
#pragma once

#include <string>
#include <string_view>

namespace quill {

/// `text` as a quoted JSON string (control characters and invalid UTF-8
/// bytes escaped, so the output is always valid JSON).
std::string jsonQuote(std::string_view text);

} // namespace quill
