// What sampling one token costs at Llama-sized vocabularies (32,000 and
// 128,000 logits): greedy, the default chain, the reference chain
// (penalties + top-p + min-p), every pass at once, and logprobs, on the
// calling thread and on a 2-thread arena.
//
// The logits are N(0, 3^2) draws: flatter than a trained model's usual
// output, so the nucleus holds thousands of tokens and the truncations'
// sorting is measured at its worst rather than its best.
#include "runtime/sampling/Random.h"
#include "runtime/sampling/Sampler.h"
#include "runtime/sampling/SamplingParams.h"

#include <benchmark/benchmark.h>

#include <tbb/task_arena.h>

#include <cmath>
#include <memory>
#include <vector>

namespace {

using namespace quill;

/// Deterministic N(0, sigma^2) logits (Box-Muller on the project's PRNG).
std::vector<float> normalLogits(int32_t n, float sigma, uint64_t seed) {
  Random rng(seed);
  std::vector<float> logits(n);
  for (float &logit : logits) {
    float u1 = (static_cast<float>(rng.nextU32() >> 8) + 1.0f) / 16777217.0f;
    float u2 = rng.nextFloat();
    logit = sigma * std::sqrt(-2.0f * std::log(u1)) * std::cos(6.2831853f * u2);
  }
  return logits;
}

enum Chain { Greedy, Default, PenaltiesTopPMinP, Everything, WithLogprobs };

SamplingParams paramsFor(Chain chain) {
  SamplingParams params{0.8f, 0, 0.9f, 42};
  switch (chain) {
  case Greedy:
    params.temperature = 0.0f;
    break;
  case Default: // quill-run's defaults with --temp 0.8
    break;
  case PenaltiesTopPMinP:
  case WithLogprobs:
    params.minP = 0.05f;
    params.repeatPenalty = 1.1f;
    params.frequencyPenalty = 0.1f;
    params.presencePenalty = 0.1f;
    params.repeatLastN = 64;
    if (chain == WithLogprobs) {
      params.logprobs = true;
      params.topLogprobs = 5;
    }
    break;
  case Everything:
    params.minP = 0.05f;
    params.topK = 40;
    params.repeatPenalty = 1.1f;
    params.frequencyPenalty = 0.1f;
    params.presencePenalty = 0.1f;
    params.logitBias = {{13, -INFINITY}, {100, 2.0f}, {2000, -1.0f}};
    break;
  }
  return params;
}

/// state.range(0): the vocabulary; state.range(1): 0 = no arena (the
/// calling thread), else the arena's thread count.
void sampleOneToken(benchmark::State &state, Chain which) {
  const int32_t vocab = static_cast<int32_t>(state.range(0));
  const int threads = static_cast<int>(state.range(1));
  std::unique_ptr<tbb::task_arena> arena;
  if (threads > 0)
    arena = std::make_unique<tbb::task_arena>(threads);
  std::vector<float> logits = normalLogits(vocab, 3.0f, 1234);
  SamplerChain chain = SamplerChain::fromParams(paramsFor(which), arena.get());
  chain.reserve(vocab);
  // A history for the penalties, as after a prompt.
  Random history(99);
  for (int i = 0; i < 64; ++i)
    chain.accept(static_cast<int32_t>(history.nextU32() % vocab));
  for (auto _ : state)
    benchmark::DoNotOptimize(chain.sample(logits.data(), vocab));
  state.SetLabel(chain.describe());
  state.counters["tokens/s"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

void vocabularies(benchmark::internal::Benchmark *b) {
  b->ArgNames({"vocab", "threads"});
  for (int64_t vocab : {32000, 128000})
    for (int64_t threads : {0, 2})
      b->Args({vocab, threads});
  b->Unit(benchmark::kMicrosecond);
}

} // namespace

BENCHMARK_CAPTURE(sampleOneToken, greedy, Greedy)->Apply(vocabularies);
BENCHMARK_CAPTURE(sampleOneToken, default_top_p, Default)->Apply(vocabularies);
BENCHMARK_CAPTURE(sampleOneToken, penalties_top_p_min_p, PenaltiesTopPMinP)->Apply(vocabularies);
BENCHMARK_CAPTURE(sampleOneToken, every_pass, Everything)->Apply(vocabularies);
BENCHMARK_CAPTURE(sampleOneToken, with_logprobs_5, WithLogprobs)->Apply(vocabularies);

BENCHMARK_MAIN();
