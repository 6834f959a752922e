// Helpers shared by the sampler tests: logits from probabilities, and a
// candidate set to drive single passes by hand.
#pragma once

#include "runtime/sampling/Sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace quill::test {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

/// Natural logs of probabilities: softmax gives the probabilities back.
inline std::vector<float> logsOf(const std::vector<double> &probs) {
  std::vector<float> logits;
  for (double p : probs)
    logits.push_back(static_cast<float>(std::log(p)));
  return logits;
}

/// Candidates in id order, as the chain hands them to its first pass.
struct CandidateSet {
  explicit CandidateSet(const std::vector<float> &logits) {
    for (size_t i = 0; i < logits.size(); ++i)
      storage.push_back({static_cast<int32_t>(i), logits[i], 0.0f});
    c.data = storage.data();
    c.size = static_cast<int32_t>(storage.size());
    c.byId = true;
  }
  std::vector<int32_t> ids() const {
    std::vector<int32_t> out;
    for (int32_t i = 0; i < c.size; ++i)
      out.push_back(c.data[i].id);
    return out;
  }
  /// The logit of token id, wherever the passes moved it.
  float logitOf(int32_t id) const {
    for (int32_t i = 0; i < c.size; ++i)
      if (c.data[i].id == id)
        return c.data[i].logit;
    ADD_FAILURE() << "id " << id << " is not a candidate";
    return kNaN;
  }
  std::vector<Candidate> storage;
  Candidates c;
};

/// The candidates of `logits` with their probabilities, most likely first:
/// the full-sort reference that top-p is checked against.
inline std::vector<Candidate> rankedByProbability(const std::vector<float> &logits) {
  CandidateSet reference(logits);
  SamplerContext ctx;
  computeProbabilities(reference.c, ctx);
  std::sort(reference.storage.begin(), reference.storage.end(), ranksAbove);
  return reference.storage;
}

/// How many of `ranked` the nucleus of mass `p` keeps: the smallest prefix
/// whose mass exceeds p (llama2.c's rule), or all.
inline size_t nucleusSize(const std::vector<Candidate> &ranked, float p) {
  double cumulative = 0.0;
  for (size_t i = 0; i < ranked.size(); ++i) {
    cumulative += ranked[i].p;
    if (cumulative > p)
      return i + 1;
  }
  return ranked.size();
}

} // namespace quill::test
