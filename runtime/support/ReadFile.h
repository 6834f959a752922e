// Reading a whole small file (JSON, a tokenizer, a batch file) into memory,
// with the limits checked before anything is allocated.
#pragma once

#include "runtime/support/Error.h"

#include <cstdint>
#include <string>

namespace quill {

/// Caps on what is read whole: far above any real file of the kind, far
/// below what would exhaust memory.
constexpr uint64_t kMaxJsonFileBytes = uint64_t(256) << 20;
constexpr uint64_t kMaxTokenizerFileBytes = uint64_t(256) << 20;
constexpr uint64_t kMaxBatchFileBytes = uint64_t(64) << 20;
constexpr uint64_t kMaxEvalTextBytes = uint64_t(256) << 20; ///< quill-run --perplexity.
/// A chat template (real ones are a few to a few tens of KB), in a model
/// file, an artifact or given with --chat-template.
constexpr uint64_t kMaxChatTemplateBytes = uint64_t(1) << 20;

/// The bytes of `path`, a regular file of at most `maxBytes` bytes; `what`
/// names the file's role in the errors ("<path>: <what> is a directory, not
/// a file", "<path>: <what> is N bytes, more than the limit of M").
ErrorOr<std::string> readSmallFile(const std::string &path, uint64_t maxBytes,
                                   const std::string &what);

} // namespace quill
