// Prefix reuse across the turns of a conversation.
#include "runtime/decode/ChatSession.h"

#include <algorithm>

namespace quill {

ErrorOr<ChatSession::Turn> ChatSession::reply(std::vector<int32_t> promptTokens,
                                              GenerationRequest request,
                                              const std::function<void(std::string_view)> &onText) {
  if (promptTokens.empty())
    return Status::error("the chat prompt has no tokens");
  // What the cache holds, checked against its length: another user of the
  // cache would make the record stale.
  if (static_cast<int32_t>(cached_.size()) != cache_.length())
    cached_.clear();
  size_t common =
      std::mismatch(cached_.begin(), cached_.end(), promptTokens.begin(), promptTokens.end())
          .first -
      cached_.begin();
  // The last prompt token runs again when all of it is cached: its logits
  // are the ones to sample from.
  common = std::min(common, promptTokens.size() - 1);
  request.promptTokens = std::move(promptTokens);
  cached_.clear(); // Unknown until the turn succeeds.
  auto result = common == 0 ? generator_.generate(request, onText)
                            : generator_.generateAfter(request, int32_t(common), onText);
  if (!result)
    return result.status();
  Turn turn;
  turn.reused = int32_t(common);
  turn.prefilled = int32_t(result->promptTokens.size() - common);
  // The prompt, then the reply tokens fed back (decodeSteps of them: the
  // last sampled token is not fed when the reply stopped on it).
  cached_ = result->promptTokens;
  cached_.insert(cached_.end(), result->tokens.begin(),
                 result->tokens.begin() +
                     std::min<size_t>(result->tokens.size(), size_t(result->decodeSteps)));
  turn.result = result.take();
  return turn;
}

} // namespace quill
