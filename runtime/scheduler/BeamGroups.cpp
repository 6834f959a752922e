// Beam bookkeeping: stepping a group's search, continuing and ending its
// beams' sequences, and the finished search's result.
#include "runtime/scheduler/BeamGroups.h"

#include <algorithm>

namespace quill::scheduler {

std::vector<int32_t> beamEndTokens(const GenerationRequest &request, const ModelConfig &config) {
  if (request.ignoreEos)
    return {};
  return config.endTokens();
}

/// The log-softmax of each beam's processed logits, beam by beam.
static std::vector<std::vector<double>> beamLogprobs(const std::vector<LogitRow> &byBeam,
                                                     int32_t vocab) {
  std::vector<std::vector<double>> logprobs(byBeam.size(), std::vector<double>(vocab));
  std::vector<float> processed(vocab);
  for (size_t b = 0; b < byBeam.size(); ++b) {
    byBeam[b].first->sampler->process(byBeam[b].second, vocab, processed.data());
    logSoftmax(processed.data(), vocab, logprobs[b].data());
  }
  return logprobs;
}

/// Each choice continues its parent: the first in place, the others in
/// forks of it; parents nobody continues end.
static void continueBeams(const BeamSearch &search, const std::vector<BeamChoice> &choices,
                          const std::vector<LogitRow> &byBeam, PagedKVCache &cache,
                          const SequenceFactory &sequences, SequenceList &born,
                          std::vector<Sequence *> &ended) {
  std::vector<bool> claimed(byBeam.size(), false);
  std::vector<std::pair<Sequence *, int32_t>> continued; // (sequence, new member)
  for (int32_t i = 0; i < int32_t(choices.size()); ++i) {
    Sequence &parent = *byBeam[choices[i].parent].first;
    if (!claimed[choices[i].parent]) {
      claimed[choices[i].parent] = true;
      continued.push_back({&parent, i});
      continue;
    }
    born.push_back(sequences.fork(cache, parent, i));
    // A fork's processors saw the prompt; they also see the beam's tokens
    // before the new one (accepted below, as for every beam).
    const std::vector<int32_t> &history = search.tokens(i);
    for (size_t t = 0; t + 1 < history.size(); ++t)
      born.back()->sampler->accept(history[t]);
    continued.push_back({born.back().get(), i});
  }
  for (size_t b = 0; b < byBeam.size(); ++b)
    if (!claimed[b])
      ended.push_back(byBeam[b].first);
  for (auto &[q, member] : continued) {
    q->member = member;
    q->pending = choices[member].token;
    q->sampler->accept(q->pending);
  }
}

Status stepBeams(Group &group, const std::vector<LogitRow> &rows, const GenerationRequest &request,
                 PagedKVCache &cache, const SequenceFactory &sequences, SequenceList &born,
                 std::vector<Sequence *> &ended) {
  BeamSearch &search = *group.beams;
  if (int32_t(rows.size()) != search.liveBeams())
    return Status::error("internal error: request " + std::to_string(group.index) + " has " +
                         std::to_string(rows.size()) + " logits rows for " +
                         std::to_string(search.liveBeams()) + " beams");
  group.forked = true;
  const int32_t vocab = sequences.config().vocabSize;
  std::vector<LogitRow> byBeam(rows);
  std::sort(byBeam.begin(), byBeam.end(),
            [](const auto &a, const auto &b) { return a.first->member < b.first->member; });
  std::vector<std::vector<double>> logprobs = beamLogprobs(byBeam, vocab);
  std::vector<const double *> rowPointers;
  for (const std::vector<double> &row : logprobs)
    rowPointers.push_back(row.data());
  std::vector<BeamChoice> choices;
  if (request.maxNewTokens > 0)
    choices = search.step(rowPointers, vocab);
  else
    search.finish(); // No token to generate: the prompt alone.
  bool atEnd = group.interrupted() || search.length() >= request.maxNewTokens ||
               cache.length(byBeam.front().first->kv) >= sequences.config().seqLen;
  if (!search.done() && atEnd)
    search.finish();
  if (search.done()) {
    for (auto &[q, logits] : byBeam)
      ended.push_back(q);
    return Status::ok();
  }
  continueBeams(search, choices, byBeam, cache, sequences, born, ended);
  return Status::ok();
}

void recordBeamTimes(Group &group, const Sequence &q, Clock::time_point now) {
  if (group.results.empty())
    group.results.resize(1);
  group.results[0].prefillSeconds = secondsBetween(q.admitted, q.firstToken);
  group.results[0].decodeSeconds = secondsBetween(q.firstToken, now);
}

/// Hypothesis `h` of a search for `request`, replayed through the output
/// rules: its text, and a stop string cuts it (the search itself ranks
/// whole hypotheses).
static GenerationResult replayHypothesis(const BeamHypothesis &h, const GenerationRequest &request,
                                         const std::vector<int32_t> &prompt,
                                         const Tokenizer &tokenizer, const ModelConfig &config) {
  GenerationResult r;
  r.promptTokens = prompt;
  SequenceOutput output(tokenizer, config, request, r);
  bool going = true;
  for (size_t t = 0; t < h.tokens.size() && going; ++t)
    going = output.accept(h.tokens[t], nullptr);
  output.finish();
  const bool interrupted = request.interrupt && request.interrupt->load(std::memory_order_relaxed);
  if (r.stop != StopReason::StopString)
    r.stop = h.ended                                            ? StopReason::Eos
             : int32_t(h.tokens.size()) >= request.maxNewTokens ? StopReason::Length
             : interrupted                                      ? StopReason::Interrupted
                                                                : StopReason::Context;
  r.logprob = h.logprob;
  r.score = h.score;
  return r;
}

ErrorOr<BeamOutcome> beamGroupResult(const Group &group, const GenerationRequest &request,
                                     const std::vector<int32_t> &prompt, const Tokenizer &tokenizer,
                                     const ModelConfig &config) {
  std::vector<BeamHypothesis> found = group.beams->results();
  if (found.empty())
    return Status::error("request " + std::to_string(group.index) +
                         ": beam search found no token to pick: every logit is NaN or -inf "
                         "after the logit processors");
  std::vector<GenerationResult> sequences;
  for (const BeamHypothesis &h : found) {
    GenerationResult r = replayHypothesis(h, request, prompt, tokenizer, config);
    if (!group.results.empty()) {
      r.prefillSeconds = group.results[0].prefillSeconds;
      r.decodeSeconds = group.results[0].decodeSeconds;
    }
    sequences.push_back(std::move(r));
  }
  BeamOutcome outcome;
  outcome.generatedTokens = int64_t(found[0].tokens.size());
  outcome.result = sequences[0];
  outcome.result.promptTokens = prompt;
  outcome.result.sequences = std::move(sequences);
  return outcome;
}

} // namespace quill::scheduler
