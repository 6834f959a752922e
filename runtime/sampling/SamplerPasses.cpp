// The standard sampler passes.
#include "runtime/sampling/SamplerPasses.h"

#include <algorithm>
#include <cmath>

namespace quill {

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
    // they hold less than 1 - p. Dropping them first (in place, keeping id
    // order) leaves a short list to sort. If the bound drops everything
    // (p < 1/n), nothing was moved and all candidates are sorted.
    const float cutoff = (1.0f - p_) / static_cast<float>(c.size - 1);
    int32_t kept = 0;
    for (int32_t i = 0; i < c.size; ++i)
      if (c.data[i].p >= cutoff)
        c.data[kept++] = c.data[i];
    if (kept > 0)
      c.size = kept;
    std::sort(c.data, c.data + c.size, ranksAbove);
    c.sorted = true;
  }

  double cumulative = 0.0;
  for (int32_t i = 0; i < c.size; ++i) {
    cumulative += c.data[i].p;
    if (cumulative > p_) {
      c.size = i + 1;
      break;
    }
  }
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
