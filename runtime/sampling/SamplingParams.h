// The user-facing knobs of token sampling, their validation, and the parsing
// of the knobs that are more than one number (the pass order, logit biases).
#pragma once

#include "runtime/support/Error.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace quill {

/// The logit processors whose order `--samplers` sets. The selector (greedy
/// or dist) is not among them: it always runs last.
enum class ProcessorKind { Penalties, TopK, TopP, MinP, Temperature };

/// "penalties", "top-k", "top-p", "min-p", "temperature": the --samplers
/// spelling.
const char *processorName(ProcessorKind kind);

/// penalties -> top-k -> top-p -> min-p -> temperature: the truncations cut
/// the model's own (temperature 1) distribution, and the temperature then
/// reshapes only what survived, as llama.cpp does by default.
std::vector<ProcessorKind> defaultProcessorOrder();

/// Which distribution --logprobs reports: the model's raw softmax, or the
/// one the selector draws from (after every logit processor).
enum class LogprobsMode { Raw, Processed };

/// "raw" or "processed".
const char *logprobsModeName(LogprobsMode mode);

/// One --logit-bias entry: `bias` is added to token `id`'s logit.
struct LogitBias {
  int32_t id;
  float bias; ///< Finite, or -inf to ban the token.
};

/// How to turn a step's logits into the next token. Defaults are plain
/// multinomial sampling at temperature 1 with every processor off. (The
/// first four fields keep their order: callers brace-initialize them.)
struct SamplingParams {
  float temperature = 1.0f; ///< 0 = greedy argmax; otherwise logits / T.
  int32_t topK = 0;         ///< Keep the K most likely tokens; 0 = off.
  float topP = 1.0f;        ///< Keep the smallest nucleus whose mass exceeds P; 1 = off.
  uint64_t seed = 0;        ///< Seeds the draw; the same seed repeats a run.
  /// Keep tokens with p >= minP * p_max; 0 = off.
  float minP = 0.0f;
  /// Over the last repeatLastN tokens (prompt included), each seen token's
  /// positive logit is divided by repeatPenalty and a negative one
  /// multiplied (llama.cpp's rule); then count * frequencyPenalty +
  /// presencePenalty is subtracted (OpenAI's rule). 1 / 0 / 0 = off.
  float repeatPenalty = 1.0f;
  int32_t repeatLastN = 64; ///< The penalties' window; 0 = penalties off.
  float frequencyPenalty = 0.0f;
  float presencePenalty = 0.0f;
  /// Added to the logits before anything else; an id listed twice gets the
  /// sum.
  std::vector<LogitBias> logitBias;
  /// The processors in the order they run; one whose knob is off is left
  /// out of the chain, and one not listed does not run.
  std::vector<ProcessorKind> order = defaultProcessorOrder();
  /// Report each token's log-probability and its topLogprobs best
  /// alternatives. Off: none of it is computed.
  bool logprobs = false;
  int32_t topLogprobs = 0;
  LogprobsMode logprobsMode = LogprobsMode::Raw;
};

/// Checks ranges; the message names the flag, e.g.
/// "invalid --top-p 1.5: must be in (0, 1]".
Status validate(const SamplingParams &params);

/// The checks that need the model: every logit-bias id within
/// [0, vocabSize).
Status validateForVocabulary(const SamplingParams &params, int32_t vocabSize);

/// Parses a --samplers list: processor names separated by ',' or ';'
/// (spaces ignored; '_' may stand for '-', "temp" for "temperature"). An
/// empty list is valid: the selector alone. Unknown or repeated names are
/// errors naming the list and the name.
ErrorOr<std::vector<ProcessorKind>> parseProcessorOrder(std::string_view list);

/// Parses one --logit-bias ID=VALUE, VALUE a number or -inf.
ErrorOr<LogitBias> parseLogitBias(std::string_view spec);

/// Formats a parameter value as messages and SamplerChain::describe() show
/// it: shortest-ish %g form ("0.9", "1.5", "nan").
std::string formatParam(float value);

} // namespace quill
