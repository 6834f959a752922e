// A /v1/completions or /v1/chat/completions request body, checked and turned
// into what the scheduler runs: tokenized prompts and the sampling chain's
// parameters. Every error names the field at fault (a 400).
#pragma once

#include "ApiError.h"

#include "runtime/artifact/ModelConfig.h"
#include "runtime/chat/ChatPrompter.h"
#include "runtime/sampling/SamplingParams.h"
#include "runtime/tokenizer/Tokenizer.h"

#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace quill::serve {

/// What a request is checked and tokenized against.
struct ModelContext {
  const Tokenizer &tokenizer;
  const ModelConfig &config;
  /// Null when the model has no chat template: chat requests get `chatError`.
  const ChatPrompter *prompter = nullptr;
  std::string chatError;
};

constexpr int32_t kMaxChoices = 16; ///< n.
constexpr int32_t kMaxStops = 4;    ///< stop strings, as OpenAI allows.
constexpr int32_t kMaxTopLogprobs = 20;
constexpr int32_t kMaxPrompts = 16; ///< Prompts of one /v1/completions request.

struct CompletionSpec {
  bool chat = false;
  bool stream = false;
  bool includeUsage = false; ///< stream_options.include_usage.
  /// Tokenized prompts (BOS included where the model adds it); choices are
  /// numbered prompt * n + sample.
  std::vector<std::vector<int32_t>> prompts;
  int32_t n = 1;
  /// New tokens at most; unset: as many as the context holds.
  std::optional<int32_t> maxTokens;
  std::vector<std::string> stop;
  SamplingParams sampling; ///< seed: the request's, else a random one.
  bool ignoreEos = false;  ///< llama-server's ignore_eos.
  bool logprobs = false;
  int32_t topLogprobs = 0;
};

/// Checks `body` (JSON of at most the server's body limit) and builds the
/// spec, or the 400 to answer.
std::variant<CompletionSpec, ApiError> parseCompletionRequest(const std::string &body, bool chat,
                                                              const ModelContext &model);

/// Whether `body`'s brackets nest deeper than `maxDepth` (checked before
/// parsing, so that a hostile body cannot build a deep tree).
bool nestsTooDeep(const std::string &body, int maxDepth);

} // namespace quill::serve
