// The decode loop: prompt -> prefill -> one sampled token per step, reusing
// the KV cache, until the end token, a stop string, the token budget or the
// context end.
#pragma once

#include "runtime/artifact/ModelConfig.h"
#include "runtime/device/Device.h"
#include "runtime/sampling/Logprobs.h"
#include "runtime/sampling/Sampler.h"
#include "runtime/tokenizer/Tokenizer.h"

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace quill {

enum class StopReason { Eos, StopString, Length, Context };

/// "eos", "stop_string", "length", "context": the JSON spelling.
const char *stopReasonName(StopReason reason);

struct GenerationRequest {
  std::string prompt;
  int32_t maxNewTokens = 256;
  /// Generation ends at the first of these in the generated text, which
  /// then ends right before it (the match may span tokens).
  std::vector<std::string> stopStrings;
};

struct GenerationResult {
  std::vector<int32_t> promptTokens; ///< BOS included.
  /// Generated, without the end token; with the token that completed a stop
  /// string.
  std::vector<int32_t> tokens;
  std::string text; ///< The generated text only, cut before a stop string.
  /// One per entry of `tokens` when the sampler records logprobs, else
  /// empty.
  std::vector<StepLogprobs> logprobs;
  StopReason stop = StopReason::Length;
  double prefillSeconds = 0, decodeSeconds = 0;
  int32_t decodeSteps = 0; ///< Steps run after the prompt.
};

class Generator {
public:
  Generator(Device &device, const Tokenizer &tokenizer, SamplerChain &sampler,
            const ModelConfig &config)
      : device_(device), tokenizer_(tokenizer), sampler_(sampler), config_(config) {}

  /// Runs one request from an empty cache; `onText` receives the text as
  /// soon as it is final (for streaming output): each decoded piece at once,
  /// except text that may begin a stop string, which waits until the
  /// following pieces decide. Fails when the sampler finds no token.
  ErrorOr<GenerationResult>
  generate(const GenerationRequest &request,
           const std::function<void(std::string_view)> &onText = {});

private:
  Device &device_;
  const Tokenizer &tokenizer_;
  SamplerChain &sampler_;
  const ModelConfig &config_;
};

} // namespace quill
