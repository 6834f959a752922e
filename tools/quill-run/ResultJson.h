// The JSON spelling of a generation result, shared by the single-prompt and
// the batch outputs of quill-run.
#pragma once

#include "runtime/decode/SequenceOutput.h"
#include "runtime/sampling/SamplingParams.h"

#include <cstdint>
#include <optional>
#include <string>

namespace quill {

struct ResultJsonFields {
  bool logprobs = false; ///< Include the logprobs array.
  uint64_t seed = 0;
  std::optional<size_t> promptIndex; ///< Batch output: the input line.
  bool beams = false;                ///< Each sequence's logprob and score.
  /// Spells each logprobs entry's token as its exact bytes ("bytes", as
  /// OpenAI's API has them: a token may hold part of a character).
  const Tokenizer *tokenizer = nullptr;
};

/// The fields of a single-sequence run: the sampler's logprobs and seed.
ResultJsonFields singleSequenceFields(const SamplingParams &sampling, const Tokenizer &tokenizer);

/// One JSON object (no newline): prompt_tokens, tokens, text, stop_reason,
/// [logprobs], seed, timings, and prompt_index first when given; with
/// several samples or beams also "sequences": [{tokens, text, stop_reason,
/// [logprob, score]}, ...] (the top-level fields are the first's).
std::string resultJson(const GenerationResult &result, const ResultJsonFields &fields);

/// tokens / seconds, 0 for no time.
double perSecond(double count, double seconds);

/// The end of a single-sequence run whose text was streamed, or not with
/// `json`: the JSON object and a newline on stdout, else a newline after
/// the streamed text and the stop reason and speeds on stderr.
void printResult(const GenerationResult &result, bool json, const ResultJsonFields &fields);

} // namespace quill
