// Beam search as a selection rule over log-probabilities, independent of how
// they are computed: the scheduler runs the beams' rows through the batch
// step (their KV caches forked, not copied) and asks this class which beams
// live on.
#pragma once

#include <cstdint>
#include <vector>

namespace quill {

struct BeamSearchOptions {
  int32_t beams = 1;
  /// A hypothesis scores logprob / length^lengthPenalty (length: generated
  /// tokens, without the end token): > 0 favours longer ones, 0 ranks by
  /// log-probability alone.
  float lengthPenalty = 1.0f;
  /// Stop as soon as `beams` hypotheses have ended; otherwise stop once no
  /// running beam can still beat the worst of them (Hugging Face's rule).
  bool earlyStopping = false;
  /// Hypotheses returned, best first (at most `beams`).
  int32_t numReturn = 1;
};

/// The most beams a search may keep (and sequences a request may sample).
constexpr int32_t kMaxBeams = 64;

struct BeamHypothesis {
  std::vector<int32_t> tokens; ///< Generated, without the end token.
  double logprob = 0;          ///< Sum of the tokens' log-probabilities (end token included).
  double score = 0;            ///< logprob / length^lengthPenalty.
  bool ended = false;          ///< By the end token (else the budget or the context).
};

/// A beam of the next step: `token` appended to beam `parent` of this one.
struct BeamChoice {
  int32_t parent;
  int32_t token;
};

class BeamSearch {
public:
  /// `endTokens`: ids that end a hypothesis (EOS, and BOS for llama2.c
  /// models).
  BeamSearch(const BeamSearchOptions &options, std::vector<int32_t> endTokens);

  /// Beams running now: one (the prompt) before the first step.
  int32_t liveBeams() const { return static_cast<int32_t>(beams_.size()); }
  /// Tokens generated so far (the same count for every beam).
  int32_t length() const { return length_; }
  const std::vector<int32_t> &tokens(int32_t beam) const { return beams_[beam].tokens; }
  double logprob(int32_t beam) const { return beams_[beam].logprob; }

  /// One step: `logprobs[b]` holds the log-softmax (over `vocab` entries)
  /// of running beam b's processed logits. Each beam proposes its 2N best
  /// tokens; of all proposals, the 2N best by cumulative log-probability
  /// are taken in order (ties: lower beam, then lower id): an end token
  /// among the first N ends a hypothesis, any other token makes a beam of
  /// the next step, until there are N. Returns those; empty when the
  /// search is done.
  std::vector<BeamChoice> step(const std::vector<const double *> &logprobs, int32_t vocab);
  bool done() const { return done_; }
  /// Ends the search here: the running beams become hypotheses (the token
  /// budget or the context is used up).
  void finish();
  /// The best numReturn hypotheses, best score first.
  std::vector<BeamHypothesis> results() const;

private:
  struct Beam {
    std::vector<int32_t> tokens;
    double logprob = 0;
  };
  double scoreOf(double logprob, int32_t length) const;
  /// Keeps the N best hypotheses.
  void addHypothesis(BeamHypothesis hypothesis);

  BeamSearchOptions options_;
  std::vector<int32_t> endTokens_;
  std::vector<Beam> beams_;
  std::vector<BeamHypothesis> hypotheses_;
  int32_t length_ = 0;
  bool done_ = false;
};

/// log-softmax of `logits` in double precision (so that distinct logits
/// stay distinct, and argmax is the logits' argmax); -inf and NaN logits
/// get -inf.
void logSoftmax(const float *logits, int32_t n, double *out);

} // namespace quill
