// One sequence's output: its sampled tokens become the result's tokens,
// logprobs and text, until the end token, a stop string or the token budget.
// Shared by the single-sequence decode loop and the batch scheduler.
#pragma once

#include "runtime/artifact/ModelConfig.h"
#include "runtime/decode/BeamSearch.h"
#include "runtime/decode/StopMatcher.h"
#include "runtime/sampling/Logprobs.h"
#include "runtime/support/Utf8.h"
#include "runtime/tokenizer/Tokenizer.h"

#include <atomic>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace quill {

enum class StopReason { Eos, StopString, Length, Context, Interrupted };

/// "eos", "stop_string", "length", "context", "interrupted": the JSON
/// spelling.
const char *stopReasonName(StopReason reason);

struct GenerationRequest {
  std::string prompt;
  int32_t maxNewTokens = 256;
  /// Generation ends at the first of these in the generated text, which
  /// then ends right before it (the match may span tokens).
  std::vector<std::string> stopStrings;
  /// Already tokenized (BOS included): used instead of `prompt` when not
  /// empty (benchmarks, tests).
  std::vector<int32_t> promptTokens;
  /// Treat the end token like any other (fixed-length benchmarks).
  bool ignoreEos = false;
  /// When set (a SIGINT handler sets it), generation stops before the next
  /// token with stop reason Interrupted (the decode loop; the batch
  /// scheduler's samples and beams, and its requests not yet started).
  const std::atomic<bool> *interrupt = nullptr;
  /// Independent continuations of the prompt (sharing its prefill and KV
  /// blocks), each with its own random stream; batch scheduler only.
  int32_t samples = 1;
  /// Beam search instead of sampling; batch scheduler only.
  std::optional<BeamSearchOptions> beamSearch;
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
  /// Beam search: the sequence's summed log-probability and its score
  /// (logprob / length^length_penalty).
  double logprob = 0, score = 0;
  /// With several samples or beams: each of them (samples in order, beams
  /// best first); the fields above are those of the first.
  std::vector<GenerationResult> sequences;
};

/// Writes into a GenerationResult owned by the caller (which must outlive
/// this object). Text is well-formed UTF-8 (see Utf8Stream: no piece splits
/// a character), and goes out through the stop matcher, which may hold back
/// text that could begin a stop string until the following pieces decide.
class SequenceOutput {
public:
  SequenceOutput(const Tokenizer &tokenizer, const ModelConfig &config,
                 const GenerationRequest &request, GenerationResult &result,
                 std::function<void(std::string_view)> onText = {});

  /// Whether another token may be sampled; false (stop: length) once the
  /// budget of new tokens is used up.
  bool wantsToken();
  /// Takes the sampled token (and its logprobs, when recorded). Returns
  /// whether the sequence goes on, i.e. the token is to be fed back; false
  /// when it ended here (the end token, a stop string, the budget).
  bool accept(int32_t token, const StepLogprobs *logprobs);
  /// Ends the sequence for `reason` (the context is full).
  void stop(StopReason reason) { result_.stop = reason; }
  /// Releases text held back for a stop string that can no longer complete.
  void finish();

private:
  void emit(std::string_view text);
  /// Text through the stop matcher; false once a stop string completed.
  bool pushText(std::string_view piece);

  const Tokenizer &tokenizer_;
  const ModelConfig &config_;
  int32_t maxNewTokens_;
  bool ignoreEos_;
  GenerationResult &result_;
  std::function<void(std::string_view)> onText_;
  Utf8Stream utf8_;
  StopMatcher stops_;
  int32_t previous_;
  bool stopped_ = false;
};

} // namespace quill
