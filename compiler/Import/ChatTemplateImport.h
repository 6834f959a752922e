// Where a model's chat template comes from: GGUF metadata, Hugging Face's
// tokenizer_config.json, or a file given to quill-compile --chat-template.
#pragma once

#include "compiler/Import/GgufFile.h"
#include "compiler/Import/ModelSource.h"

#include <optional>
#include <ostream>
#include <string>

namespace quill {

/// tokenizer.chat_template of a GGUF file: none when absent; an error when
/// it is not a string, is larger than kMaxChatTemplateBytes or not UTF-8.
ErrorOr<std::optional<ImportedChatTemplate>> chatTemplateFromGguf(const GgufFile &file);

/// chat_template of `directory`/tokenizer_config.json: none when the file or
/// the key is absent (or null); a string, or a list of {"name", "template"}
/// objects of which "default" is taken, else the first. Errors are one line
/// naming the file.
ErrorOr<std::optional<ImportedChatTemplate>>
chatTemplateFromHfDirectory(const std::string &directory);

/// A template file (--chat-template), read whole under the size cap and
/// checked to parse, so that a syntax error shows at compile time.
ErrorOr<ImportedChatTemplate> readChatTemplateFile(const std::string &path);

/// The template an artifact of `model` carries: `overridePath`'s when not
/// empty, else the model's own (or none).
ErrorOr<std::optional<ImportedChatTemplate>> artifactChatTemplate(const ModelSource &model,
                                                                  const std::string &overridePath);

/// The --info line: "chat template: N bytes, from SOURCE" (with a note when
/// Quill cannot parse it), or "chat template: none".
void describeChatTemplate(const std::optional<ImportedChatTemplate> &chatTemplate,
                          std::ostream &out);

} // namespace quill
