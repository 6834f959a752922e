// The decode loop.
#include "runtime/decode/Generator.h"

#include <chrono>

namespace quill {

const char *stopReasonName(StopReason reason) {
  switch (reason) {
  case StopReason::Eos: return "eos";
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

  // Prefill: every prompt position writes its keys and values once.
  KVCache &cache = device_.kvCache();
  cache.clear();
  auto start = Clock::now();
  for (int32_t token : result.promptTokens) {
    auto pos = cache.append();
    if (!pos)
      return pos.status();
    device_.step(token, *pos);
    sampler_.accept(token);
  }
  auto decodeStart = Clock::now();
  result.prefillSeconds = seconds(start, decodeStart);

  // Decode: sample from the last logits, then feed the token back.
  int32_t previous = result.promptTokens.back();
  for (;;) {
    if (static_cast<int32_t>(result.tokens.size()) >= request.maxNewTokens) {
      result.stop = StopReason::Length;
      break;
    }
    int32_t next = sampler_.sample(device_.logits(), config_.vocabSize);
    // llama2.c-trained models separate documents with BOS: an end as well.
    if (next < 0)
      return Status::error("the sampler found no token to pick (all logits are NaN or -inf)");
    if (next == config_.eosId || next == config_.bosId) {
      result.stop = StopReason::Eos;
      break;
    }
    result.tokens.push_back(next);
    std::string piece = tokenizer_.decode(previous, next);
    result.text += piece;
    if (onText)
      onText(piece);
    previous = next;
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
  result.decodeSeconds = seconds(decodeStart, Clock::now());
  return result;
}

} // namespace quill
