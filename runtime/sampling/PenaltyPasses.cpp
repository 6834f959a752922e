// Logit bias and the repetition/frequency/presence penalties.
#include "runtime/sampling/PenaltyPasses.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace quill {

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

/// Window slots reserved up front: enough for any common --repeat-last-n,
/// so steady state does not allocate; longer windows grow once, as filled.
constexpr int32_t kReservedWindow = 4096;

/// Calls fn(candidate, entry) for every candidate whose id is in `entries`
/// (sorted by a unique `token`/`id` key, read through keyOf).
template <typename Entry, typename KeyOf, typename Fn>
void forEachListed(Candidates &c, const std::vector<Entry> &entries, KeyOf keyOf, Fn fn) {
  if (c.byId) {
    for (const Entry &entry : entries)
      if (keyOf(entry) < c.size)
        fn(c.data[keyOf(entry)], entry);
    return;
  }
  for (int32_t i = 0; i < c.size; ++i) {
    auto it = std::lower_bound(entries.begin(), entries.end(), c.data[i].id,
                               [&](const Entry &entry, int32_t id) { return keyOf(entry) < id; });
    if (it != entries.end() && keyOf(*it) == c.data[i].id)
      fn(c.data[i], *it);
  }
}

} // namespace

//===----------------------------------------------------------------------===//
// LogitBiasPass.
//===----------------------------------------------------------------------===//

LogitBiasPass::LogitBiasPass(const std::vector<LogitBias> &biases) {
  for (const LogitBias &entry : biases)
    if (entry.id >= 0 && !std::isnan(entry.bias))
      biases_.push_back(entry);
  std::stable_sort(biases_.begin(), biases_.end(),
                   [](const LogitBias &a, const LogitBias &b) { return a.id < b.id; });
  // Merge repeated ids, summing in the order given.
  size_t out = 0;
  for (size_t i = 0; i < biases_.size(); ++i) {
    if (out > 0 && biases_[out - 1].id == biases_[i].id)
      biases_[out - 1].bias += biases_[i].bias;
    else
      biases_[out++] = biases_[i];
  }
  biases_.resize(out);
}

std::string LogitBiasPass::describe() const {
  constexpr size_t kListed = 4;
  if (biases_.size() > kListed)
    return "logit-bias(" + std::to_string(biases_.size()) + " ids)";
  std::string text = "logit-bias(";
  for (size_t i = 0; i < biases_.size(); ++i)
    text += (i ? ", " : "") + std::to_string(biases_[i].id) + "=" + formatParam(biases_[i].bias);
  return text + ")";
}

void LogitBiasPass::apply(Candidates &c, SamplerContext &) {
  if (biases_.empty())
    return;
  forEachListed(
      c, biases_, [](const LogitBias &e) { return e.id; },
      [](Candidate &candidate, const LogitBias &entry) {
        float logit = candidate.logit + entry.bias;
        // +inf from the model meeting a -inf ban: the ban wins.
        candidate.logit = std::isnan(logit) ? -kInf : logit;
      });
  c.sorted = false;
  c.probsValid = false;
}

//===----------------------------------------------------------------------===//
// PenaltiesPass.
//===----------------------------------------------------------------------===//

PenaltiesPass::PenaltiesPass(int32_t lastN, float repeat, float frequency, float presence)
    : lastN_(lastN > 0 ? lastN : 0),
      repeat_(std::isfinite(repeat) && repeat > 0.0f ? repeat : 1.0f),
      frequency_(std::isfinite(frequency) ? frequency : 0.0f),
      presence_(std::isfinite(presence) ? presence : 0.0f) {
  size_t reserved = static_cast<size_t>(std::min<int32_t>(lastN_, kReservedWindow));
  window_.reserve(reserved);
  seen_.reserve(reserved);
}

std::string PenaltiesPass::describe() const {
  return "penalties(last-n=" + std::to_string(lastN_) + ", repeat=" + formatParam(repeat_) +
         ", frequency=" + formatParam(frequency_) + ", presence=" + formatParam(presence_) + ")";
}

void PenaltiesPass::add(int32_t token) {
  auto it = std::lower_bound(seen_.begin(), seen_.end(), token,
                             [](const Seen &seen, int32_t t) { return seen.token < t; });
  if (it != seen_.end() && it->token == token)
    ++it->count;
  else
    seen_.insert(it, {token, 1});
}

void PenaltiesPass::remove(int32_t token) {
  auto it = std::lower_bound(seen_.begin(), seen_.end(), token,
                             [](const Seen &seen, int32_t t) { return seen.token < t; });
  if (it == seen_.end() || it->token != token)
    return; // Cannot happen: every window token was add()ed.
  if (--it->count == 0)
    seen_.erase(it);
}

void PenaltiesPass::accept(int32_t token) {
  if (lastN_ == 0 || token < 0)
    return;
  if (window_.size() < static_cast<size_t>(lastN_)) {
    window_.push_back(token);
  } else {
    remove(window_[oldest_]);
    window_[oldest_] = token;
    oldest_ = (oldest_ + 1) % window_.size();
  }
  add(token);
}

void PenaltiesPass::penalize(float &logit, int32_t count) const {
  // llama.cpp's order and arithmetic: the repetition penalty scales toward
  // "less likely" on either side of 0, then the OpenAI terms subtract.
  if (logit <= 0.0f)
    logit *= repeat_;
  else
    logit /= repeat_;
  logit -= static_cast<float>(count) * frequency_ + presence_;
  if (std::isnan(logit)) // Only from an infinite logit minus an infinite
    logit = -kInf;       // product; keep the order strict.
}

void PenaltiesPass::apply(Candidates &c, SamplerContext &) {
  if (seen_.empty())
    return;
  forEachListed(
      c, seen_, [](const Seen &s) { return s.token; },
      [&](Candidate &candidate, const Seen &seen) { penalize(candidate.logit, seen.count); });
  c.sorted = false;
  c.probsValid = false;
}

} // namespace quill
