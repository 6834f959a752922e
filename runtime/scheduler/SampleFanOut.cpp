// Sampling fan-out: forking a group's prompt into its samples, sampling in
// parallel, and collecting finished samples.
#include "runtime/scheduler/SampleFanOut.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

namespace quill::scheduler {

void forkSamples(Sequence &root, PagedKVCache &cache, const SequenceFactory &sequences,
                 SequenceList &born) {
  root.group->forked = true;
  for (int32_t s = 1; s < root.group->width; ++s)
    born.push_back(sequences.fork(cache, root, s));
}

void fanOut(Sequence &q, const float *row, PagedKVCache &cache, const SequenceFactory &sequences,
            SequenceList &born, std::vector<LogitRow> &toSample) {
  size_t firstBorn = born.size();
  if (q.group->width > 1 && !q.group->forked)
    forkSamples(q, cache, sequences, born);
  toSample.push_back({&q, row});
  for (size_t b = firstBorn; b < born.size(); ++b)
    toSample.push_back({born[b].get(), row});
}

bool sampleNext(Sequence &q, const float *logits, const PagedKVCache &cache, int32_t vocab,
                int32_t seqLen) {
  if (!q.output->wantsToken())
    return false;
  if (q.group->interrupted()) {
    q.output->stop(StopReason::Interrupted); // Before the next token.
    return false;
  }
  int32_t next = q.sampler->sample(logits, vocab);
  if (next < 0) {
    q.failure = "request " + std::to_string(q.group->index) +
                ": the sampler found no token to pick after " +
                std::to_string(q.result.tokens.size()) +
                " tokens: every logit is NaN or -inf after the logit processors";
    return false;
  }
  if (!q.output->accept(next, q.sampler->lastLogprobs()))
    return false;
  if (cache.length(q.kv) >= seqLen) {
    q.output->stop(StopReason::Context);
    return false;
  }
  q.pending = next;
  ++q.result.decodeSteps;
  return true;
}

std::vector<char> sampleAll(const std::vector<LogitRow> &toSample, const PagedKVCache &cache,
                            const ModelConfig &config, tbb::task_arena *arena) {
  std::vector<char> goesOn(toSample.size());
  auto sampleRange = [&](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i)
      goesOn[i] = sampleNext(*toSample[i].first, toSample[i].second, cache, config.vocabSize,
                             config.seqLen);
  };
  if (arena && toSample.size() > 1)
    arena->execute([&] {
      tbb::parallel_for(
          tbb::blocked_range<size_t>(0, toSample.size()),
          [&](const tbb::blocked_range<size_t> &r) { sampleRange(r.begin(), r.end()); });
    });
  else
    sampleRange(0, toSample.size());
  return goesOn;
}

int64_t recordSample(Sequence &q, Clock::time_point now) {
  q.output->finish();
  if (q.result.tokens.empty())
    q.firstToken = now;
  q.result.prefillSeconds = secondsBetween(q.admitted, q.firstToken);
  q.result.decodeSeconds = secondsBetween(q.firstToken, now);
  int64_t tokens = static_cast<int64_t>(q.result.tokens.size());
  q.group->results[q.member] = std::move(q.result);
  return tokens;
}

GenerationResult samplesResult(const Group &group) {
  GenerationResult first = group.results[0];
  if (group.width > 1)
    first.sequences = group.results;
  return first;
}

} // namespace quill::scheduler
