// The standard sampler passes: greedy, top-k, temperature, top-p, min-p and
// the seeded multinomial draw (dist). The processors that edit chosen ids'
// logits (logit bias, penalties) are in PenaltyPasses.h.
#pragma once

#include "runtime/sampling/Random.h"
#include "runtime/sampling/Sampler.h"

#include <cstdint>
#include <cstring>
#include <vector>

namespace quill {

/// Selects the best-ranked candidate: highest logit, lowest id on ties.
class GreedyPass final : public SamplerPass {
public:
  const char *name() const override { return "greedy"; }
  void apply(Candidates &c, SamplerContext &ctx) override;
  bool selects() const override { return true; }
};

/// Keeps the k best-ranked candidates, sorted. k <= 0 keeps all.
class TopKPass final : public SamplerPass {
public:
  explicit TopKPass(int32_t k) : k_(k) {}
  const char *name() const override { return "top-k"; }
  std::string describe() const override;
  void apply(Candidates &c, SamplerContext &ctx) override;

private:
  int32_t k_;
};

/// Divides every logit by the temperature (> 0): below 1 sharpens the
/// distribution, above 1 flattens it.
class TemperaturePass final : public SamplerPass {
public:
  explicit TemperaturePass(float temperature) : temperature_(temperature) {}
  const char *name() const override { return "temperature"; }
  std::string describe() const override;
  void apply(Candidates &c, SamplerContext &ctx) override;

private:
  float temperature_;
};

/// Nucleus sampling: keeps the smallest set of most likely candidates whose
/// probability mass exceeds p (llama2.c's rule; all of them if rounding never
/// gets there), sorted. p >= 1 keeps all.
///
/// Cost: one pass adds up the mass per probability bucket; the buckets then
/// say how far down the nucleus reaches, and only the candidates above that
/// are sorted (a few thousand of 128k for a flat distribution).
class TopPPass final : public SamplerPass {
public:
  explicit TopPPass(float p);
  const char *name() const override { return "top-p"; }
  std::string describe() const override;
  void apply(Candidates &c, SamplerContext &ctx) override;

private:
  /// Buckets of a non-negative float's bit pattern without its low 19 bits:
  /// the exponent and 4 mantissa bits, so 16 buckets per octave. For
  /// non-negative floats the bit pattern orders like the value.
  static constexpr uint32_t kProbabilityBuckets = 1u << 12;
  static uint32_t probabilityBucket(float p) {
    uint32_t bits;
    std::memcpy(&bits, &p, sizeof bits);
    return (bits >> 19) & (kProbabilityBuckets - 1);
  }
  /// Finds, by the mass per probability bucket, the best-ranked candidates
  /// that hold the nucleus, and moves them to the front, sorted; returns how
  /// many, or 0 to leave all the sorting to the incremental blocks.
  int32_t sortNucleusCandidates(Candidates &c);

  float p_;
  /// Probability mass per bucket, refilled by each apply().
  std::vector<double> bucketMass_;
  /// sortByRank's buffer: grows to the largest nucleus sorted.
  std::vector<Candidate> sortScratch_;
};

/// Keeps the candidates with p >= p_min * p_max, i.e. logit >= max logit +
/// log(p_min): a cut that follows the model's confidence (tight when one
/// token dominates, loose when many are close). Compares logits, so it
/// needs no softmax; keeps the order, and the best token always survives.
/// p_min <= 0 keeps all; p_min = 1 keeps the best and its ties.
class MinPPass final : public SamplerPass {
public:
  explicit MinPPass(float p) : p_(p) {}
  const char *name() const override { return "min-p"; }
  std::string describe() const override;
  void apply(Candidates &c, SamplerContext &ctx) override;

private:
  float p_;
};

/// Selects by one multinomial draw over softmax(logits): exactly one float
/// from its seeded stream per call, walked along the CDF in candidate order.
class DistPass final : public SamplerPass {
public:
  explicit DistPass(uint64_t seed) : seed_(seed), rng_(seed) {}
  const char *name() const override { return "dist"; }
  std::string describe() const override;
  void apply(Candidates &c, SamplerContext &ctx) override;
  bool selects() const override { return true; }

private:
  uint64_t seed_;
  Random rng_;
};

} // namespace quill
