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
  case StopReason::Interrupted:
    return "interrupted";
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
  if (!ignoreEos_ && config_.isEndToken(token)) {
    result_.stop = StopReason::Eos;
    return false;
  }
  result_.tokens.push_back(token);
  if (logprobs)
    result_.logprobs.push_back(*logprobs);
  // A token may end inside a character (byte tokens): its bytes wait in
  // utf8_ until the character completes.
  std::string piece = utf8_.push(tokenizer_.decode(previous_, token));
  previous_ = token;
  if (!pushText(piece))
    return false;
  return wantsToken();
}

bool SequenceOutput::pushText(std::string_view piece) {
  if (stops_.empty()) {
    emit(piece);
    return true;
  }
  StopMatcher::Outcome outcome = stops_.push(piece);
  emit(outcome.release);
  if (outcome.stopped) {
    result_.stop = StopReason::StopString;
    stopped_ = true;
    return false;
  }
  return true;
}

void SequenceOutput::finish() {
  if (stopped_)
    return;
  // A character left incomplete becomes U+FFFD; then no stop string can
  // complete any more, so what was held back is text.
  if (pushText(utf8_.finish()))
    emit(stops_.flush());
}

} // namespace quill
