// What the engine hands a request's HTTP handler as generation goes on: per
// choice, the text and tokens that are new since the last delta.
#pragma once

#include "runtime/sampling/Logprobs.h"

#include <cstdint>
#include <string>
#include <vector>

namespace quill::serve {

struct ChoiceDelta {
  int32_t choice = 0; ///< prompt * n + sample.
  std::string text;   ///< Well-formed UTF-8 (no character split).
  std::vector<int32_t> tokens;
  /// One per token when logprobs are recorded.
  std::vector<StepLogprobs> logprobs;
  /// The token before tokens[0] (for decoding its bytes).
  int32_t previousToken = -1;
  /// "stop" or "length" on a choice's last delta; "" before.
  std::string finishReason;
};

struct Usage {
  int64_t promptTokens = 0;
  int64_t completionTokens = 0;
};

} // namespace quill::serve
