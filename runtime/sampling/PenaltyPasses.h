// The logit processors that edit the logits of particular token ids rather
// than the whole distribution: logit bias (ids the user names) and the
// repetition, frequency and presence penalties (ids the sequence has used).
//
// Both touch only their ids when the candidates are still in id order
// (Candidates::byId, the usual case: they run first), so a step costs
// O(ids), not O(vocabulary). Placed after a pass that reorders, they fall
// back to one scan with a binary search per candidate.
#pragma once

#include "runtime/sampling/Sampler.h"

#include <cstdint>
#include <vector>

namespace quill {

/// Adds a fixed bias to chosen ids' logits; -inf bans a token. Ids outside
/// the candidates are ignored (SamplingParams validation reports them).
class LogitBiasPass final : public SamplerPass {
public:
  /// Entries with a negative id or a NaN bias are dropped; repeated ids
  /// are summed.
  explicit LogitBiasPass(const std::vector<LogitBias> &biases);
  const char *name() const override { return "logit-bias"; }
  /// e.g. "logit-bias(13=-inf, 42=2.5)", or "logit-bias(120 ids)".
  std::string describe() const override;
  void apply(Candidates &c, SamplerContext &ctx) override;

private:
  std::vector<LogitBias> biases_; ///< Sorted by id, ids unique.
};

/// Penalizes the tokens among the last N of the sequence (prompt included,
/// via accept()). For a token seen `count` times in the window:
///   logit <= 0 ? logit *= repeat : logit /= repeat      (llama.cpp)
///   logit -= count * frequency + presence               (OpenAI)
/// Both push a seen token down for repeat > 1 and positive penalties.
class PenaltiesPass final : public SamplerPass {
public:
  /// Values that would make NaNs (repeat <= 0 or not finite, infinite
  /// penalties) count as off. lastN <= 0 turns the pass off.
  PenaltiesPass(int32_t lastN, float repeat, float frequency, float presence);
  const char *name() const override { return "penalties"; }
  /// e.g. "penalties(last-n=64, repeat=1.1, frequency=0, presence=0)".
  std::string describe() const override;
  void apply(Candidates &c, SamplerContext &ctx) override;
  void accept(int32_t token) override;

private:
  struct Seen {
    int32_t token;
    int32_t count; ///< > 0: occurrences in the window.
  };
  void penalize(float &logit, int32_t count) const;
  void add(int32_t token);
  void remove(int32_t token);

  int32_t lastN_;
  float repeat_, frequency_, presence_;
  /// The window as a ring: it grows to lastN_ tokens, then the slot at
  /// oldest_ is overwritten.
  std::vector<int32_t> window_;
  size_t oldest_ = 0;
  /// The window's distinct tokens and counts, sorted by token: at most
  /// lastN_ entries, kept up to date in O(lastN_) per token (a shift), so
  /// apply() never sorts and nothing allocates once reserved.
  std::vector<Seen> seen_;
};

} // namespace quill
