// The OpenAI response shapes: whole completions, stream chunks, logprobs.
// Every string is well-formed UTF-8 (a token's broken bytes read U+FFFD in
// its "token" text; its exact bytes are in "bytes").
#pragma once

#include "ChoiceDelta.h"

#include "runtime/tokenizer/Tokenizer.h"

#include <nlohmann/json.hpp>

namespace quill::serve {

using json = nlohmann::json;

/// What every object of one response shares.
struct ResponseHeader {
  bool chat = false;
  std::string id; ///< "cmpl-..." or "chatcmpl-...".
  int64_t created = 0;
  std::string model;
};

/// The JSON text of `value`, never throwing on bad UTF-8 (replaced).
std::string dumpJson(const json &value);

/// A choice's logprobs for `delta`'s tokens: chat's {"content": [...]} or
/// the legacy {"tokens", "token_logprobs", "top_logprobs", "text_offset"}
/// (offsets from `textOffset`, the bytes of text before the delta).
json logprobsJson(bool chat, const ChoiceDelta &delta, const Tokenizer &tokenizer,
                  int64_t textOffset);

/// One stream chunk for `delta` (chat: with the role on a choice's first).
json chunkJson(const ResponseHeader &header, const ChoiceDelta &delta, bool withLogprobs,
               bool firstOfChoice, const Tokenizer &tokenizer, int64_t textOffset);

/// The last chunk of stream_options.include_usage: no choices, the usage.
json usageChunkJson(const ResponseHeader &header, const Usage &usage);

/// A whole (non-streamed) response; `choices` holds each choice's whole
/// delta (its text, tokens, logprobs and finish reason), in choice order.
json completionJson(const ResponseHeader &header, const std::vector<ChoiceDelta> &choices,
                    bool withLogprobs, const Usage &usage, const Tokenizer &tokenizer);

json usageJson(const Usage &usage);

} // namespace quill::serve
