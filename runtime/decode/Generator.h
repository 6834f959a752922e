// The decode loop: prompt -> prefill -> one sampled token per step, reusing
// the KV cache, until the end token, a stop string, the token budget or the
// context end.
#pragma once

#include "runtime/artifact/ModelConfig.h"
#include "runtime/decode/SequenceOutput.h"
#include "runtime/device/Device.h"
#include "runtime/sampling/Logprobs.h"
#include "runtime/sampling/Sampler.h"
#include "runtime/tokenizer/Tokenizer.h"

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace quill {

class Generator {
public:
  Generator(Device &device, const Tokenizer &tokenizer, SamplerChain &sampler,
            const ModelConfig &config)
      : device_(device), tokenizer_(tokenizer), sampler_(sampler), config_(config) {}

  /// Runs one request from an empty cache; `onText` receives the text as
  /// soon as it is final (for streaming output): each decoded piece at once,
  /// except text that may begin a stop string, which waits until the
  /// following pieces decide. Fails when the sampler finds no token.
  ErrorOr<GenerationResult> generate(const GenerationRequest &request,
                                     const std::function<void(std::string_view)> &onText = {});

  /// Continues a sequence instead: the KV cache already holds the first
  /// `cached` of request.promptTokens (a conversation's earlier turns; the
  /// cache is cut back to them), so only the rest is prefilled and shown to
  /// the sampler. Needs 0 <= cached < the prompt's length <= the cache's.
  ErrorOr<GenerationResult> generateAfter(const GenerationRequest &request, int32_t cached,
                                          const std::function<void(std::string_view)> &onText = {});

private:
  /// The decode loop over a cache holding the first `cached` prompt tokens.
  ErrorOr<GenerationResult> run(const GenerationRequest &request, int32_t cached,
                                const std::function<void(std::string_view)> &onText);

  Device &device_;
  const Tokenizer &tokenizer_;
  SamplerChain &sampler_;
  const ModelConfig &config_;
};

} // namespace quill
