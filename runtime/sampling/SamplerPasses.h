// The standard sampler passes: greedy, top-k, temperature, top-p and the
// seeded multinomial draw (dist).
#pragma once

#include "runtime/sampling/Random.h"
#include "runtime/sampling/Sampler.h"

#include <cstdint>

namespace quill {

/// Selects the best-ranked candidate: highest logit, lowest id on ties.
class GreedyPass final : public SamplerPass {
public:
  const char *name() const override { return "greedy"; }
  void apply(Candidates &c, SamplerContext &ctx) override;
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
class TopPPass final : public SamplerPass {
public:
  explicit TopPPass(float p) : p_(p) {}
  const char *name() const override { return "top-p"; }
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

private:
  uint64_t seed_;
  Random rng_;
};

} // namespace quill
