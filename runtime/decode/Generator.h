// The decode loop: prompt -> prefill -> one sampled token per step, reusing
// the KV cache, until the end token, the token budget or the context end.
#pragma once

#include "runtime/artifact/ModelConfig.h"
#include "runtime/device/Device.h"
#include "runtime/sampling/Sampler.h"
#include "runtime/tokenizer/Tokenizer.h"

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace quill {

enum class StopReason { Eos, Length, Context };

/// "eos", "length", "context": the JSON spelling.
const char *stopReasonName(StopReason reason);

struct GenerationRequest {
  std::string prompt;
  int32_t maxNewTokens = 256;
};

struct GenerationResult {
  std::vector<int32_t> promptTokens; ///< BOS included.
  std::vector<int32_t> tokens;       ///< Generated, without the end token.
  std::string text;                  ///< The generated text only.
  StopReason stop = StopReason::Length;
  double prefillSeconds = 0, decodeSeconds = 0;
  int32_t decodeSteps = 0; ///< Steps run after the prompt.
};

class Generator {
public:
  Generator(Device &device, const Tokenizer &tokenizer, SamplerChain &sampler,
            const ModelConfig &config)
      : device_(device), tokenizer_(tokenizer), sampler_(sampler), config_(config) {}

  /// Runs one request from an empty cache; `onText` receives each decoded
  /// piece as soon as it is sampled (for streaming output).
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
