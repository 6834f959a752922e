// The batched decode benchmark behind `quill-run --bench --batch B`.
#include "runtime/bench/BatchBench.h"

#include "runtime/bench/MachineProbes.h"
#include "runtime/bench/ModelBench.h"
#include "runtime/scheduler/BatchScheduler.h"

#include <cstdio>
#include <sstream>

namespace quill {

namespace {

/// Times one run of `batch` sequences.
ErrorOr<BatchStats> runBatch(Device &device, const ModelConfig &config, const Tokenizer &tokenizer,
                             tbb::task_arena &arena, int32_t batch, int32_t promptTokens,
                             int32_t decodeTokens, uint64_t budgetBytes) {
  auto cache = createPagedCache(device, config, budgetBytes, batch);
  if (!cache)
    return cache.status();
  std::vector<GenerationRequest> requests(batch);
  for (int32_t b = 0; b < batch; ++b) {
    GenerationRequest &r = requests[b];
    // The first token comes from the prompt's logits; then decodeTokens
    // steps with every sequence decoding (see prefillFirst below).
    r.maxNewTokens = decodeTokens + 1;
    r.ignoreEos = true;
    // Distinct prompts: no prefix to share, every sequence its own blocks.
    r.promptTokens.push_back(config.bosId);
    for (int32_t i = 1; i < promptTokens; ++i)
      r.promptTokens.push_back(
          3 + int32_t((uint64_t(i) * 2654435761u + uint64_t(b) * 40503u) % (config.vocabSize - 3)));
  }
  SamplingParams greedy;
  greedy.temperature = 0;
  BatchOptions options;
  options.maxSequences = batch;
  options.prefillFirst = true;
  options.arena = &arena;
  BatchScheduler scheduler(
      device, **cache, tokenizer, config,
      [&](size_t, int32_t) { return SamplerChain::fromParams(greedy, &arena); }, options);
  BatchStats stats;
  auto results = scheduler.run(requests, &stats);
  for (auto &result : results)
    if (!result)
      return result.status();
  return stats;
}

} // namespace

ErrorOr<std::vector<BatchBenchReport>>
benchmarkBatches(Device &device, const ModelConfig &config, const Schedule &decode,
                 const Tokenizer &tokenizer, tbb::task_arena &arena,
                 const std::vector<int32_t> &batches, int32_t promptTokens, int32_t decodeTokens,
                 uint64_t budgetBytes) {
  const BatchLayout *layout = device.batchLayout();
  if (!layout)
    return Status::error("the artifact has no batch step (compile it with --batch-rows N, N > 0)");
  if (promptTokens < 1 || decodeTokens < 1)
    return Status::error("the benchmark needs at least one prompt and one decode token");
  for (int32_t b : batches)
    if (b > layout->rows)
      return Status::error("--batch " + std::to_string(b) + " exceeds the artifact's " +
                           std::to_string(layout->rows) + " batch rows");
  // Warm-up: weights paged in, caches primed.
  if (auto warm = runBatch(device, config, tokenizer, arena, 1, promptTokens, 4, budgetBytes);
      !warm)
    return warm.status();
  double bandwidth = measureReadBandwidth(arena);
  std::vector<BatchBenchReport> reports;
  for (int32_t b : batches) {
    auto stats =
        runBatch(device, config, tokenizer, arena, b, promptTokens, decodeTokens, budgetBytes);
    if (!stats)
      return stats.status();
    BatchBenchReport r;
    r.batch = b;
    r.threads = arena.max_concurrency();
    r.promptTokens = promptTokens;
    r.decodeTokens = decodeTokens;
    // Steps with all b sequences decoding, and nothing else in them.
    r.stepsPerS = stats->fullBatchSeconds > 0 ? stats->fullBatchSteps / stats->fullBatchSeconds : 0;
    r.decodeTokensPerS = r.stepsPerS * b;
    r.overallTokensPerS = stats->seconds > 0 ? stats->generatedTokens / stats->seconds : 0;
    r.bandwidthGBs = bandwidth;
    r.weightBytesPerStep = weightBytesPerToken(decode, config.vocabSize);
    r.fractionOfBandwidth = r.weightBytesPerStep * r.stepsPerS / (bandwidth * 1e9);
    if (!reports.empty() && reports.front().decodeTokensPerS > 0)
      r.speedupOverFirst = r.decodeTokensPerS / reports.front().decodeTokensPerS;
    else
      r.speedupOverFirst = 1;
    reports.push_back(r);
  }
  return reports;
}

std::string batchReportsText(const std::vector<BatchBenchReport> &reports) {
  std::string out;
  char line[512];
  if (!reports.empty()) {
    std::snprintf(line, sizeof line,
                  "threads: %d, read bandwidth %.1f GB/s; %d prompt + %d decode tokens per "
                  "sequence\n",
                  reports[0].threads, reports[0].bandwidthGBs, reports[0].promptTokens,
                  reports[0].decodeTokens);
    out += line;
  }
  for (const BatchBenchReport &r : reports) {
    if (r.stepsPerS == 0) {
      // The budget never held all of them at once: no step to time.
      std::snprintf(line, sizeof line,
                    "batch %3d: no step had all %d sequences decoding (the KV budget holds fewer "
                    "at once: raise --kv-budget, or shorten --bench-prompt/--bench-decode); "
                    "%.1f tokens/s with prefill\n",
                    r.batch, r.batch, r.overallTokensPerS);
      out += line;
      continue;
    }
    std::snprintf(line, sizeof line,
                  "batch %3d: decode %9.1f tokens/s aggregate (%6.2fx batch %d), %7.1f steps/s "
                  "= %5.1f%% of the read bandwidth for weights; %.1f tokens/s with prefill\n",
                  r.batch, r.decodeTokensPerS, r.speedupOverFirst, reports[0].batch, r.stepsPerS,
                  100 * r.fractionOfBandwidth, r.overallTokensPerS);
    out += line;
  }
  return out;
}

std::string batchReportsJson(const std::vector<BatchBenchReport> &reports) {
  std::ostringstream out;
  out.precision(6);
  out << "{\"batches\":[";
  for (size_t i = 0; i < reports.size(); ++i) {
    const BatchBenchReport &r = reports[i];
    out << (i ? "," : "") << "{\"batch\":" << r.batch << ",\"threads\":" << r.threads
        << ",\"prompt_tokens\":" << r.promptTokens << ",\"decode_tokens\":" << r.decodeTokens
        << ",\"decode_tokens_per_s\":" << r.decodeTokensPerS << ",\"steps_per_s\":" << r.stepsPerS
        << ",\"overall_tokens_per_s\":" << r.overallTokensPerS
        << ",\"bandwidth_gb_s\":" << r.bandwidthGBs
        << ",\"weight_bytes_per_step\":" << r.weightBytesPerStep
        << ",\"fraction_of_bandwidth\":" << r.fractionOfBandwidth
        << ",\"speedup_over_first\":" << r.speedupOverFirst << "}";
  }
  out << "]}\n";
  return out.str();
}

} // namespace quill
