// --batch-file and --bench --batch.
#include "BatchMode.h"

#include "BatchFile.h"

#include "ResultJson.h"

#include "runtime/bench/BatchBench.h"
#include "runtime/scheduler/BatchScheduler.h"
#include "runtime/support/Json.h"
#include "runtime/support/SplitMix64.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

namespace quill {

namespace {

int fail(const std::string &message) {
  std::fprintf(stderr, "quill-run: %s\n", message.c_str());
  return 1;
}

double mib(uint64_t bytes) { return bytes / (1024.0 * 1024.0); }

/// Sample s of a request draws from its own stream: sample 0 from the seed
/// itself (so one sample is the plain run), the others from the s-th value
/// of a splitmix64 seeded with it.
SamplerFactory samplerFactory(const RunOptions &options, tbb::task_arena &arena) {
  SamplingParams params = options.sampling;
  // Beam search ranks tokens itself: the chain keeps only the logit
  // processors that can change the ranking (bias, penalties).
  if (options.beamSearch)
    params.temperature = 0;
  return [params, &arena](size_t, int32_t sample) {
    SamplingParams p = params;
    if (sample > 0)
      p.seed = splitMix64At(p.seed, uint64_t(sample));
    return SamplerChain::fromParams(p, &arena);
  };
}

} // namespace

int runBatchFile(const RunOptions &options, const Artifact &artifact, const Tokenizer &tokenizer,
                 Device &device, tbb::task_arena &arena, const std::atomic<bool> *interrupt) {
  const ModelConfig &config = artifact.config();
  const BatchLayout *layout = device.batchLayout();
  if (!layout)
    return fail(artifact.path() + ": the artifact has no batch step (compile it with "
                                  "--batch-rows N, N > 0)");
  auto prompts = readPrompts(options.batchFile);
  if (!prompts)
    return fail(prompts.message());
  int32_t maxSequences = options.batchSizes.empty() ? layout->rows : options.batchSizes[0];
  if (maxSequences > layout->rows)
    return fail("--batch " + std::to_string(maxSequences) + " exceeds the artifact's " +
                std::to_string(layout->rows) + " batch rows");
  auto cache = createPagedCache(device, config, uint64_t(options.kvBudgetMB) << 20, maxSequences);
  if (!cache)
    return fail(cache.message());

  std::vector<GenerationRequest> requests;
  for (const std::string &prompt : *prompts) {
    requests.push_back({prompt, options.maxNewTokens, options.stopStrings});
    requests.back().interrupt = interrupt;
  }
  // Every request samples with the same seed: its tokens are then those it
  // would get alone.
  BatchOptions batchOptions;
  batchOptions.maxSequences = maxSequences;
  batchOptions.arena = &arena;
  BatchScheduler scheduler(device, **cache, tokenizer, config, samplerFactory(options, arena),
                           batchOptions);
  if (options.verbose)
    std::fprintf(stderr,
                 "batch: %zu prompts, at most %d in flight, %d rows per step; paged KV cache "
                 "%.1f MiB (%d blocks of %d positions)\n",
                 requests.size(), maxSequences, layout->rows, mib((*cache)->poolBytes()),
                 (*cache)->totalBlocks(), layout->blockSize);
  BatchStats stats;
  auto results = scheduler.run(requests, &stats);

  bool failed = false, interrupted = false;
  for (size_t i = 0; i < results.size(); ++i) {
    if (results[i] && results[i]->stop == StopReason::Interrupted)
      interrupted = true;
    if (!results[i]) {
      failed = true;
      if (options.json)
        std::printf("{\"prompt_index\":%zu,\"error\":%s}\n", i,
                    jsonQuote(results[i].message()).c_str());
      else
        std::fprintf(stderr, "quill-run: %s\n", results[i].message().c_str());
      continue;
    }
    if (options.json) {
      ResultJsonFields fields;
      fields.logprobs = options.sampling.logprobs;
      fields.seed = options.sampling.seed;
      fields.promptIndex = i;
      fields.tokenizer = &tokenizer;
      std::puts(resultJson(*results[i], fields).c_str());
    } else {
      std::printf("[%zu] %s\n", i, results[i]->text.c_str());
    }
  }
  double decodeRate = perSecond(stats.generatedTokens, stats.seconds);
  if (options.json) {
    std::printf("{\"aggregate\":{\"prompts\":%zu,\"generated_tokens\":%lld,\"seconds\":%.6g,"
                "\"decode_tokens_per_s\":%.6g,\"peak_kv_bytes\":%llu,\"steps\":%lld,"
                "\"prefix_tokens_reused\":%lld,\"window_dropped_blocks\":%lld}}\n",
                results.size(), static_cast<long long>(stats.generatedTokens), stats.seconds,
                decodeRate, static_cast<unsigned long long>(stats.peakKVBytes),
                static_cast<long long>(stats.steps),
                static_cast<long long>(stats.prefixTokensReused),
                static_cast<long long>(stats.windowDroppedBlocks));
  } else {
    std::fflush(stdout);
    std::fprintf(stderr,
                 "[batch: %zu prompts, %lld tokens in %.2f s: %.1f tok/s aggregate decode; peak "
                 "KV %llu bytes (%.2f MiB); %lld steps, at most %d sequences at once]\n",
                 results.size(), static_cast<long long>(stats.generatedTokens), stats.seconds,
                 decodeRate, static_cast<unsigned long long>(stats.peakKVBytes),
                 mib(stats.peakKVBytes), static_cast<long long>(stats.steps), stats.peakSequences);
  }
  if (options.verbose)
    std::fprintf(stderr, "prefix sharing: %lld prompt tokens reused, %lld computed\n",
                 static_cast<long long>(stats.prefixTokensReused),
                 static_cast<long long>(stats.prefilledTokens));
  return failed ? 1 : interrupted ? kInterruptedExitCode : 0;
}

int runGroup(const RunOptions &options, const Artifact &artifact, const Tokenizer &tokenizer,
             Device &device, tbb::task_arena &arena, const std::atomic<bool> *interrupt) {
  const ModelConfig &config = artifact.config();
  const BatchLayout *layout = device.batchLayout();
  const char *flag = options.beamSearch ? "--beams" : "--n-samples";
  if (!layout)
    return fail(artifact.path() + ": " + flag +
                " needs the artifact's batch step (compile it with --batch-rows N, N > 0)");
  int32_t width = options.beamSearch ? options.beamSearch->beams : options.samples;
  if (width > layout->rows)
    return fail(std::string(flag) + " " + std::to_string(width) + " exceeds the artifact's " +
                std::to_string(layout->rows) + " batch rows");
  auto cache = createPagedCache(device, config, uint64_t(options.kvBudgetMB) << 20, width);
  if (!cache)
    return fail(cache.message());
  GenerationRequest request{options.prompt, options.maxNewTokens, options.stopStrings};
  request.ignoreEos = options.ignoreEos;
  request.samples = options.samples;
  request.beamSearch = options.beamSearch;
  request.interrupt = interrupt;
  BatchOptions batchOptions;
  batchOptions.arena = &arena;
  BatchScheduler scheduler(device, **cache, tokenizer, config, samplerFactory(options, arena),
                           batchOptions);
  if (options.verbose)
    std::fprintf(stderr, "%s %d: paged KV cache %.1f MiB (%d blocks of %d positions)\n", flag + 2,
                 width, mib((*cache)->poolBytes()), (*cache)->totalBlocks(), layout->blockSize);
  BatchStats stats;
  auto results = scheduler.run({request}, &stats);
  if (!results.at(0))
    return fail(results[0].message());
  const GenerationResult &result = *results[0];
  if (options.json) {
    ResultJsonFields fields;
    fields.logprobs = options.sampling.logprobs;
    fields.seed = options.sampling.seed;
    fields.beams = options.beamSearch.has_value();
    fields.tokenizer = &tokenizer;
    std::puts(resultJson(result, fields).c_str());
  } else {
    const std::vector<GenerationResult> one = {result};
    const auto &sequences = result.sequences.empty() ? one : result.sequences;
    for (size_t i = 0; i < sequences.size(); ++i) {
      if (options.beamSearch)
        std::printf("[%zu] (logprob %.4f, score %.4f) %s\n", i, sequences[i].logprob,
                    sequences[i].score, sequences[i].text.c_str());
      else
        std::printf("[%zu] %s\n", i, sequences[i].text.c_str());
    }
    std::fflush(stdout);
  }
  if (options.verbose)
    std::fprintf(stderr,
                 "%s %d: %lld steps; KV cache: peak %llu bytes (%.2f MiB) in %d-position blocks "
                 "shared copy-on-write\n",
                 flag + 2, width, static_cast<long long>(stats.steps),
                 static_cast<unsigned long long>(stats.peakKVBytes), mib(stats.peakKVBytes),
                 layout->blockSize);
  return result.stop == StopReason::Interrupted ? kInterruptedExitCode : 0;
}

int benchBatches(const RunOptions &options, const Artifact &artifact, const Tokenizer &tokenizer,
                 Device &device, tbb::task_arena &arena) {
  const ModelConfig &config = artifact.config();
  auto lengths = benchLengths(options, config.seqLen);
  if (!lengths)
    return fail(lengths.message());
  auto reports =
      benchmarkBatches(device, config, artifact.schedule(), tokenizer, arena, options.batchSizes,
                       lengths->first, lengths->second, uint64_t(options.kvBudgetMB) << 20);
  if (!reports)
    return fail(reports.message());
  std::string text = options.json ? batchReportsJson(*reports) : batchReportsText(*reports);
  std::fputs(text.c_str(), stdout);
  return 0;
}

} // namespace quill
