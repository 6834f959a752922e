// Continuous batching: admission against the KV budget, prefix sharing,
// row assembly for the batch step, and per-sequence sampling.
#include "runtime/scheduler/BatchScheduler.h"

#include "runtime/scheduler/SchedulerRun.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <cstdio>
#include <cstdlib>
#include <memory>

namespace quill {


ErrorOr<std::unique_ptr<PagedKVCache>> createPagedCache(Device &device, const ModelConfig &config,
                                                        uint64_t budgetBytes, int32_t sequences) {
  const BatchLayout *batch = device.batchLayout();
  if (!batch)
    return Status::error("the artifact has no batch step");
  PagedKVLayout layout = pagedLayoutFor(*batch, config);
  int64_t blocks;
  if (budgetBytes > 0) {
    blocks = PagedKVCache::blocksForBudget(layout, budgetBytes);
    if (blocks < 2)
      return Status::error("a KV budget of " + std::to_string(budgetBytes >> 20) +
                           " MB does not hold one block (" +
                           std::to_string(layout.bytesPerBlock()) + " bytes)");
  } else {
    // Every sequence in flight can reach the full context, within 1 GiB.
    int64_t full = int64_t(sequences) * ceilDiv(config.seqLen, batch->blockSize) + 1;
    blocks = std::min<int64_t>(full, PagedKVCache::blocksForBudget(layout, uint64_t(1) << 30));
    blocks = std::max<int64_t>(blocks, 2);
  }
  if (blocks > batch->maxBlocks)
    return Status::error("a KV budget of " + std::to_string(blocks) + " blocks exceeds the " +
                         std::to_string(batch->maxBlocks) + " the compiled kernels address");
  auto cache = PagedKVCache::create(layout, static_cast<int32_t>(blocks));
  if (!cache)
    return cache.status();
  if (Status s = device.attachPagedCache(**cache); !s)
    return s;
  return cache;
}

PagedKVLayout pagedLayoutFor(const BatchLayout &batch, const ModelConfig &config) {
  PagedKVLayout layout;
  layout.blockSize = batch.blockSize;
  layout.sections = batch.sections;
  layout.rowBytes = uint64_t(config.kvDim()) * sizeof(float);
  layout.maxPositions = config.seqLen;
  return layout;
}

int32_t BatchScheduler::Run::futureBlocks(const Sequence &q) const {
  const PagedKVCache &cache = s_.cache_;
  const int32_t blockSize = layout_.blockSize;
  const std::vector<int32_t> &table = cache.blockTable(q.kv);
  int32_t length = cache.length(q.kv);
  if (q.group->width > 1 && (!q.group->forked || q.group->beams)) {
    // Every sequence the group may have (a beam search's count goes down
    // and up again) may fill its own blocks from the last whole block it
    // holds on, the partial one copied on write. Counted once per group
    // (see fits()).
    return q.group->width * std::max(0, ceilDiv(q.maxPositions, blockSize) - length / blockSize);
  }
  int32_t blocks = std::max(0, ceilDiv(q.maxPositions, blockSize) - int32_t(table.size()));
  if (length % blockSize != 0 && length < q.maxPositions && cache.refCount(table.back()) > 1)
    ++blocks; // Copy-on-write of the shared last block.
  return blocks;
}

bool BatchScheduler::Run::fits(const Sequence &q) const {
  int64_t committed = s_.cache_.usedBlocks() + futureBlocks(q);
  std::vector<const Group *> counted; // Groups reserved for as a whole, once.
  for (const auto &other : live_) {
    const Group *group = other->group.get();
    bool whole = group->width > 1 && (!group->forked || group->beams);
    if (whole && std::find(counted.begin(), counted.end(), group) != counted.end())
      continue;
    if (whole)
      counted.push_back(group);
    committed += futureBlocks(*other);
  }
  return committed <= s_.cache_.totalBlocks();
}

int32_t BatchScheduler::Run::slotsInUse() const {
  // A beam search may have up to `width` sequences at any step; n samples
  // have `width` until they fork, then as many as are still running.
  int32_t slots = 0;
  std::vector<const Group *> counted;
  for (const auto &q : live_) {
    const Group *group = q->group.get();
    if (std::find(counted.begin(), counted.end(), group) != counted.end())
      continue;
    counted.push_back(group);
    slots += group->beams || !group->forked ? group->width : group->live;
  }
  return slots;
}

void BatchScheduler::Run::admit() {
  PagedKVCache &cache = s_.cache_;
  const int32_t blockSize = layout_.blockSize;
  while (!waiting_.empty()) {
    size_t index = waiting_.front();
    const GenerationRequest &request = requests_[index];
    const int32_t width = request.beamSearch ? request.beamSearch->beams : request.samples;
    if (width > maxSequences_) {
      fail(index, "request " + std::to_string(index) + " needs " + std::to_string(width) +
                      " sequences at once but at most " + std::to_string(maxSequences_) +
                      " run together (--batch, --batch-rows)");
      waiting_.pop_front();
      continue;
    }
    if (slotsInUse() + width > maxSequences_)
      return;
    const std::vector<int32_t> &prompt = prompts_[index];
    const int32_t promptLength = static_cast<int32_t>(prompt.size());
    // The last prompt token always runs: its row yields the first logits.
    const int32_t shareable = promptLength - 1;
    const int32_t maxPositions =
        std::min<int32_t>(promptLength + std::max(0, request.maxNewTokens - 1), s_.config_.seqLen);

    // A sequence still in prefill that will compute a whole block more of
    // this prompt: wait for it rather than compute that block twice.
    PagedKVCache::SequenceId donor = -1;
    int32_t shared = 0;
    if (s_.options_.sharePrefixes) {
      for (const auto &q : live_) {
        int32_t common = std::min(commonPrefix(prompt, q->tokens, q->promptLength), shareable);
        int32_t computed = cache.length(q->kv);
        if (q->pending < 0 && common >= computed + blockSize)
          return;
        common = std::min(common, computed);
        if (common > shared)
          shared = common, donor = q->kv;
      }
      for (const PrefixHolder &h : holders_) {
        int32_t common = std::min(
            commonPrefix(prompt, h.tokens, static_cast<int32_t>(h.tokens.size())), shareable);
        if (common > shared)
          shared = common, donor = h.kv;
      }
    }

    auto q = std::make_unique<Sequence>();
    q->group = std::make_shared<Group>();
    q->group->index = index;
    q->group->width = width;
    q->tokens = prompt;
    q->promptLength = promptLength;
    q->maxPositions = maxPositions;
    if (donor >= 0) {
      q->kv = cache.fork(donor);
      cache.truncate(q->kv, shared);
    } else {
      q->kv = cache.createSequence();
      shared = 0;
    }
    if (!fits(*q)) {
      cache.free(q->kv);
      int32_t alone = width * ceilDiv(maxPositions, blockSize);
      if (alone > cache.totalBlocks()) {
        double mib = double(alone + 1) * cache.bytesPerBlock() / (1024.0 * 1024.0);
        double have = double(cache.totalBlocks() + 1) * cache.bytesPerBlock() / (1024.0 * 1024.0);
        fail(index, "request " + std::to_string(index) + " needs " + std::to_string(alone) +
                        " KV blocks (" + std::to_string(maxPositions) + " positions" +
                        (width > 1 ? " for each of " + std::to_string(width) + " sequences" : "") +
                        ", " + std::to_string(mib) + " MiB) but the KV budget holds " +
                        std::to_string(cache.totalBlocks()) + " (" + std::to_string(have) +
                        " MiB): raise --kv-budget or lower -n");
        waiting_.pop_front();
        continue;
      }
      if (live_.empty() && !holders_.empty()) {
        releaseHolders(/*all=*/true);
        continue;
      }
      return; // Waits for blocks to free up.
    }
    waiting_.pop_front();
    stats_.prefixTokensReused += shared;
    Group &group = *q->group;
    group.live = 1;
    if (request.beamSearch) {
      std::vector<int32_t> ends = {s_.config_.eosId};
      if (!request.ignoreEos && s_.config_.bosId != s_.config_.eosId)
        ends.push_back(s_.config_.bosId);
      if (request.ignoreEos)
        ends.clear();
      group.beams.emplace(*request.beamSearch, ends);
    } else {
      group.results.resize(width);
      group.done.assign(width, false);
    }
    q->result.promptTokens = prompt;
    q->sampler.emplace(s_.samplers_(index, 0));
    q->sampler->reserve(s_.config_.vocabSize);
    for (int32_t token : prompt)
      q->sampler->accept(token);
    q->output.emplace(s_.tokenizer_, s_.config_, request, q->result);
    q->admitted = Clock::now();
    live_.push_back(std::move(q));
  }
  stats_.peakSequences = std::max(stats_.peakSequences, int32_t(live_.size()));
}

void BatchScheduler::Run::releaseHolders(bool all) {
  const int32_t blockSize = layout_.blockSize;
  for (size_t i = 0; i < holders_.size();) {
    bool useful = false;
    for (size_t index : waiting_)
      useful = useful || commonPrefix(prompts_[index], holders_[i].tokens,
                                      int32_t(holders_[i].tokens.size())) >= blockSize;
    if (all || !useful) {
      s_.cache_.free(holders_[i].kv);
      holders_.erase(holders_.begin() + i);
    } else {
      ++i;
    }
  }
}

std::unique_ptr<BatchScheduler::Sequence> BatchScheduler::Run::forkOf(const Sequence &q,
                                                                      int32_t member) {
  auto child = std::make_unique<Sequence>();
  child->group = q.group;
  child->member = member;
  child->tokens = q.tokens;
  child->promptLength = q.promptLength;
  child->maxPositions = q.maxPositions;
  child->kv = s_.cache_.fork(q.kv);
  child->result.promptTokens = q.result.promptTokens;
  child->sampler.emplace(s_.samplers_(q.group->index, member));
  child->sampler->reserve(s_.config_.vocabSize);
  for (int32_t token : q.tokens)
    child->sampler->accept(token);
  child->output.emplace(s_.tokenizer_, s_.config_, requests_[q.group->index], child->result);
  child->admitted = q.admitted;
  child->firstToken = q.firstToken;
  ++q.group->live;
  return child;
}

bool BatchScheduler::Run::sample(Sequence &q, const float *logits) {
  if (!q.output->wantsToken())
    return false;
  int32_t next = q.sampler->sample(logits, s_.config_.vocabSize);
  if (next < 0) {
    q.failure = "request " + std::to_string(q.group->index) +
                ": the sampler found no token to pick after " +
                std::to_string(q.result.tokens.size()) +
                " tokens: every logit is NaN or -inf after the logit processors";
    return false;
  }
  if (!q.output->accept(next, q.sampler->lastLogprobs()))
    return false;
  if (s_.cache_.length(q.kv) >= s_.config_.seqLen) {
    q.output->stop(StopReason::Context);
    return false;
  }
  q.pending = next;
  ++q.result.decodeSteps;
  return true;
}

void BatchScheduler::Run::forkSamples(Sequence &root, const float *logits,
                                      std::vector<std::unique_ptr<Sequence>> &born) {
  root.group->forked = true;
  for (int32_t s = 1; s < root.group->width; ++s)
    born.push_back(forkOf(root, s));
  (void)logits;
}

void BatchScheduler::Run::stepBeams(Group &group,
                                    const std::vector<std::pair<Sequence *, const float *>> &rows,
                                    std::vector<std::unique_ptr<Sequence>> &born,
                                    std::vector<Sequence *> &ended) {
  const int32_t vocab = s_.config_.vocabSize;
  BeamSearch &search = *group.beams;
  group.forked = true;
  const GenerationRequest &request = requests_[group.index];
  // Rows by beam: a sequence's member is its beam in the search. Admission
  // keeps a slot for every beam, so all of them have their row each step.
  if (int32_t(rows.size()) != search.liveBeams()) {
    std::fprintf(stderr, "quill: internal error: %zu rows for %d beams\n", rows.size(),
                 search.liveBeams());
    std::abort();
  }
  std::vector<std::pair<Sequence *, const float *>> byBeam(rows);
  std::sort(byBeam.begin(), byBeam.end(),
            [](const auto &a, const auto &b) { return a.first->member < b.first->member; });
  std::vector<std::vector<double>> logprobs(byBeam.size(), std::vector<double>(vocab));
  std::vector<float> processed(vocab);
  std::vector<const double *> rowPointers;
  for (size_t b = 0; b < byBeam.size(); ++b) {
    byBeam[b].first->sampler->process(byBeam[b].second, vocab, processed.data());
    logSoftmax(processed.data(), vocab, logprobs[b].data());
    rowPointers.push_back(logprobs[b].data());
  }
  std::vector<BeamChoice> choices;
  if (request.maxNewTokens > 0)
    choices = search.step(rowPointers, vocab);
  else
    search.finish(); // No token to generate: the prompt alone.
  bool atEnd = search.length() >= request.maxNewTokens ||
               s_.cache_.length(byBeam.front().first->kv) >= s_.config_.seqLen;
  if (!search.done() && atEnd)
    search.finish();
  if (search.done()) {
    for (auto &[q, logits] : byBeam)
      ended.push_back(q);
    return;
  }
  // Each choice continues its parent: the first in place, the others in
  // forks of it (sharing every block); parents nobody continues end.
  std::vector<bool> claimed(byBeam.size(), false);
  std::vector<std::pair<Sequence *, int32_t>> continued; // (sequence, new member)
  for (int32_t i = 0; i < int32_t(choices.size()); ++i) {
    Sequence &parent = *byBeam[choices[i].parent].first;
    if (!claimed[choices[i].parent]) {
      claimed[choices[i].parent] = true;
      continued.push_back({&parent, i});
    } else {
      born.push_back(forkOf(parent, i));
      // A fork's processors saw the prompt; they also see the beam's tokens
      // before the new one (accepted below, as for every beam).
      const std::vector<int32_t> &history = search.tokens(i);
      for (size_t t = 0; t + 1 < history.size(); ++t)
        born.back()->sampler->accept(history[t]);
      continued.push_back({born.back().get(), i});
    }
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

void BatchScheduler::Run::completeGroup(Group &group) {
  const GenerationRequest &request = requests_[group.index];
  if (results_[group.index])
    return; // Failed earlier.
  if (group.beams) {
    GenerationResult best;
    std::vector<BeamHypothesis> found = group.beams->results();
    if (found.empty()) {
      fail(group.index, "request " + std::to_string(group.index) +
                            ": beam search found no token to pick: every logit is NaN or -inf "
                            "after the logit processors");
      return;
    }
    for (const BeamHypothesis &h : found) {
      GenerationResult r;
      r.promptTokens = prompts_[group.index];
      // Replayed through the output rules: text, and a stop string cuts
      // the hypothesis (the search itself ranks whole hypotheses).
      SequenceOutput output(s_.tokenizer_, s_.config_, request, r);
      bool going = true;
      for (size_t t = 0; t < h.tokens.size() && going; ++t)
        going = output.accept(h.tokens[t], nullptr);
      output.finish();
      if (r.stop != StopReason::StopString)
        r.stop = h.ended ? StopReason::Eos
                 : int32_t(h.tokens.size()) >= request.maxNewTokens ? StopReason::Length
                                                                    : StopReason::Context;
      r.logprob = h.logprob;
      r.score = h.score;
      if (!group.results.empty()) {
        r.prefillSeconds = group.results[0].prefillSeconds;
        r.decodeSeconds = group.results[0].decodeSeconds;
      }
      best.sequences.push_back(std::move(r));
    }
    stats_.generatedTokens += found.empty() ? 0 : int64_t(found[0].tokens.size());
    GenerationResult top = best.sequences.empty() ? GenerationResult{} : best.sequences[0];
    top.promptTokens = prompts_[group.index];
    top.sequences = std::move(best.sequences);
    results_[group.index] = std::move(top);
    return;
  }
  GenerationResult first = group.results[0];
  if (group.width > 1)
    first.sequences = group.results;
  results_[group.index] = std::move(first);
}

void BatchScheduler::Run::retire(const std::vector<Sequence *> &ended) {
  PagedKVCache &cache = s_.cache_;
  std::vector<Group *> completed;
  for (Sequence *q : ended) {
    Group &group = *q->group;
    auto now = Clock::now();
    if (!group.beams) {
      q->output->finish();
      if (q->result.tokens.empty())
        q->firstToken = now;
      q->result.prefillSeconds = secondsBetween(q->admitted, q->firstToken);
      q->result.decodeSeconds = secondsBetween(q->firstToken, now);
      stats_.generatedTokens += static_cast<int64_t>(q->result.tokens.size());
      group.results[q->member] = std::move(q->result);
    } else if (group.beams->done()) {
      if (group.results.empty())
        group.results.resize(1);
      group.results[0].prefillSeconds = secondsBetween(q->admitted, q->firstToken);
      group.results[0].decodeSeconds = secondsBetween(q->firstToken, now);
    }
    // Keep the prefix a waiting prompt shares with this one: whole blocks
    // only (a held partial block would make its other owners copy it), and
    // not from a beam search still running (its reservation counts on the
    // blocks of the beams it drops).
    bool searching = group.beams && !group.beams->done();
    if (s_.options_.sharePrefixes && !searching) {
      int32_t length = std::min(cache.length(q->kv), q->promptLength), best = 0;
      for (size_t index : waiting_)
        best = std::max(best, std::min(commonPrefix(prompts_[index], q->tokens, length),
                                       int32_t(prompts_[index].size()) - 1));
      best = best / layout_.blockSize * layout_.blockSize;
      bool held = std::any_of(holders_.begin(), holders_.end(), [&](const PrefixHolder &h) {
        return int32_t(h.tokens.size()) >= best &&
               commonPrefix(h.tokens, q->tokens, best) == best;
      });
      if (best >= layout_.blockSize && !held) {
        PagedKVCache::SequenceId holder = cache.fork(q->kv);
        cache.truncate(holder, best);
        holders_.push_back(
            {holder, std::vector<int32_t>(q->tokens.begin(), q->tokens.begin() + best)});
      }
    }
    cache.free(q->kv);
    if (--group.live == 0)
      completed.push_back(&group);
  }
  for (Group *group : completed)
    completeGroup(*group);
  live_.erase(std::remove_if(live_.begin(), live_.end(),
                             [&](const std::unique_ptr<Sequence> &q) {
                               return std::find(ended.begin(), ended.end(), q.get()) !=
                                      ended.end();
                             }),
              live_.end());
}

void BatchScheduler::Run::step() {
  PagedKVCache &cache = s_.cache_;
  Device &device = s_.device_;
  const int32_t rows = layout_.rows, width = layout_.tableWidth;
  // Row plans: which sequence, how many of its positions, whether its last
  // row needs logits. Decoding sequences first, then prompt chunks.
  struct Plan {
    size_t live;
    int32_t first = 0, count = 0;
    bool logits = false;
  };
  std::vector<Plan> plans;
  int32_t used = 0;
  bool prefilling = std::any_of(live_.begin(), live_.end(),
                                [](const auto &q) { return q->pending < 0; });
  bool decodeNow = !(s_.options_.prefillFirst && prefilling);
  for (size_t i = 0; i < live_.size() && used < rows && decodeNow; ++i)
    if (live_[i]->pending >= 0) {
      plans.push_back({i, 0, 1, true});
      ++used;
    }
  for (size_t i = 0; i < live_.size() && used < rows; ++i) {
    Sequence &q = *live_[i];
    if (q.pending >= 0)
      continue;
    int32_t computed = cache.length(q.kv);
    int32_t count = std::min(q.promptLength - computed, rows - used);
    plans.push_back({i, 0, count, computed + count == q.promptLength});
    used += count;
  }
  for (Plan &plan : plans) {
    auto first = cache.append(live_[plan.live]->kv, plan.count);
    // Admission reserved these blocks: running out here is a bug.
    if (!first) {
      std::fprintf(stderr, "quill: internal error: %s\n", first.message().c_str());
      std::abort();
    }
    plan.first = *first;
  }

  // Logit rows first, in plan order; then the rest of the prompt chunks.
  int32_t *tokens = device.batchTokens(), *positions = device.batchPositions();
  int32_t *tables = device.batchTables();
  int32_t row = 0;
  auto writeRow = [&](const Sequence &q, int32_t pos) {
    tokens[row] = pos < q.promptLength ? q.tokens[pos] : q.pending;
    positions[row] = pos;
    const std::vector<int32_t> &table = cache.blockTable(q.kv);
    int32_t *out = tables + int64_t(row) * width;
    std::copy(table.begin(), table.end(), out);
    std::fill(out + table.size(), out + width, PagedKVCache::kTrashBlock);
    ++row;
  };
  std::vector<Sequence *> logitOwners;
  for (const Plan &plan : plans)
    if (plan.logits) {
      writeRow(*live_[plan.live], plan.first + plan.count - 1);
      logitOwners.push_back(live_[plan.live].get());
    }
  const int32_t logitRows = row;
  for (const Plan &plan : plans) {
    const Sequence &q = *live_[plan.live];
    int32_t last = plan.first + plan.count - (plan.logits ? 1 : 0);
    for (int32_t pos = plan.first; pos < last; ++pos)
      writeRow(q, pos);
    if (q.pending < 0)
      stats_.prefilledTokens += plan.count;
  }
  bool decodeOnly = logitRows == row && row == int32_t(plans.size()) &&
                    std::all_of(plans.begin(), plans.end(),
                                [&](const Plan &p) { return live_[p.live]->pending >= 0; });
  auto stepStart = Clock::now();
  device.batchStep(row, logitRows);
  ++stats_.steps;
  stats_.peakKVBytes = std::max(stats_.peakKVBytes, cache.bytesInUse());
  if (decodeOnly) {
    double seconds = secondsBetween(stepStart, Clock::now());
    stats_.decodeOnlySeconds += seconds;
    stats_.decodeOnlyTokens += row;
    if (row == maxSequences_) {
      stats_.fullBatchSeconds += seconds;
      ++stats_.fullBatchSteps;
    }
  }

  // Each sequence with logits: sampled (a group's prompt forked first), or
  // its beam search stepped once all its beams' rows are in.
  std::vector<Sequence *> ended;
  std::vector<std::unique_ptr<Sequence>> born;
  std::vector<std::pair<Group *, std::vector<std::pair<Sequence *, const float *>>>> beamRows;
  std::vector<std::pair<Sequence *, const float *>> toSample;
  const float *logits = device.batchLogits();
  for (int32_t i = 0; i < logitRows; ++i) {
    Sequence &q = *logitOwners[i];
    const float *rowLogits = logits + int64_t(i) * s_.config_.vocabSize;
    if (q.pending < 0)
      q.firstToken = Clock::now();
    if (q.group->beams) {
      auto it = std::find_if(beamRows.begin(), beamRows.end(),
                             [&](const auto &entry) { return entry.first == q.group.get(); });
      if (it == beamRows.end()) {
        beamRows.push_back({q.group.get(), {}});
        it = beamRows.end() - 1;
      }
      it->second.push_back({&q, rowLogits});
      continue;
    }
    size_t firstBorn = born.size();
    if (q.group->width > 1 && !q.group->forked)
      forkSamples(q, rowLogits, born);
    toSample.push_back({&q, rowLogits});
    for (size_t b = firstBorn; b < born.size(); ++b)
      toSample.push_back({born[b].get(), rowLogits});
  }
  // Every sequence has its own sampler and output: they sample in parallel.
  std::vector<char> goesOn(toSample.size());
  auto sampleRange = [&](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i)
      goesOn[i] = sample(*toSample[i].first, toSample[i].second);
  };
  if (s_.options_.arena && toSample.size() > 1)
    s_.options_.arena->execute([&] {
      tbb::parallel_for(tbb::blocked_range<size_t>(0, toSample.size()),
                        [&](const tbb::blocked_range<size_t> &r) { sampleRange(r.begin(), r.end()); });
    });
  else
    sampleRange(0, toSample.size());
  for (size_t i = 0; i < toSample.size(); ++i) {
    Sequence &q = *toSample[i].first;
    if (!q.failure.empty())
      fail(q.group->index, q.failure);
    if (!goesOn[i])
      ended.push_back(&q);
  }
  for (auto &[group, groupRows] : beamRows)
    stepBeams(*group, groupRows, born, ended);
  for (auto &q : born)
    live_.push_back(std::move(q));
  stats_.peakKVBytes = std::max(stats_.peakKVBytes, cache.bytesInUse());
  retire(ended);
  stats_.peakSequences = std::max(stats_.peakSequences, int32_t(live_.size()));
}

std::vector<ErrorOr<GenerationResult>> BatchScheduler::Run::execute() {
  auto start = Clock::now();
  prompts_.resize(requests_.size());
  for (size_t i = 0; i < requests_.size(); ++i) {
    const GenerationRequest &request = requests_[i];
    if (request.maxNewTokens < 0) {
      fail(i, "request " + std::to_string(i) + ": the number of new tokens must not be negative");
      continue;
    }
    int32_t width = request.beamSearch ? request.beamSearch->beams : request.samples;
    if (width < 1 || width > kMaxBeams || (request.beamSearch && request.samples != 1)) {
      fail(i, "request " + std::to_string(i) + ": samples and beams must be 1 to " +
                  std::to_string(kMaxBeams) + ", and not both");
      continue;
    }
    prompts_[i] = request.promptTokens.empty()
                      ? s_.tokenizer_.encode(request.prompt, /*addBos=*/true, /*addEos=*/false)
                      : request.promptTokens;
    int32_t length = static_cast<int32_t>(prompts_[i].size());
    stats_.promptTokens += length;
    if (length > s_.config_.seqLen) {
      fail(i, "request " + std::to_string(i) + ": the prompt has " + std::to_string(length) +
                  " tokens but the model's context holds " + std::to_string(s_.config_.seqLen));
      continue;
    }
    waiting_.push_back(i);
  }
  while (!waiting_.empty() || !live_.empty()) {
    admit();
    releaseHolders(/*all=*/false);
    if (!live_.empty())
      step();
  }
  releaseHolders(/*all=*/true);
  stats_.seconds = secondsBetween(start, Clock::now());
  std::vector<ErrorOr<GenerationResult>> out;
  out.reserve(results_.size());
  for (auto &result : results_)
    out.push_back(std::move(*result));
  return out;
}

BatchScheduler::BatchScheduler(Device &device, PagedKVCache &cache, const Tokenizer &tokenizer,
                               const ModelConfig &config, SamplerFactory samplers,
                               BatchOptions options)
    : device_(device), cache_(cache), tokenizer_(tokenizer), config_(config),
      samplers_(std::move(samplers)), options_(options) {}

std::vector<ErrorOr<GenerationResult>>
BatchScheduler::run(const std::vector<GenerationRequest> &requests, BatchStats *stats) {
  BatchStats local;
  BatchStats &counters = stats ? *stats : local;
  counters = BatchStats{};
  Run run(*this, requests, counters);
  return run.execute();
}

} // namespace quill
