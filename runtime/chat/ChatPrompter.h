// A model's chat prompts: its template (the artifact's, or one given by the
// user), the text of its special tokens, and the clock strftime_now reads.
// Shared by quill-run's chat modes and quill-serve's chat completions.
#pragma once

#include "runtime/artifact/Artifact.h"
#include "runtime/chat/ChatTemplate.h"
#include "runtime/tokenizer/Tokenizer.h"

namespace quill {

class ChatPrompter {
public:
  /// The template of `templateFile` when given, else the artifact's; an
  /// error naming the artifact when it has none. QUILL_CHAT_NOW (seconds
  /// since the epoch) fixes the clock.
  static ErrorOr<ChatPrompter> load(const std::string &templateFile, const Artifact &artifact,
                                    const Tokenizer &tokenizer);

  /// `input` rendered, with the model's BOS and EOS text and the clock.
  ErrorOr<std::string> render(ChatRenderInput input) const;

private:
  ChatPrompter(ChatTemplate chatTemplate, std::string bosToken, std::string eosToken,
               std::optional<std::time_t> now)
      : chatTemplate_(std::move(chatTemplate)), bosToken_(std::move(bosToken)),
        eosToken_(std::move(eosToken)), now_(now) {}

  ChatTemplate chatTemplate_;
  std::string bosToken_, eosToken_;
  std::optional<std::time_t> now_;
};

} // namespace quill
