// A conversation kept in the KV cache: each turn's prompt (the whole
// conversation, rendered and tokenized again) is prefilled only past the
// longest prefix the cache already holds from the turns before.
#pragma once

#include "runtime/decode/Generator.h"

#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

namespace quill {

class ChatSession {
public:
  /// `generator` runs on `cache`, which this session then owns the contents
  /// of: nothing else may run on it between turns.
  ChatSession(Generator &generator, const KVCache &cache) : generator_(generator), cache_(cache) {}

  struct Turn {
    GenerationResult result;
    int32_t reused = 0;    ///< Prompt tokens the cache already held.
    int32_t prefilled = 0; ///< Prompt tokens run now.
  };

  /// Generates the reply to `promptTokens` (request.promptTokens is
  /// replaced by them): the cache is cut back to the longest common prefix
  /// of what it holds and the prompt (at least one token is always run, for
  /// the logits), and the rest is prefilled. Afterwards the cache holds the
  /// prompt and every reply token fed back (not an end token, which is never
  /// fed). After an error the next turn starts from an empty cache.
  ErrorOr<Turn> reply(std::vector<int32_t> promptTokens, GenerationRequest request,
                      const std::function<void(std::string_view)> &onText = {});

  /// The token at each position the cache holds, in order.
  const std::vector<int32_t> &cachedTokens() const { return cached_; }

private:
  Generator &generator_;
  const KVCache &cache_;
  std::vector<int32_t> cached_;
};

} // namespace quill
