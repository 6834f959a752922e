// The decode loop.
#include "runtime/decode/Generator.h"

#include "runtime/device/FeedTokens.h"

#include "runtime/decode/StopMatcher.h"

#include <chrono>

namespace quill {

const char *stopReasonName(StopReason reason) {
  switch (reason) {
  case StopReason::Eos: return "eos";
  case StopReason::StopString: return "stop_string";
  case StopReason::Length: return "length";
  case StopReason::Context: return "context";
  }
  return "?";
}

ErrorOr<GenerationResult> Generator::generate(const GenerationRequest &request,
                                              const std::function<void(std::string_view)> &onText) {
  using Clock = std::chrono::steady_clock;
  auto seconds = [](Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double>(b - a).count();
  };
  if (request.maxNewTokens < 0)
    return Status::error("the number of new tokens must not be negative");
  GenerationResult result;
  result.promptTokens = tokenizer_.encode(request.prompt, /*addBos=*/true, /*addEos=*/false);
  const int32_t promptLength = static_cast<int32_t>(result.promptTokens.size());
  if (promptLength > config_.seqLen)
    return Status::error("the prompt has " + std::to_string(promptLength) +
                         " tokens but the model's context holds " + std::to_string(config_.seqLen));

  // Prefill: every prompt position writes its keys and values once, in
  // chunks of tokens where the artifact has a prefill step.
  KVCache &cache = device_.kvCache();
  cache.clear();
  auto start = Clock::now();
  if (Status s = feedTokens(device_, result.promptTokens.data(), promptLength); !s)
    return s;
  for (int32_t token : result.promptTokens)
    sampler_.accept(token);
  auto decodeStart = Clock::now();
  result.prefillSeconds = seconds(start, decodeStart);

  // Decode: sample from the last logits, then feed the token back. Text
  // goes out through the stop matcher, which may hold some back.
  StopMatcher stops(request.stopStrings);
  auto emit = [&](std::string_view text) {
    result.text += text;
    if (onText && !text.empty())
      onText(text);
  };
  bool stopped = false;
  int32_t previous = result.promptTokens.back();
  for (;;) {
    if (static_cast<int32_t>(result.tokens.size()) >= request.maxNewTokens) {
      result.stop = StopReason::Length;
      break;
    }
    int32_t next = sampler_.sample(device_.logits(), config_.vocabSize);
    // llama2.c-trained models separate documents with BOS: an end as well.
    if (next < 0)
      return Status::error("the sampler found no token to pick after " +
                           std::to_string(result.tokens.size()) +
                           " tokens: every logit is NaN or -inf after the logit processors");
    if (next == config_.eosId || next == config_.bosId) {
      result.stop = StopReason::Eos;
      break;
    }
    result.tokens.push_back(next);
    if (const StepLogprobs *logprobs = sampler_.lastLogprobs())
      result.logprobs.push_back(*logprobs);
    std::string piece = tokenizer_.decode(previous, next);
    previous = next;
    if (stops.empty()) {
      emit(piece);
    } else {
      StopMatcher::Outcome outcome = stops.push(piece);
      emit(outcome.release);
      if (outcome.stopped) {
        result.stop = StopReason::StopString;
        stopped = true;
        break;
      }
    }
    if (static_cast<int32_t>(result.tokens.size()) >= request.maxNewTokens) {
      result.stop = StopReason::Length;
      break;
    }
    auto pos = cache.append();
    if (!pos) {
      result.stop = StopReason::Context;
      break;
    }
    device_.step(next, *pos);
    ++result.decodeSteps;
  }
  // No stop string can complete any more: what was held back is text.
  if (!stopped)
    emit(stops.flush());
  result.decodeSeconds = seconds(decodeStart, Clock::now());
  return result;
}

} // namespace quill
