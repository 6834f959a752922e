// Escaping text for HTML and XML: the five characters with a meaning in
// markup become entities. Shared by the reports' pages and the chat
// templates' `escape` filter, which spell a double quote differently.
#pragma once

#include <string>
#include <string_view>

namespace quill {

/// `text` with &, <, >, " and ' as entities, byte by byte (the bytes of
/// other characters pass as they are); `quote` is the entity for '"'
/// ("&quot;", or Jinja's "&#34;").
std::string escapeMarkup(std::string_view text, std::string_view quote = "&quot;");

} // namespace quill
