// Beam selection, hypotheses and the stopping rule.
#include "runtime/decode/BeamSearch.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace quill {

void logSoftmax(const float *logits, int32_t n, double *out) {
  constexpr double kNegInf = -std::numeric_limits<double>::infinity();
  double max = kNegInf;
  for (int32_t i = 0; i < n; ++i)
    if (!std::isnan(logits[i]))
      max = std::max(max, double(logits[i]));
  if (max == kNegInf) {
    std::fill_n(out, n, kNegInf);
    return;
  }
  // Summed in id order: the result does not depend on threads or batches.
  double sum = 0;
  for (int32_t i = 0; i < n; ++i)
    if (!std::isnan(logits[i]))
      sum += std::exp(double(logits[i]) - max);
  double logSum = max + std::log(sum);
  for (int32_t i = 0; i < n; ++i)
    out[i] = std::isnan(logits[i]) ? kNegInf : double(logits[i]) - logSum;
}

BeamSearch::BeamSearch(const BeamSearchOptions &options, std::vector<int32_t> endTokens)
    : options_(options), endTokens_(std::move(endTokens)) {
  options_.beams = std::clamp(options_.beams, 1, kMaxBeams);
  options_.numReturn = std::clamp(options_.numReturn, 1, options_.beams);
  beams_.push_back(Beam{});
}

double BeamSearch::scoreOf(double logprob, int32_t length) const {
  return logprob / std::pow(double(std::max(length, 1)), double(options_.lengthPenalty));
}

void BeamSearch::addHypothesis(BeamHypothesis hypothesis) {
  auto better = [](const BeamHypothesis &a, const BeamHypothesis &b) { return a.score > b.score; };
  // Stable: among equal scores the earlier hypothesis stays ahead.
  auto at = std::upper_bound(hypotheses_.begin(), hypotheses_.end(), hypothesis, better);
  hypotheses_.insert(at, std::move(hypothesis));
  if (int32_t(hypotheses_.size()) > options_.beams)
    hypotheses_.pop_back();
}

std::vector<BeamChoice> BeamSearch::step(const std::vector<const double *> &logprobs,
                                         int32_t vocab) {
  if (done_)
    return {};
  const int32_t n = options_.beams;
  const int32_t proposals = std::min(2 * n, vocab);
  struct Proposal {
    double logprob; ///< Cumulative.
    int32_t beam, token;
  };
  auto ranksAbove = [](const Proposal &a, const Proposal &b) {
    if (a.logprob != b.logprob)
      return a.logprob > b.logprob;
    if (a.beam != b.beam)
      return a.beam < b.beam;
    return a.token < b.token;
  };
  std::vector<Proposal> all;
  std::vector<int32_t> ids(vocab);
  for (int32_t b = 0; b < liveBeams(); ++b) {
    const double *lp = logprobs[b];
    for (int32_t i = 0; i < vocab; ++i)
      ids[i] = i;
    std::partial_sort(ids.begin(), ids.begin() + proposals, ids.end(),
                      [&](int32_t x, int32_t y) { return lp[x] != lp[y] ? lp[x] > lp[y] : x < y; });
    for (int32_t k = 0; k < proposals; ++k)
      if (lp[ids[k]] != -std::numeric_limits<double>::infinity())
        all.push_back({beams_[b].logprob + lp[ids[k]], b, ids[k]});
  }
  std::sort(all.begin(), all.end(), ranksAbove);
  if (int32_t(all.size()) > 2 * n)
    all.resize(2 * n);

  std::vector<BeamChoice> next;
  std::vector<Beam> nextBeams;
  for (size_t rank = 0; rank < all.size() && int32_t(next.size()) < n; ++rank) {
    const Proposal &p = all[rank];
    bool ends = std::find(endTokens_.begin(), endTokens_.end(), p.token) != endTokens_.end();
    if (ends) {
      if (int32_t(rank) < n)
        addHypothesis({beams_[p.beam].tokens, p.logprob, scoreOf(p.logprob, length_), true});
      continue;
    }
    next.push_back({p.beam, p.token});
    Beam beam = beams_[p.beam];
    beam.tokens.push_back(p.token);
    beam.logprob = p.logprob;
    nextBeams.push_back(std::move(beam));
  }
  beams_ = std::move(nextBeams);
  ++length_;

  // Done: nothing left to extend; or N hypotheses and (early stopping, or
  // one beam, which must end like greedy search, or no running beam can
  // still beat the worst hypothesis).
  if (beams_.empty()) {
    done_ = true;
  } else if (int32_t(hypotheses_.size()) >= n) {
    double best = beams_.front().logprob;
    for (const Beam &beam : beams_)
      best = std::max(best, beam.logprob);
    done_ = options_.earlyStopping || n == 1 || hypotheses_.back().score >= scoreOf(best, length_);
  }
  if (done_) {
    beams_.clear();
    return {};
  }
  return next;
}

void BeamSearch::finish() {
  for (Beam &beam : beams_)
    addHypothesis({beam.tokens, beam.logprob, scoreOf(beam.logprob, length_), false});
  beams_.clear();
  done_ = true;
}

std::vector<BeamHypothesis> BeamSearch::results() const {
  std::vector<BeamHypothesis> best(hypotheses_.begin(),
                                   hypotheses_.begin() +
                                       std::min<size_t>(hypotheses_.size(), options_.numReturn));
  return best;
}

} // namespace quill
