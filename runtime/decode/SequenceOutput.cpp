// A sequence's sampled tokens -> its result.
#include "runtime/decode/SequenceOutput.h"

namespace quill {

const char *stopReasonName(StopReason reason) {
  switch (reason) {
  case StopReason::Eos:
    return "eos";
  case StopReason::StopString:
    return "stop_string";
  case StopReason::Length:
    return "length";
  case StopReason::Context:
    return "context";
  }
  return "?";
}

SequenceOutput::SequenceOutput(const Tokenizer &tokenizer, const ModelConfig &config,
                               const GenerationRequest &request, GenerationResult &result,
                               std::function<void(std::string_view)> onText)
    : tokenizer_(tokenizer), config_(config), maxNewTokens_(request.maxNewTokens),
      ignoreEos_(request.ignoreEos), result_(result), onText_(std::move(onText)),
      stops_(request.stopStrings),
      previous_(result.promptTokens.empty() ? config.bosId : result.promptTokens.back()) {}

void SequenceOutput::emit(std::string_view text) {
  result_.text += text;
  if (onText_ && !text.empty())
    onText_(text);
}

bool SequenceOutput::wantsToken() {
  if (static_cast<int32_t>(result_.tokens.size()) < maxNewTokens_)
    return true;
  result_.stop = StopReason::Length;
  return false;
}

bool SequenceOutput::accept(int32_t token, const StepLogprobs *logprobs) {
  // llama2.c-trained models separate documents with BOS: an end as well.
  if (!ignoreEos_ && (token == config_.eosId || token == config_.bosId)) {
    result_.stop = StopReason::Eos;
    return false;
  }
  result_.tokens.push_back(token);
  if (logprobs)
    result_.logprobs.push_back(*logprobs);
  std::string piece = tokenizer_.decode(previous_, token);
  previous_ = token;
  if (stops_.empty()) {
    emit(piece);
  } else {
    StopMatcher::Outcome outcome = stops_.push(piece);
    emit(outcome.release);
    if (outcome.stopped) {
      result_.stop = StopReason::StopString;
      stopped_ = true;
      return false;
    }
  }
  return wantsToken();
}

void SequenceOutput::finish() {
  // No stop string can complete any more: what was held back is text.
  if (!stopped_)
    emit(stops_.flush());
}

} // namespace quill
