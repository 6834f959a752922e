// The decode loop.
#include "runtime/decode/Generator.h"

#include "runtime/device/FeedTokens.h"

#include <chrono>

namespace quill {

ErrorOr<GenerationResult> Generator::generate(const GenerationRequest &request,
                                              const std::function<void(std::string_view)> &onText) {
  device_.kvCache().clear();
  return run(request, 0, onText);
}

ErrorOr<GenerationResult>
Generator::generateAfter(const GenerationRequest &request, int32_t cached,
                         const std::function<void(std::string_view)> &onText) {
  KVCache &cache = device_.kvCache();
  if (cached < 0 || cached > cache.length() ||
      cached >= static_cast<int64_t>(request.promptTokens.size()))
    return Status::error("internal error: cannot continue after " + std::to_string(cached) +
                         " cached tokens (the cache holds " + std::to_string(cache.length()) +
                         ", the prompt has " + std::to_string(request.promptTokens.size()) + ")");
  cache.truncate(cached);
  return run(request, cached, onText);
}

ErrorOr<GenerationResult> Generator::run(const GenerationRequest &request, int32_t cached,
                                         const std::function<void(std::string_view)> &onText) {
  using Clock = std::chrono::steady_clock;
  auto seconds = [](Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double>(b - a).count();
  };
  if (request.maxNewTokens < 0)
    return Status::error("the number of new tokens must not be negative");
  GenerationResult result;
  result.promptTokens =
      request.promptTokens.empty()
          ? tokenizer_.encode(request.prompt, /*addBos=*/config_.addBos, /*addEos=*/false)
          : request.promptTokens;
  const int32_t promptLength = static_cast<int32_t>(result.promptTokens.size());
  if (promptLength > config_.seqLen)
    return Status::error("the prompt has " + std::to_string(promptLength) +
                         " tokens but the model's context holds " + std::to_string(config_.seqLen));

  // Prefill: every prompt position not cached yet writes its keys and
  // values once, in chunks of tokens where the artifact has a prefill step.
  KVCache &cache = device_.kvCache();
  auto start = Clock::now();
  if (Status s = feedTokens(device_, result.promptTokens.data() + cached, promptLength - cached);
      !s)
    return s;
  for (int32_t i = cached; i < promptLength; ++i)
    sampler_.accept(result.promptTokens[i]);
  auto decodeStart = Clock::now();
  result.prefillSeconds = seconds(start, decodeStart);

  // Decode: sample from the last logits, then feed the token back.
  SequenceOutput output(tokenizer_, config_, request, result, onText);
  while (output.wantsToken()) {
    if (request.interrupt && request.interrupt->load(std::memory_order_relaxed)) {
      output.stop(StopReason::Interrupted);
      break;
    }
    int32_t next = sampler_.sample(device_.logits(), config_.vocabSize);
    if (next < 0)
      return Status::error("the sampler found no token to pick after " +
                           std::to_string(result.tokens.size()) +
                           " tokens: every logit is NaN or -inf after the logit processors");
    if (!output.accept(next, sampler_.lastLogprobs()))
      break;
    auto pos = cache.append();
    if (!pos) {
      output.stop(StopReason::Context);
      break;
    }
    device_.step(next, *pos);
    if (Status s = device_.error(); !s)
      return s;
    ++result.decodeSteps;
  }
  output.finish();
  result.decodeSeconds = seconds(decodeStart, Clock::now());
  return result;
}

} // namespace quill
