// Keeping importer errors to one readable line whatever the input holds.
#pragma once

#include "runtime/support/Error.h"

#include <string>

namespace quill {

/// Error messages quote names read from the files (keys, tensor names,
/// tokens), which a corrupt file can fill with anything. This escapes
/// control bytes as \xNN, so a message stays one line, and shortens it to
/// kMaxMessageBytes.
std::string oneLine(const std::string &message);
constexpr size_t kMaxMessageBytes = 1000;

/// `status` with oneLine applied to its message (ok stays ok).
Status oneLine(const Status &status);

} // namespace quill
