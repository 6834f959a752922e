// Loading a chat template for a model and rendering its prompts.
#include "runtime/chat/ChatPrompter.h"

#include "runtime/artifact/ArtifactFormat.h"
#include "runtime/support/ReadFile.h"

#include <cerrno>
#include <cstdlib>

namespace quill {

namespace {

/// QUILL_CHAT_NOW: the fixed clock strftime_now reads, when set.
ErrorOr<std::optional<std::time_t>> fixedClock() {
  const char *text = std::getenv("QUILL_CHAT_NOW");
  if (!text)
    return std::optional<std::time_t>();
  errno = 0;
  char *end = nullptr;
  long long seconds = std::strtoll(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0')
    return Status::error(std::string("invalid QUILL_CHAT_NOW '") + text +
                         "': expected seconds since the epoch");
  return std::optional<std::time_t>(static_cast<std::time_t>(seconds));
}

/// The text of a special token for the template: its piece, or "" when the
/// model has no such token.
std::string specialTokenText(const Tokenizer &tokenizer, int32_t id) {
  return id >= 0 && id < tokenizer.vocabSize() ? tokenizer.piece(id) : std::string();
}

} // namespace

ErrorOr<ChatPrompter> ChatPrompter::load(const std::string &templateFile, const Artifact &artifact,
                                         const Tokenizer &tokenizer) {
  std::string source, name;
  if (!templateFile.empty()) {
    auto text = readSmallFile(templateFile, kMaxChatTemplateBytes, "chat template");
    if (!text)
      return text.status();
    if (Status s = checkChatTemplateText(*text); !s)
      return Status::error(templateFile + ": " + s.message());
    source = text.take();
    name = templateFile;
  } else if (artifact.chatTemplate()) {
    source = *artifact.chatTemplate();
    name = artifact.path() + " (chat template)";
  } else {
    return Status::error(artifact.path() +
                         ": the model has no chat template; give one with --chat-template FILE "
                         "(or compile one in with quill-compile --chat-template)");
  }
  auto parsed = ChatTemplate::parse(std::move(source), name);
  if (!parsed)
    return parsed.status();
  auto now = fixedClock();
  if (!now)
    return now.status();
  const ModelConfig &config = artifact.config();
  return ChatPrompter(parsed.take(), specialTokenText(tokenizer, config.bosId),
                      specialTokenText(tokenizer, config.eosId), *now);
}

ErrorOr<std::string> ChatPrompter::render(ChatRenderInput input) const {
  input.bosToken = bosToken_;
  input.eosToken = eosToken_;
  input.now = now_;
  return chatTemplate_.render(input);
}

} // namespace quill
