// One-line, bounded error messages.
#include "compiler/Import/Diagnostics.h"

#include <cstdio>

namespace quill {

std::string oneLine(const std::string &message) {
  std::string out;
  for (unsigned char c : message) {
    if (out.size() >= kMaxMessageBytes) {
      out += "...";
      break;
    }
    if (c < 0x20 || c == 0x7F) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\x%02X", c);
      out += escaped;
    } else {
      out += char(c);
    }
  }
  return out;
}

Status oneLine(const Status &status) {
  return status ? status : Status::error(oneLine(status.message()));
}

} // namespace quill
