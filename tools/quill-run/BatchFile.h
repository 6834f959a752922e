// --batch-file's format: one prompt per line.
#pragma once

#include "runtime/support/Error.h"

#include <string>
#include <string_view>
#include <vector>

namespace quill {

/// The prompts of a batch file's text: one per line, a "\r\n" ending read
/// as "\n", and a final newline not starting another prompt. Empty lines
/// are prompts too (generation from BOS).
std::vector<std::string> splitPrompts(std::string_view text);

/// Reads `path` (a regular file, at most kMaxBatchFileBytes) and splits it;
/// a file without prompts is an error naming it.
ErrorOr<std::vector<std::string>> readPrompts(const std::string &path);

} // namespace quill
