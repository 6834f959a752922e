// The user-facing knobs of token sampling and their validation.
#pragma once

#include "runtime/support/Error.h"

#include <cstdint>
#include <string>

namespace quill {

/// How to turn a step's logits into the next token. Defaults are plain
/// multinomial sampling at temperature 1.
struct SamplingParams {
  float temperature = 1.0f; ///< 0 = greedy argmax; otherwise logits / T.
  int32_t topK = 0;         ///< Keep the K most likely tokens; 0 = off.
  float topP =
      1.0f; ///< Keep the smallest nucleus whose mass exceeds P; 1 = off.
  uint64_t seed = 0; ///< Seeds the draw; the same seed repeats a run.
};

/// Checks ranges; the message names the flag, e.g.
/// "invalid --top-p 1.5: must be in (0, 1]".
Status validate(const SamplingParams &params);

/// Formats a parameter value as messages and SamplerChain::describe() show
/// it: shortest-ish %g form ("0.9", "1.5", "nan").
std::string formatParam(float value);

} // namespace quill
