// JSON string quoting and numbers.
#include "runtime/support/Json.h"

#include "runtime/support/Utf8.h"

#include <cmath>
#include <cstdio>

namespace quill {

std::string jsonQuote(std::string_view text) {
  std::string out = "\"";
  for (size_t i = 0; i < text.size();) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    Utf8Scan scan = scanUtf8(text, i);
    size_t n = scan.length;
    char buf[8];
    if (!scan.valid) { // JSON text is UTF-8: ill-formed bytes become U+FFFD.
      out += kReplacementCharacter;
      i += n;
      continue;
    }
    if (n == 1) {
      switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (c < 0x20) {
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
      }
    } else {
      out.append(text.substr(i, n));
    }
    i += n;
  }
  return out + "\"";
}

std::string jsonNumber(double x) {
  if (!std::isfinite(x))
    return "null";
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.17g", x);
  return buffer;
}

} // namespace quill
