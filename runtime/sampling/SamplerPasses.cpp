// The standard sampler passes.
#include "runtime/sampling/SamplerPasses.h"

#include <algorithm>
#include <cmath>

namespace quill {

namespace {
/// Candidates sorted in top-p's first step; later steps double it.
constexpr int32_t kFirstTopPBlock = 64;
} // namespace

void GreedyPass::apply(Candidates &c, SamplerContext &ctx) {
  c.selected = findBest(c, ctx);
}

std::string TopKPass::describe() const {
  return "top-k(" + std::to_string(k_) + ")";
}

void TopKPass::apply(Candidates &c, SamplerContext &) {
  if (k_ <= 0 || k_ >= c.size)
    return;
  if (!c.sorted) {
    // O(n log k): only the kept prefix is ordered.
    std::partial_sort(c.data, c.data + k_, c.data + c.size, ranksAbove);
    c.sorted = true;
  }
  c.size = k_;
  c.probsValid = false;
}

std::string TemperaturePass::describe() const {
  return "temperature(" + formatParam(temperature_) + ")";
}

void TemperaturePass::apply(Candidates &c, SamplerContext &ctx) {
  // Division by 0, inf or NaN would make NaN logits; such a pass is a no-op.
  if (!(temperature_ > 0.0f) || !std::isfinite(temperature_) ||
      temperature_ == 1.0f)
    return;
  Candidate *data = c.data;
  const float temperature = temperature_;
  ctx.forEachChunk(c.size, [&](int32_t, int32_t begin, int32_t end) {
    for (int32_t i = begin; i < end; ++i)
      data[i].logit /= temperature; // Division, as llama2.c does it.
  });
  // A positive divisor keeps the order (ties may appear, never inversions).
  c.probsValid = false;
}

std::string TopPPass::describe() const {
  return "top-p(" + formatParam(p_) + ")";
}

void TopPPass::apply(Candidates &c, SamplerContext &ctx) {
  if (!(p_ < 1.0f) || c.size <= 1)
    return;
  if (!c.probsValid)
    computeProbabilities(c, ctx);
  const int32_t sizeBefore = c.size;

  if (!c.sorted) {
    // Candidates below (1 - p) / (n - 1) cannot be in the nucleus: together
    // they hold less than 1 - p. Dropping them first (in place) leaves less
    // to sort. If the bound drops everything (p < 1/n), nothing was moved.
    const float cutoff = (1.0f - p_) / static_cast<float>(c.size - 1);
    int32_t kept = 0;
    for (int32_t i = 0; i < c.size; ++i)
      if (c.data[i].p >= cutoff)
        c.data[kept++] = c.data[i];
    if (kept > 0)
      c.size = kept;
  }

  // Sort only as far as the nucleus reaches: each time the walk runs off the
  // sorted prefix, nth_element picks the next block of best-ranked candidates
  // and only that block is sorted. Blocks double, so a flat distribution
  // costs a few selections plus one sort, and a peaked one a single block.
  // ranksAbove is a total order, so the prefix equals a full sort's.
  Candidate *data = c.data;
  int32_t sortedEnd = c.sorted ? c.size : 0;
  int64_t block = kFirstTopPBlock; // 64-bit: doubling must not overflow
  double cumulative = 0.0;
  for (int32_t i = 0; i < c.size; ++i) {
    if (i == sortedEnd) {
      int32_t blockEnd = c.size - sortedEnd > block
                             ? sortedEnd + static_cast<int32_t>(block)
                             : c.size;
      block *= 2;
      if (blockEnd < c.size)
        std::nth_element(data + sortedEnd, data + blockEnd, data + c.size,
                         ranksAbove);
      std::sort(data + sortedEnd, data + blockEnd, ranksAbove);
      sortedEnd = blockEnd;
    }
    cumulative += data[i].p;
    if (cumulative > p_) {
      c.size = i + 1;
      break;
    }
  }
  c.sorted = true;
  if (c.size != sizeBefore)
    c.probsValid = false;
}

std::string DistPass::describe() const {
  return "dist(seed=" + std::to_string(seed_) + ")";
}

void DistPass::apply(Candidates &c, SamplerContext &ctx) {
  if (c.size <= 0)
    return;
  if (!c.probsValid)
    computeProbabilities(c, ctx);
  const float coin = rng_.nextFloat();
  double cdf = 0.0;
  int32_t lastPositive = -1;
  for (int32_t i = 0; i < c.size; ++i) {
    float p = c.data[i].p;
    if (!(p > 0.0f))
      continue;
    lastPositive = i;
    cdf += p;
    if (coin < cdf) {
      c.selected = i;
      return;
    }
  }
  // Rounding left the CDF a hair below the coin: take the last live one.
  c.selected = lastPositive >= 0 ? lastPositive : 0;
}

} // namespace quill
