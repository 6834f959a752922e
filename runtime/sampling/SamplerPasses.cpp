// The standard sampler passes.
#include "runtime/sampling/SamplerPasses.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace quill {

namespace {
constexpr float kInf = std::numeric_limits<float>::infinity();
/// Candidates sorted in top-p's first step; later steps double it.
constexpr int32_t kFirstTopPBlock = 64;
} // namespace

void GreedyPass::apply(Candidates &c, SamplerContext &ctx) { c.selected = findBest(c, ctx); }

std::string TopKPass::describe() const { return "top-k(" + std::to_string(k_) + ")"; }

void TopKPass::apply(Candidates &c, SamplerContext &) {
  if (k_ <= 0 || k_ >= c.size)
    return;
  if (!c.sorted) {
    // O(n log k): only the kept prefix is ordered.
    std::partial_sort(c.data, c.data + k_, c.data + c.size, ranksAbove);
    c.sorted = true;
    c.byId = false;
  }
  c.size = k_;
  c.probsValid = false;
}

std::string TemperaturePass::describe() const {
  return "temperature(" + formatParam(temperature_) + ")";
}

void TemperaturePass::apply(Candidates &c, SamplerContext &ctx) {
  // Division by 0, inf or NaN would make NaN logits; such a pass is a no-op.
  if (!(temperature_ > 0.0f) || !std::isfinite(temperature_) || temperature_ == 1.0f)
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

std::string TopPPass::describe() const { return "top-p(" + formatParam(p_) + ")"; }

TopPPass::TopPPass(float p) : p_(p), bucketMass_(kProbabilityBuckets, 0.0) {}

void TopPPass::apply(Candidates &c, SamplerContext &ctx) {
  if (!(p_ < 1.0f) || c.size <= 1)
    return;
  if (!c.probsValid)
    computeProbabilities(c, ctx);
  const int32_t sizeBefore = c.size;
  if (!c.sorted)
    c.byId = false; // Both the tail cut and the sort below move candidates.

  Candidate *data = c.data;
  int32_t sortedEnd = c.sorted ? c.size : 0;
  if (!c.sorted) {
    // Candidates below (1 - p) / (n - 1) cannot be in the nucleus: together
    // they hold less than 1 - p. Dropping them first (in place) leaves less
    // to sort. The cut runs only while n * cutoff <= 1/2, so that the best
    // candidate (p >= 1/n) always survives it; for p < ~1/n it would drop
    // everything, and the nucleus is one token anyway.
    const float cutoff = (1.0f - p_) / static_cast<float>(c.size - 1);
    if (static_cast<double>(cutoff) * c.size <= 0.5) {
      int32_t kept = 0;
      for (int32_t i = 0; i < c.size; ++i) {
        // Branch-free: whether a candidate is kept is a coin flip to the
        // branch predictor. A dropped one is overwritten by the next.
        const Candidate candidate = data[i];
        data[kept] = candidate;
        kept += candidate.p >= cutoff;
      }
      c.size = kept;
    }
    sortedEnd = sortNucleusCandidates(c);
  }

  // Sort only as far as the nucleus reaches. The buckets usually sorted
  // exactly the candidates the walk needs; should rounding have left the
  // walk short, each time it runs off the sorted prefix nth_element picks
  // the next block of best-ranked candidates and only that block is sorted.
  // ranksAbove is a total order, so the prefix equals a full sort's and the
  // walk (in that order) gives the same nucleus as a full sort.
  int64_t block = kFirstTopPBlock; // 64-bit: doubling must not overflow
  double cumulative = 0.0;
  for (int32_t i = 0; i < c.size; ++i) {
    if (i == sortedEnd) {
      int32_t blockEnd =
          c.size - sortedEnd > block ? sortedEnd + static_cast<int32_t>(block) : c.size;
      block *= 2;
      if (blockEnd < c.size)
        std::nth_element(data + sortedEnd, data + blockEnd, data + c.size, ranksAbove);
      sortByRank(data + sortedEnd, blockEnd - sortedEnd, sortScratch_);
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

int32_t TopPPass::sortNucleusCandidates(Candidates &c) {
  Candidate *data = c.data;
  const int32_t n = c.size;
  // The probability mass per bucket.
  std::fill(bucketMass_.begin(), bucketMass_.end(), 0.0);
  uint32_t topBucket = 0;
  for (int32_t i = 0; i < n; ++i) {
    uint32_t bucket = probabilityBucket(data[i].p);
    bucketMass_[bucket] += data[i].p;
    topBucket = std::max(topBucket, bucket);
  }
  // The highest buckets whose mass exceeds p hold the nucleus. The margin
  // covers summing in another order than the walk: should it still fall
  // short, the walk goes on in blocks, so this only has to be fast.
  constexpr double kMargin = 1e-6;
  double mass = 0.0;
  int64_t boundary = -1;
  for (int64_t bucket = topBucket; bucket >= 0; --bucket) {
    mass += bucketMass_[static_cast<size_t>(bucket)];
    if (mass > static_cast<double>(p_) + kMargin) {
      boundary = bucket;
      break;
    }
  }
  if (boundary <= 0)
    return 0; // The walk needs (nearly) everything: leave it to the blocks.
  // Select by logit rather than by bucket: every candidate ranked above a
  // selected one is then selected too, whatever the rounding of exp().
  float threshold = kInf;
  for (int32_t i = 0; i < n; ++i)
    threshold = std::min(threshold, probabilityBucket(data[i].p) >= static_cast<uint32_t>(boundary)
                                        ? data[i].logit
                                        : kInf);
  Candidate *end =
      std::partition(data, data + n, [&](const Candidate &x) { return x.logit >= threshold; });
  sortByRank(data, static_cast<int32_t>(end - data), sortScratch_);
  return static_cast<int32_t>(end - data);
}

std::string MinPPass::describe() const { return "min-p(" + formatParam(p_) + ")"; }

void MinPPass::apply(Candidates &c, SamplerContext &ctx) {
  if (!(p_ > 0.0f) || c.size <= 1)
    return;
  Candidate *data = c.data;
  float maxLogit = data[0].logit;
  if (!c.sorted) {
    ctx.reserve(c.size);
    double *partial = ctx.partialValues();
    ctx.forEachChunk(c.size, [&](int32_t chunk, int32_t begin, int32_t end) {
      float m = -kInf;
      for (int32_t i = begin; i < end; ++i)
        m = std::max(m, data[i].logit);
      partial[chunk] = m;
    });
    for (int32_t chunk = 0, e = SamplerContext::numChunks(c.size); chunk < e; ++chunk)
      maxLogit = std::max(maxLogit, static_cast<float>(partial[chunk]));
  }
  // All masked: there is no p_max to scale; the chain reports the -inf.
  if (maxLogit == -kInf)
    return;
  // p_i / p_max = exp(logit_i - max): the softmax's normalizer cancels.
  // (With a +inf max the threshold is +inf: the +inf candidates stay.)
  const float threshold = maxLogit + std::log(std::min(p_, 1.0f));
  int32_t kept;
  if (c.sorted) {
    kept = static_cast<int32_t>(
        std::partition_point(data, data + c.size,
                             [&](const Candidate &x) { return x.logit >= threshold; }) -
        data);
  } else {
    // In place and in order; sequential, since chunks would have to write
    // over one another's input.
    kept = 0;
    for (int32_t i = 0; i < c.size; ++i)
      if (data[i].logit >= threshold)
        data[kept++] = data[i];
  }
  if (kept == c.size)
    return;
  c.size = kept;
  c.probsValid = false;
  c.byId = false;
}

std::string DistPass::describe() const { return "dist(seed=" + std::to_string(seed_) + ")"; }

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
