// The sampler chain and the deterministic softmax/argmax its passes share.
#include "runtime/sampling/Sampler.h"

#include "runtime/sampling/SamplerPasses.h"

#include <cmath>
#include <limits>

namespace quill {

namespace {
constexpr float kInf = std::numeric_limits<float>::infinity();
} // namespace

SamplerPass::~SamplerPass() = default;

void SamplerContext::reserve(int32_t n) {
  size_t chunks = static_cast<size_t>(numChunks(std::max(n, 1)));
  if (partialValues_.size() < chunks) {
    partialValues_.resize(chunks);
    partialIndices_.resize(chunks);
  }
}

int32_t findBest(const Candidates &c, SamplerContext &ctx) {
  if (c.size <= 0)
    return -1;
  ctx.reserve(c.size);
  const Candidate *data = c.data;
  int32_t *partial = ctx.partialIndices();
  ctx.forEachChunk(c.size, [&](int32_t chunk, int32_t begin, int32_t end) {
    // The best so far lives in a local, not behind data[best]: reloading it
    // each step would chain every iteration on a memory load.
    Candidate best = data[begin];
    int32_t at = begin;
    for (int32_t i = begin + 1; i < end; ++i) {
      if (ranksAbove(data[i], best)) {
        best = data[i];
        at = i;
      }
    }
    partial[chunk] = at;
  });
  int32_t best = partial[0];
  for (int32_t chunk = 1, e = SamplerContext::numChunks(c.size); chunk < e;
       ++chunk)
    if (ranksAbove(data[partial[chunk]], data[best]))
      best = partial[chunk];
  return best;
}

void computeProbabilities(Candidates &c, SamplerContext &ctx) {
  const int32_t n = c.size;
  c.probsValid = true;
  if (n <= 0)
    return;
  ctx.reserve(n);
  Candidate *data = c.data;
  double *partial = ctx.partialValues();
  const int32_t chunks = SamplerContext::numChunks(n);

  // Subtract the max so exp() cannot overflow; the max is exact in any order.
  float maxLogit = -kInf;
  if (c.sorted) {
    maxLogit = data[0].logit;
  } else {
    ctx.forEachChunk(n, [&](int32_t chunk, int32_t begin, int32_t end) {
      // Four independent running maxima shorten the dependency chain; max
      // is exact, so the split cannot change the result.
      float m[4] = {-kInf, -kInf, -kInf, -kInf};
      int32_t i = begin;
      for (; i + 4 <= end; i += 4)
        for (int k = 0; k < 4; ++k)
          m[k] = std::max(m[k], data[i + k].logit);
      for (; i < end; ++i)
        m[0] = std::max(m[0], data[i].logit);
      partial[chunk] = std::max(std::max(m[0], m[1]), std::max(m[2], m[3]));
    });
    for (int32_t chunk = 0; chunk < chunks; ++chunk)
      maxLogit = std::max(maxLogit, static_cast<float>(partial[chunk]));
  }

  if (maxLogit == kInf) {
    // inf - inf is NaN: give the +inf candidates equal shares instead.
    int32_t count = 0;
    for (int32_t i = 0; i < n; ++i)
      count += data[i].logit == kInf;
    for (int32_t i = 0; i < n; ++i)
      data[i].p =
          data[i].logit == kInf ? 1.0f / static_cast<float>(count) : 0.0f;
    return;
  }
  if (maxLogit == -kInf) {
    // Everything is masked; keep the result a distribution anyway.
    for (int32_t i = 0; i < n; ++i)
      data[i].p = 0.0f;
    data[findBest(c, ctx)].p = 1.0f;
    return;
  }

  // Per-chunk sums merged in chunk order: the same bits for any thread count.
  ctx.forEachChunk(n, [&](int32_t chunk, int32_t begin, int32_t end) {
    for (int32_t i = begin; i < end; ++i)
      data[i].p = std::exp(data[i].logit - maxLogit);
    // Four interleaved sums, combined in a fixed order: the order depends on
    // the chunk alone, never on threads, and the adds do not wait in line.
    double sum[4] = {0.0, 0.0, 0.0, 0.0};
    int32_t i = begin;
    for (; i + 4 <= end; i += 4)
      for (int k = 0; k < 4; ++k)
        sum[k] += data[i + k].p;
    for (; i < end; ++i)
      sum[0] += data[i].p;
    partial[chunk] = (sum[0] + sum[1]) + (sum[2] + sum[3]);
  });
  double total = 0.0; // >= 1: the max contributes exp(0).
  for (int32_t chunk = 0; chunk < chunks; ++chunk)
    total += partial[chunk];
  ctx.forEachChunk(n, [&](int32_t, int32_t begin, int32_t end) {
    for (int32_t i = begin; i < end; ++i)
      data[i].p = static_cast<float>(data[i].p / total);
  });
}

SamplerChain SamplerChain::fromParams(const SamplingParams &params,
                                      tbb::task_arena *arena) {
  SamplerChain chain(arena);
  // Written so that NaN also means greedy.
  if (!(params.temperature > 0.0f)) {
    chain.add(std::make_unique<GreedyPass>());
    return chain;
  }
  if (params.topK > 0)
    chain.add(std::make_unique<TopKPass>(params.topK));
  if (params.temperature != 1.0f && std::isfinite(params.temperature))
    chain.add(std::make_unique<TemperaturePass>(params.temperature));
  if (params.topP > 0.0f && params.topP < 1.0f)
    chain.add(std::make_unique<TopPPass>(params.topP));
  chain.add(std::make_unique<DistPass>(params.seed));
  return chain;
}

SamplerChain &SamplerChain::add(std::unique_ptr<SamplerPass> pass) {
  passes_.push_back(std::move(pass));
  return *this;
}

void SamplerChain::reserve(int32_t vocabSize) {
  if (vocabSize <= 0)
    return;
  if (candidates_.size() < static_cast<size_t>(vocabSize))
    candidates_.resize(static_cast<size_t>(vocabSize));
  ctx_.reserve(vocabSize);
}

int32_t SamplerChain::sample(const float *logits, int32_t vocabSize) {
  if (!logits || vocabSize <= 0)
    return -1;
  reserve(vocabSize);
  Candidate *data = candidates_.data();
  ctx_.forEachChunk(vocabSize, [&](int32_t, int32_t begin, int32_t end) {
    for (int32_t i = begin; i < end; ++i) {
      float logit = logits[i];
      // NaN would break ranksAbove's strict order, and std::sort with it.
      data[i] = {i, std::isnan(logit) ? -kInf : logit, 0.0f};
    }
  });

  Candidates c;
  c.data = data;
  c.size = vocabSize;
  for (auto &pass : passes_)
    pass->apply(c, ctx_);

  int32_t at =
      c.selected >= 0 && c.selected < c.size ? c.selected : findBest(c, ctx_);
  if (at < 0)
    return -1; // A pass emptied the set, which passes must never do.
  int32_t token = data[at].id;
  accept(token);
  return token;
}

void SamplerChain::accept(int32_t token) {
  for (auto &pass : passes_)
    pass->accept(token);
}

std::string SamplerChain::describe() const {
  if (passes_.empty())
    return "(empty)";
  std::string text;
  for (const auto &pass : passes_) {
    if (!text.empty())
      text += " -> ";
    text += pass->describe();
  }
  return text;
}

} // namespace quill
