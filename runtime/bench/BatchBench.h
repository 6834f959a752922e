// Batched decode throughput: B sequences decoding together through the batch
// step, set against one sequence and the machine's read bandwidth.
#pragma once

#include "runtime/artifact/ModelConfig.h"
#include "runtime/device/Device.h"
#include "runtime/support/Error.h"
#include "runtime/tokenizer/Tokenizer.h"

#include <tbb/task_arena.h>

#include <string>
#include <vector>

namespace quill {

struct BatchBenchReport {
  int32_t batch = 0;
  int threads = 0;
  int32_t promptTokens = 0, decodeTokens = 0; ///< Per sequence.
  double decodeTokensPerS = 0;                ///< All sequences together, decode-only steps.
  double stepsPerS = 0;                       ///< Decode-only batch steps per second.
  double overallTokensPerS = 0; ///< Generated tokens over the whole run, prefill included.
  double bandwidthGBs = 0;
  double weightBytesPerStep = 0; ///< Weights one step streams, whatever B is.
  double fractionOfBandwidth = 0;
  double speedupOverFirst = 0; ///< decodeTokensPerS over the first report's.
};

/// For each B in `batches`: B sequences with distinct deterministic prompts
/// of `promptTokens` tokens, prefilled together, then `decodeTokens` greedy
/// tokens each (end tokens ignored), through the batch scheduler over a paged
/// cache of `budgetBytes` (0: the default). One warm-up run first.
ErrorOr<std::vector<BatchBenchReport>>
benchmarkBatches(Device &device, const ModelConfig &config, const Schedule &decode,
                 const Tokenizer &tokenizer, tbb::task_arena &arena,
                 const std::vector<int32_t> &batches, int32_t promptTokens, int32_t decodeTokens,
                 uint64_t budgetBytes);

std::string batchReportsText(const std::vector<BatchBenchReport> &reports);
std::string batchReportsJson(const std::vector<BatchBenchReport> &reports);

} // namespace quill
