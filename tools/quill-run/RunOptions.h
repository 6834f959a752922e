// quill-run's command line: parsed and validated into plain options.
#pragma once

#include "runtime/artifact/Artifact.h"
#include "runtime/decode/BeamSearch.h"
#include "runtime/sampling/SamplingParams.h"
#include "runtime/support/Error.h"

#include <optional>
#include <string>
#include <vector>

namespace quill {

/// The shell's code for a process ended by SIGINT (128 + 2): quill-run's
/// exit code after an interrupted generation.
constexpr int kInterruptedExitCode = 130;

struct RunOptions {
  std::string artifactPath;
  std::string prompt;
  int32_t maxNewTokens = 256;
  SamplingParams sampling;
  std::vector<std::string> stopStrings; ///< --stop, in the order given.
  bool seedGiven = false;
  int threads = 0; ///< 0: all hardware threads.
  bool json = false;
  bool verbose = false;
  bool ignoreEos = false; ///< --ignore-eos: end tokens do not end generation.
  bool verifyWeights = true;
  WeightPages weightPages = WeightPages::Copied; ///< --mmap: Mapped.
  bool profile = false;
  std::string traceFile;          ///< --trace: the Chrome trace written at the end.
  bool cuda = false;              ///< --device cuda.
  bool cudaGraphs = true;         ///< CUDA: replay each step as one graph (--no-cuda-graphs).
  bool sequentialKernels = false; ///< Never run independent kernels together.
  bool noStepTeam = false;        ///< Split kernels one by one (CpuDevice::setStepTeam).
  std::string reportDir;          ///< --report: with --profile, the measured roofline's page.
  bool bench = false;             ///< Measure the model and the machine instead.
  int32_t benchPrompt = 128;      ///< Prompt tokens timed by --bench.
  int32_t benchDecode = 128;      ///< Decode steps timed by --bench.
  bool benchLengthsGiven = false; ///< --bench-prompt or --bench-decode given.
  std::string batchFile;          ///< Prompts to run together, one per line.
  /// Sequences in flight at once (--batch); with --bench, each one is a
  /// batched measurement. Empty: as many as the batch step has rows.
  std::vector<int32_t> batchSizes;
  int64_t kvBudgetMB = 0; ///< Paged KV cache size; 0: the default.
  int32_t samples = 1;    ///< --n-samples: continuations of the prompt.
  /// --beams and its knobs; set when beam search is asked for.
  std::optional<BeamSearchOptions> beamSearch;
  std::string perplexityFile;              ///< --perplexity: score this text instead.
  int32_t pplContext = 0;                  ///< Window tokens; 0: the context, capped to the text.
  int32_t pplStride = 0;                   ///< Window step; 0: half the window.
  std::string klBase;                      ///< --kl-divergence: the base artifact.
  std::string messagesFile;                ///< --messages: reply to this conversation (JSON).
  bool chat = false;                       ///< --chat: an interactive conversation on stdin.
  bool renderPrompt = false;               ///< --render-prompt: print the chat prompt and stop.
  std::optional<std::string> systemPrompt; ///< --system: --chat's system message.
  std::string chatTemplateFile;            ///< --chat-template: instead of the artifact's.
  bool help = false;
};

/// Parses argv; every problem is one message naming the flag and the value.
ErrorOr<RunOptions> parseRunOptions(int argc, char **argv);

const char *runUsage();

/// The prompt and decode lengths --bench times in a context of `seqLen`
/// positions: the defaults shrink to fit a short context; lengths given
/// that do not fit are an error.
ErrorOr<std::pair<int32_t, int32_t>> benchLengths(const RunOptions &options, int32_t seqLen);

} // namespace quill
