// The logprobs recorder: a deterministic log-normalizer and top-K.
#include "runtime/sampling/Logprobs.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace quill {

namespace {
constexpr float kInf = std::numeric_limits<float>::infinity();
} // namespace

void LogprobsRecorder::reserve(int32_t n) {
  if (n <= 0)
    return;
  const size_t perChunk = static_cast<size_t>(std::min<int32_t>(topK_, SamplerContext::kChunkSize));
  const size_t chunks = static_cast<size_t>(SamplerContext::numChunks(n));
  if (chunkBest_.size() < chunks * perChunk)
    chunkBest_.resize(chunks * perChunk);
  if (chunkBestSize_.size() < chunks) {
    chunkBestSize_.resize(chunks);
    chunkCursor_.resize(chunks);
  }
  record_.top.reserve(static_cast<size_t>(std::min(topK_, n)));
}

float LogprobsRecorder::logprobOf(float logit) const {
  if (maxLogit_ == kInf) // The +inf logits share the mass equally.
    return logit == kInf ? -static_cast<float>(std::log(infiniteCount_)) : -kInf;
  if (maxLogit_ == -kInf || logit == -kInf)
    return -kInf;
  return static_cast<float>(static_cast<double>(logit - maxLogit_) - logNormalizer_);
}

void LogprobsRecorder::measure(const Candidates &c, SamplerContext &ctx) {
  const int32_t n = c.size;
  record_.token = -1;
  record_.top.clear();
  maxLogit_ = -kInf;
  if (n <= 0)
    return;
  ctx.reserve(n);
  reserve(n);
  const Candidate *data = c.data;
  double *partial = ctx.partialValues();
  const int32_t chunks = SamplerContext::numChunks(n);

  // The max (exact in any order), then the sum of exp(logit - max) per
  // chunk, merged in chunk order.
  ctx.forEachChunk(n, [&](int32_t chunk, int32_t begin, int32_t end) {
    float m = -kInf;
    for (int32_t i = begin; i < end; ++i)
      m = std::max(m, data[i].logit);
    partial[chunk] = m;
  });
  for (int32_t chunk = 0; chunk < chunks; ++chunk)
    maxLogit_ = std::max(maxLogit_, static_cast<float>(partial[chunk]));
  if (maxLogit_ == kInf) {
    infiniteCount_ = 0;
    for (int32_t i = 0; i < n; ++i)
      infiniteCount_ += data[i].logit == kInf;
  } else if (maxLogit_ != -kInf) {
    const float maxLogit = maxLogit_;
    ctx.forEachChunk(n, [&](int32_t chunk, int32_t begin, int32_t end) {
      // exp in float (twice as fast as in double; a relative error of
      // 1e-7 is far below what a logprob is read for), summed in double.
      double sum = 0.0;
      for (int32_t i = begin; i < end; ++i)
        sum += std::exp(data[i].logit - maxLogit);
      partial[chunk] = sum;
    });
    double total = 0.0; // >= 1: the max contributes exp(0).
    for (int32_t chunk = 0; chunk < chunks; ++chunk)
      total += partial[chunk];
    logNormalizer_ = std::log(total);
  }
  if (topK_ == 0)
    return;

  // Each chunk's best K, then a K-way merge of the chunks' sorted lists.
  // The union of the chunks' best K holds the overall best K, so the merge
  // gives the same list for any split.
  const int32_t perChunk = std::min<int32_t>(topK_, SamplerContext::kChunkSize);
  Candidate *best = chunkBest_.data();
  int32_t *bestSize = chunkBestSize_.data();
  ctx.forEachChunk(n, [&](int32_t chunk, int32_t begin, int32_t end) {
    Candidate *out = best + static_cast<size_t>(chunk) * perChunk;
    Candidate *outEnd =
        std::partial_sort_copy(data + begin, data + end, out, out + perChunk, ranksAbove);
    bestSize[chunk] = static_cast<int32_t>(outEnd - out);
  });
  int32_t *cursor = chunkCursor_.data();
  std::fill(cursor, cursor + chunks, 0);
  while (static_cast<int32_t>(record_.top.size()) < topK_) {
    int32_t from = -1;
    const Candidate *head = nullptr;
    for (int32_t chunk = 0; chunk < chunks; ++chunk) {
      if (cursor[chunk] == bestSize[chunk])
        continue;
      const Candidate *candidate = best + static_cast<size_t>(chunk) * perChunk + cursor[chunk];
      if (!head || ranksAbove(*candidate, *head)) {
        head = candidate;
        from = chunk;
      }
    }
    if (!head)
      break;
    ++cursor[from];
    float logprob = logprobOf(head->logit);
    if (logprob == -kInf)
      break; // Sorted: everything after is impossible too.
    record_.top.push_back({head->id, logprob});
  }
}

void LogprobsRecorder::finish(int32_t token, float logit) {
  record_.token = token;
  record_.logprob = logprobOf(logit);
}

} // namespace quill
