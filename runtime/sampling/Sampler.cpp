// The sampler chain and the deterministic softmax/argmax its passes share.
#include "runtime/sampling/Sampler.h"

#include "runtime/sampling/Logprobs.h"
#include "runtime/sampling/PenaltyPasses.h"
#include "runtime/sampling/SamplerPasses.h"
#include "runtime/support/Trace.h"

#include <algorithm>
#include <cmath>
#include <cstring>
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
  for (int32_t chunk = 1, e = SamplerContext::numChunks(c.size); chunk < e; ++chunk)
    if (ranksAbove(data[partial[chunk]], data[best]))
      best = partial[chunk];
  return best;
}

namespace {

/// A key whose ascending order is ranksAbove's: the logit's bits mapped so
/// that unsigned order is float order, inverted (higher logit first), above
/// the id (lower id first on ties). NaN never occurs; -0 and +0 compare
/// equal as floats, so both map to +0's key.
uint64_t rankKey(const Candidate &c) {
  float logit = c.logit == 0.0f ? 0.0f : c.logit;
  uint32_t bits;
  std::memcpy(&bits, &logit, sizeof bits);
  uint32_t ordered = (bits & 0x80000000u) ? ~bits : (bits | 0x80000000u);
  return (static_cast<uint64_t>(~ordered) << 32) | static_cast<uint32_t>(c.id);
}

/// Below this many candidates std::sort beats the radix sort's fixed
/// passes over its 256-entry counts.
constexpr int32_t kMinRadixSort = 1024;

} // namespace

void sortByRank(Candidate *data, int32_t n, std::vector<Candidate> &scratch) {
  if (n < kMinRadixSort) {
    std::sort(data, data + n, ranksAbove);
    return;
  }
  if (scratch.size() < static_cast<size_t>(n))
    scratch.resize(static_cast<size_t>(n));
  // One pass counts all eight byte digits; a digit every key shares (the
  // high bytes of small ids, often the logits' top byte) needs no pass.
  uint32_t counts[8][256] = {};
  for (int32_t i = 0; i < n; ++i) {
    uint64_t key = rankKey(data[i]);
    for (int digit = 0; digit < 8; ++digit)
      ++counts[digit][(key >> (8 * digit)) & 0xFF];
  }
  Candidate *from = data, *to = scratch.data();
  for (int digit = 0; digit < 8; ++digit) {
    uint32_t *count = counts[digit];
    const uint32_t firstDigit = (rankKey(from[0]) >> (8 * digit)) & 0xFF;
    if (count[firstDigit] == static_cast<uint32_t>(n))
      continue;
    uint32_t offset = 0;
    for (int b = 0; b < 256; ++b) {
      uint32_t here = count[b];
      count[b] = offset;
      offset += here;
    }
    // Least significant digit first, each pass stable: the final order is
    // the keys' order, which is a total order, so this equals std::sort's.
    for (int32_t i = 0; i < n; ++i)
      to[count[(rankKey(from[i]) >> (8 * digit)) & 0xFF]++] = from[i];
    std::swap(from, to);
  }
  if (from != data)
    std::copy(from, from + n, data);
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
      data[i].p = data[i].logit == kInf ? 1.0f / static_cast<float>(count) : 0.0f;
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

SamplerChain::SamplerChain(tbb::task_arena *arena) : ctx_(arena) {}
SamplerChain::SamplerChain(SamplerChain &&) = default;
SamplerChain &SamplerChain::operator=(SamplerChain &&) = default;
SamplerChain::~SamplerChain() = default;

SamplerChain SamplerChain::fromParams(const SamplingParams &params, tbb::task_arena *arena) {
  SamplerChain chain(arena);
  if (params.logprobs)
    chain.enableLogprobs(params.topLogprobs, params.logprobsMode);
  if (!params.logitBias.empty())
    chain.add(std::make_unique<LogitBiasPass>(params.logitBias));
  // Written so that NaN also means greedy.
  const bool greedy = !(params.temperature > 0.0f);
  for (ProcessorKind kind : params.order) {
    switch (kind) {
    case ProcessorKind::Penalties:
      if (params.repeatLastN > 0 &&
          (params.repeatPenalty != 1.0f || params.frequencyPenalty != 0.0f ||
           params.presencePenalty != 0.0f))
        chain.add(std::make_unique<PenaltiesPass>(params.repeatLastN, params.repeatPenalty,
                                                  params.frequencyPenalty, params.presencePenalty));
      break;
    case ProcessorKind::TopK:
      if (!greedy && params.topK > 0)
        chain.add(std::make_unique<TopKPass>(params.topK));
      break;
    case ProcessorKind::TopP:
      if (!greedy && params.topP > 0.0f && params.topP < 1.0f)
        chain.add(std::make_unique<TopPPass>(params.topP));
      break;
    case ProcessorKind::MinP:
      if (!greedy && params.minP > 0.0f && params.minP <= 1.0f)
        chain.add(std::make_unique<MinPPass>(params.minP));
      break;
    case ProcessorKind::Temperature:
      if (!greedy && params.temperature != 1.0f && std::isfinite(params.temperature))
        chain.add(std::make_unique<TemperaturePass>(params.temperature));
      break;
    }
  }
  if (greedy)
    chain.add(std::make_unique<GreedyPass>());
  else
    chain.add(std::make_unique<DistPass>(params.seed));
  return chain;
}

void SamplerChain::enableLogprobs(int32_t topK, LogprobsMode mode) {
  logprobs_ = std::make_unique<LogprobsRecorder>(topK, mode);
  logprobsValid_ = false;
  if (!candidates_.empty())
    logprobs_->reserve(static_cast<int32_t>(candidates_.size()));
}

const StepLogprobs *SamplerChain::lastLogprobs() const {
  return logprobs_ && logprobsValid_ ? &logprobs_->record() : nullptr;
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
  if (logprobs_)
    logprobs_->reserve(vocabSize);
}

int32_t SamplerChain::sample(const float *logits, int32_t vocabSize) {
  logprobsValid_ = false;
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
  c.byId = true;
  // Raw logprobs are measured before any pass, processed ones just before
  // the selector (or at the end of a chain without one).
  const bool raw = logprobs_ && logprobs_->mode() == LogprobsMode::Raw;
  bool measured = false;
  if (logprobs_ && raw) {
    logprobs_->measure(c, ctx_);
    measured = true;
  }
  for (auto &pass : passes_) {
    if (logprobs_ && !measured && pass->selects()) {
      logprobs_->measure(c, ctx_);
      measured = true;
    }
    trace::Scope traced("sampling", pass->name(),
                        trace::enabled() ? trace::Args().add("candidates", c.size) : trace::Args());
    pass->apply(c, ctx_);
  }
  if (logprobs_ && !measured)
    logprobs_->measure(c, ctx_);

  int32_t at = c.selected >= 0 && c.selected < c.size ? c.selected : findBest(c, ctx_);
  // An empty set (which passes must never leave) or a best candidate at
  // -inf: every token is impossible, so there is nothing honest to pick.
  if (at < 0 || data[at].logit == -kInf)
    return -1;
  int32_t token = data[at].id;
  if (logprobs_) {
    float logit = raw ? (std::isnan(logits[token]) ? -kInf : logits[token]) : data[at].logit;
    logprobs_->finish(token, logit);
    logprobsValid_ = true;
  }
  accept(token);
  return token;
}

void SamplerChain::process(const float *logits, int32_t vocabSize, float *out) {
  reserve(vocabSize);
  Candidate *data = candidates_.data();
  for (int32_t i = 0; i < vocabSize; ++i)
    data[i] = {i, std::isnan(logits[i]) ? -kInf : logits[i], 0.0f};
  Candidates c;
  c.data = data;
  c.size = vocabSize;
  c.byId = true;
  for (auto &pass : passes_)
    if (!pass->selects()) {
      trace::Scope traced("sampling", pass->name());
      pass->apply(c, ctx_);
    }
  std::fill_n(out, vocabSize, -kInf);
  for (int32_t i = 0; i < c.size; ++i)
    out[data[i].id] = data[i].logit;
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
