// Reading chat templates from model files and template files.
#include "compiler/Import/ChatTemplateImport.h"

#include "compiler/Import/JsonValue.h"
#include "runtime/artifact/ArtifactFormat.h"
#include "runtime/chat/ChatTemplate.h"
#include "runtime/support/ReadFile.h"

#include <filesystem>

namespace quill {

namespace {

/// The template of `source` after the checks every stored template passes.
ErrorOr<std::optional<ImportedChatTemplate>> checked(std::string text, std::string source) {
  if (Status s = checkChatTemplateText(text); !s)
    return Status::error(source + ": " + s.message());
  return std::optional<ImportedChatTemplate>(
      ImportedChatTemplate{std::move(text), std::move(source)});
}

} // namespace

ErrorOr<std::optional<ImportedChatTemplate>> chatTemplateFromGguf(const GgufFile &file) {
  const std::string source = file.path() + " tokenizer.chat_template";
  const GgufValue *value = file.find("tokenizer.chat_template");
  if (!value)
    return std::optional<ImportedChatTemplate>();
  const std::string *text = value->asString();
  if (!text)
    return Status::error(source + " is " + ggufTypeName(value->type) + ", not a string");
  return checked(*text, source);
}

ErrorOr<std::optional<ImportedChatTemplate>>
chatTemplateFromHfDirectory(const std::string &directory) {
  const std::string path = (std::filesystem::path(directory) / "tokenizer_config.json").string();
  std::error_code ignored;
  if (!std::filesystem::exists(path, ignored))
    return std::optional<ImportedChatTemplate>();
  auto json = parseJsonFile(path);
  if (!json)
    return json.status();
  const JsonValue *value = json->find("chat_template");
  if (!value || value->isNull())
    return std::optional<ImportedChatTemplate>();
  const std::string source = path + " chat_template";
  if (const std::string *text = value->asString())
    return checked(*text, source);
  const JsonArray *list = value->asArray();
  if (!list)
    return Status::error(source + " is " + jsonKindName(value->kind()) +
                         ", not a string or a list of named templates");
  // Named templates ("default", "tool_use", "rag"): HF's apply_chat_template
  // takes "default" when no name is asked for.
  const JsonValue *chosen = nullptr;
  std::string chosenName;
  for (size_t i = 0; i < list->size(); ++i) {
    const JsonValue &entry = (*list)[i];
    const JsonValue *name = entry.find("name");
    const JsonValue *text = entry.find("template");
    if (!name || !name->isString() || !text || !text->isString())
      return Status::error(source + " entry " + std::to_string(i) +
                           " is not an object with a string \"name\" and \"template\"");
    if (!chosen || (*name->asString() == "default" && chosenName != "default")) {
      chosen = text;
      chosenName = *name->asString();
    }
  }
  if (!chosen)
    return Status::error(source + " is an empty list");
  return checked(*chosen->asString(), source + " \"" + chosenName + "\"");
}

ErrorOr<ImportedChatTemplate> readChatTemplateFile(const std::string &path) {
  auto text = readSmallFile(path, kMaxChatTemplateBytes, "chat template");
  if (!text)
    return text.status();
  auto stored = checked(text.take(), path);
  if (!stored)
    return stored.status();
  if (auto parsed = ChatTemplate::parse((*stored)->text, path); !parsed)
    return parsed.status();
  return std::move(**stored);
}

ErrorOr<std::optional<ImportedChatTemplate>> artifactChatTemplate(const ModelSource &model,
                                                                  const std::string &overridePath) {
  if (overridePath.empty())
    return model.chatTemplate();
  auto given = readChatTemplateFile(overridePath);
  if (!given)
    return given.status();
  given->source = overridePath + " (--chat-template)";
  return std::optional<ImportedChatTemplate>(given.take());
}

void describeChatTemplate(const std::optional<ImportedChatTemplate> &chatTemplate,
                          std::ostream &out) {
  if (!chatTemplate) {
    out << "chat template: none (quill-run --chat needs --chat-template)\n";
    return;
  }
  out << "chat template: " << chatTemplate->text.size() << " bytes, from " << chatTemplate->source
      << "\n";
  if (auto parsed = ChatTemplate::parse(chatTemplate->text, "it"); !parsed)
    out << "  (Quill cannot parse it: " << parsed.message() << ")\n";
}

} // namespace quill
