// Log-probabilities for --logprobs: the chosen token's and its K best
// alternatives', measured on one candidate set (the raw logits or the set
// the selector sees).
//
// Determinism: the normalizer is a sum of fixed chunks merged in chunk
// order, and the best K are a prefix of ranksAbove's total order, so the
// figures do not depend on the thread count.
// Memory: reserve() sizes everything; measuring allocates nothing.
#pragma once

#include "runtime/sampling/Sampler.h"

#include <cstdint>
#include <vector>

namespace quill {

struct TokenLogprob {
  int32_t token;
  float logprob; ///< Natural log.
};

/// One sampled token's record.
struct StepLogprobs {
  int32_t token = -1;
  float logprob = 0.0f; ///< log p(token) in the measured distribution.
  /// The most likely tokens, best first (ranksAbove: lowest id on ties), at
  /// most K of them; impossible tokens (p = 0) are never listed.
  std::vector<TokenLogprob> top;
};

/// Measures a distribution in two halves: measure() before the selector
/// runs (the normalizer and the best K), finish() once the token is known.
class LogprobsRecorder {
public:
  LogprobsRecorder(int32_t topK, LogprobsMode mode) : topK_(topK > 0 ? topK : 0), mode_(mode) {}

  int32_t topK() const { return topK_; }
  LogprobsMode mode() const { return mode_; }

  /// Sizes the buffers for up to n candidates.
  void reserve(int32_t n);

  /// Takes the log-normalizer of softmax(c's logits) and c's best K.
  void measure(const Candidates &c, SamplerContext &ctx);

  /// Completes the record for the chosen token, whose logit (as measured)
  /// is `logit`.
  void finish(int32_t token, float logit);

  const StepLogprobs &record() const { return record_; }

private:
  /// log softmax of one logit of the measured set.
  float logprobOf(float logit) const;

  int32_t topK_;
  LogprobsMode mode_;
  float maxLogit_ = 0.0f;
  double logNormalizer_ = 0.0;
  /// How many +inf logits share all the mass when maxLogit_ is +inf.
  int32_t infiniteCount_ = 0;
  /// Per chunk, its best min(K, kChunkSize) candidates, best first.
  std::vector<Candidate> chunkBest_;
  std::vector<int32_t> chunkBestSize_;
  /// The merge's position in each chunk's list.
  std::vector<int32_t> chunkCursor_;
  StepLogprobs record_;
};

} // namespace quill
