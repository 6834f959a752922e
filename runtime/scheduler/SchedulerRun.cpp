// One batch run: the loop of admission, batch steps and retirement, each
// step's logits handed to sampling or beam search.
#include "runtime/scheduler/SchedulerRun.h"

#include "runtime/scheduler/Admission.h"
#include "runtime/scheduler/BeamGroups.h"
#include "runtime/scheduler/SampleFanOut.h"
#include "runtime/support/Trace.h"

#include <algorithm>

namespace quill::scheduler {

Run::Run(Device &device, PagedKVCache &cache, const Tokenizer &tokenizer, const ModelConfig &config,
         const SamplerFactory &samplers, const BatchOptions &options, BatchStats &stats,
         bool online)
    : device_(device), cache_(cache), tokenizer_(tokenizer), config_(config), options_(options),
      stats_(stats), online_(online), layout_(*device.batchLayout()),
      maxSequences_(options.maxSequences > 0 ? std::min(options.maxSequences, layout_.rows)
                                             : layout_.rows),
      sequences_(tokenizer, config, samplers, requests_), prefixes_(cache, options.sharePrefixes) {}

Run::~Run() {
  for (const auto &q : live_)
    cache_.free(q->kv);
  live_.clear();
  waiting_.clear();
  prefixes_.release(waiting(), /*all=*/true);
}

/// `error` without the "request N: " (or "request N ") its message starts
/// with: online, a slot number means nothing to the caller.
static Status withoutSlot(const Status &error, size_t index) {
  std::string message = error.message();
  std::string label = "request " + std::to_string(index);
  if (message.compare(0, label.size(), label) != 0)
    return error;
  size_t cut = label.size();
  if (message.compare(cut, 2, ": ") == 0)
    cut += 2;
  else if (message.compare(cut, 1, " ") == 0)
    message.replace(0, cut, "the request"), cut = 0;
  return Status::error(message.substr(cut));
}

void Run::fail(size_t index, const Status &error) {
  if (!results_[index])
    results_[index] = online_ ? withoutSlot(error, index) : error;
}

Status Run::check(const GenerationRequest &request, int32_t promptLength) const {
  if (Status s = checkRequest(0, request); !s)
    return withoutSlot(s, 0);
  if (Status s = checkPromptLength(0, promptLength, config_.seqLen); !s)
    return withoutSlot(s, 0);
  const int32_t width = requestWidth(request);
  if (Verdict v = judgeSlots(0, width, 0, maxSequences_); v.kind == Verdict::Reject)
    return withoutSlot(v.error, 0);
  int32_t alone =
      blocksAlone(width, maxPositionsFor(promptLength, request.maxNewTokens, config_.seqLen),
                  cache_.layout().blockSize);
  if (alone > cache_.totalBlocks())
    return Status::error(
        "the request needs " + std::to_string(alone) + " KV blocks but the KV budget holds " +
        std::to_string(cache_.totalBlocks()) + ": ask for fewer tokens or samples");
  return Status::ok();
}

size_t Run::add(GenerationRequest request) {
  size_t slot;
  if (!freeSlots_.empty()) {
    slot = freeSlots_.back();
    freeSlots_.pop_back();
    requests_[slot] = std::move(request);
    prompts_[slot].clear();
    results_[slot].reset();
  } else {
    slot = requests_.size();
    requests_.push_back(std::move(request));
    prompts_.emplace_back();
    results_.emplace_back();
  }
  queueRequest(slot);
  return slot;
}

void Run::queueRequest(size_t i) {
  const GenerationRequest &request = requests_[i];
  if (Status s = checkRequest(i, request); !s) {
    fail(i, s);
    return;
  }
  prompts_[i] = request.promptTokens.empty()
                    ? tokenizer_.encode(request.prompt, /*addBos=*/config_.addBos, /*addEos=*/false)
                    : request.promptTokens;
  int32_t length = static_cast<int32_t>(prompts_[i].size());
  stats_.promptTokens += length;
  if (Status s = checkPromptLength(i, length, config_.seqLen); !s) {
    fail(i, s);
    return;
  }
  waiting_.push_back(i);
}

PagedKVCache::SequenceId Run::startingSequence(const PrefixRetention::Donor &donor) {
  // A donor whose window dropped the shared blocks has nothing to give.
  if (donor.kv < 0 || !cache_.holdsPositions(donor.kv, donor.shared))
    return cache_.createSequence();
  PagedKVCache::SequenceId kv = cache_.fork(donor.kv);
  cache_.truncate(kv, donor.shared);
  return kv;
}

void Run::startGroup(Sequence &q, const GenerationRequest &request) {
  Group &group = *q.group;
  group.interrupt = request.interrupt;
  if (request.beamSearch)
    group.beams.emplace(*request.beamSearch, beamEndTokens(request, config_));
  else
    group.results.resize(group.width);
  sequences_.start(q);
}

void Run::admit() {
  while (!waiting_.empty()) {
    const size_t index = waiting_.front();
    const GenerationRequest &request = requests_[index];
    const int32_t width = requestWidth(request);
    if (request.interrupt && request.interrupt->load(std::memory_order_relaxed)) {
      // Interrupted before it started: its prompt, no tokens.
      GenerationResult result;
      result.promptTokens = prompts_[index];
      result.stop = StopReason::Interrupted;
      if (width > 1)
        result.sequences.assign(width, result);
      results_[index] = std::move(result);
      waiting_.pop_front();
      continue;
    }
    Verdict slots = judgeSlots(index, width, slotsInUse(live_), maxSequences_);
    if (slots.kind == Verdict::Reject) {
      fail(index, slots.error);
      waiting_.pop_front();
      continue;
    }
    if (slots.kind == Verdict::Wait) {
      traceWait(index, "no free sequence slot");
      return;
    }
    const std::vector<int32_t> &prompt = prompts_[index];
    std::optional<PrefixRetention::Donor> donor = prefixes_.findDonor(prompt, live_);
    if (!donor) {
      traceWait(index, "a prompt in prefill computes its prefix first");
      return;
    }
    int32_t maxPositions =
        maxPositionsFor(int32_t(prompt.size()), request.maxNewTokens, config_.seqLen);
    std::unique_ptr<Sequence> q =
        SequenceFactory::candidate(index, width, prompt, maxPositions, startingSequence(*donor));
    Verdict budget = judgeBudget(cache_, live_, *q, !prefixes_.empty());
    if (budget.kind != Verdict::Admit) {
      cache_.free(q->kv);
      if (budget.kind == Verdict::Wait) {
        traceWait(index, "not enough free KV blocks");
        return; // Until blocks free up.
      }
      if (budget.kind == Verdict::Reject) {
        fail(index, budget.error);
        waiting_.pop_front();
      } else {
        prefixes_.release(waiting(), /*all=*/true);
      }
      continue;
    }
    waiting_.pop_front();
    stats_.prefixTokensReused += donor->shared;
    if (trace::enabled()) {
      if (donor->shared > 0)
        trace::instant("scheduler", "prefix reuse",
                       trace::Args().add("request", int64_t(index)).add("tokens", donor->shared));
      trace::instant("scheduler", "admit",
                     trace::Args()
                         .add("request", int64_t(index))
                         .add("width", width)
                         .add("prompt_tokens", int64_t(prompt.size()))
                         .add("live_sequences", int64_t(live_.size()) + 1)
                         .add("free_blocks", cache_.freeBlocks()));
    }
    startGroup(*q, request);
    live_.push_back(std::move(q));
  }
  stats_.peakSequences = std::max(stats_.peakSequences, int32_t(live_.size()));
}

void Run::traceWait(size_t index, const char *reason) {
  if (trace::enabled())
    trace::instant("scheduler", "wait",
                   trace::Args()
                       .add("request", int64_t(index))
                       .add("reason", reason)
                       .add("live_sequences", int64_t(live_.size()))
                       .add("free_blocks", cache_.freeBlocks()));
}

Status Run::step() {
  trace::Scope traced("scheduler", "schedule and run a batch step");
  std::vector<RowPlan> plans = planRows(cache_, live_, layout_.rows, options_.prefillFirst);
  if (Status s = claimPositions(cache_, live_, plans); !s)
    return s;
  RowBuffers buffers{device_.batchTokens(), device_.batchPositions(), device_.batchTables(),
                     layout_.tableWidth};
  ErrorOr<AssembledRows> rows = writeRows(cache_, live_, plans, buffers);
  if (!rows)
    return rows.status();
  stats_.prefilledTokens += rows->prefilledTokens;
  runBatchStep(*rows);
  dropOutsideWindow();
  return consumeLogits(rows->logitOwners);
}

void Run::dropOutsideWindow() {
  const int32_t window = config_.slidingWindow;
  if (window <= 0 || window >= config_.seqLen)
    return;
  // The next position, length, attends from length + 1 - window on.
  for (const auto &q : live_)
    stats_.windowDroppedBlocks += cache_.dropBefore(q->kv, cache_.length(q->kv) + 1 - window);
}

void Run::runBatchStep(const AssembledRows &rows) {
  auto stepStart = Clock::now();
  device_.batchStep(rows.rows, rows.logitRows);
  ++stats_.steps;
  stats_.peakKVBytes = std::max(stats_.peakKVBytes, cache_.bytesInUse());
  if (!rows.decodeOnly)
    return;
  double seconds = secondsBetween(stepStart, Clock::now());
  stats_.decodeOnlySeconds += seconds;
  stats_.decodeOnlyTokens += rows.rows;
  if (rows.rows == maxSequences_) {
    stats_.fullBatchSeconds += seconds;
    ++stats_.fullBatchSteps;
  }
}

Status Run::consumeLogits(const std::vector<Sequence *> &logitOwners) {
  std::vector<Sequence *> ended;
  SequenceList born;
  std::vector<std::pair<Group *, std::vector<LogitRow>>> beamRows;
  std::vector<LogitRow> toSample;
  const float *logits = device_.batchLogits();
  for (size_t i = 0; i < logitOwners.size(); ++i) {
    Sequence &q = *logitOwners[i];
    const float *row = logits + int64_t(i) * config_.vocabSize;
    if (q.pending < 0)
      q.firstToken = Clock::now();
    if (!q.group->beams) {
      fanOut(q, row, cache_, sequences_, born, toSample);
      continue;
    }
    auto it = std::find_if(beamRows.begin(), beamRows.end(),
                           [&](const auto &entry) { return entry.first == q.group.get(); });
    if (it == beamRows.end())
      it = beamRows.insert(beamRows.end(), {q.group.get(), {}});
    it->second.push_back({&q, row});
  }
  std::vector<char> goesOn = sampleAll(toSample, cache_, config_, options_.arena);
  for (size_t i = 0; i < toSample.size(); ++i) {
    Sequence &q = *toSample[i].first;
    if (!q.failure.empty())
      fail(q.group->index, Status::error(q.failure));
    if (!goesOn[i])
      ended.push_back(&q);
  }
  Status status = Status::ok();
  for (auto &[group, rows] : beamRows) {
    status = stepBeams(*group, rows, requests_[group->index], cache_, sequences_, born, ended);
    if (!status)
      break;
  }
  for (auto &q : born)
    live_.push_back(std::move(q));
  if (!status)
    return status; // abandon() frees every sequence, the born ones included.
  stats_.peakKVBytes = std::max(stats_.peakKVBytes, cache_.bytesInUse());
  retire(ended);
  stats_.peakSequences = std::max(stats_.peakSequences, int32_t(live_.size()));
  return Status::ok();
}

void Run::retire(const std::vector<Sequence *> &ended) {
  std::vector<Group *> completed;
  for (Sequence *q : ended) {
    Group &group = *q->group;
    auto now = Clock::now();
    if (!group.beams)
      stats_.generatedTokens += recordSample(*q, now);
    else if (group.beams->done())
      recordBeamTimes(group, *q, now);
    // No prefix is kept from a beam search still running: its reservation
    // counts on the blocks of the beams it drops.
    bool searching = group.beams && !group.beams->done();
    if (!searching)
      prefixes_.keep(*q, waiting());
    cache_.free(q->kv);
    if (--group.live == 0)
      completed.push_back(&group);
  }
  for (Group *group : completed)
    completeGroup(*group);
  live_.erase(std::remove_if(live_.begin(), live_.end(),
                             [&](const std::unique_ptr<Sequence> &q) {
                               return std::find(ended.begin(), ended.end(), q.get()) != ended.end();
                             }),
              live_.end());
}

void Run::completeGroup(Group &group) {
  if (results_[group.index])
    return; // Failed earlier.
  if (!group.beams) {
    results_[group.index] = samplesResult(group);
    return;
  }
  ErrorOr<BeamOutcome> outcome =
      beamGroupResult(group, requests_[group.index], prompts_[group.index], tokenizer_, config_);
  if (!outcome) {
    fail(group.index, outcome.status());
    return;
  }
  stats_.generatedTokens += outcome->generatedTokens;
  results_[group.index] = std::move(outcome->result);
}

void Run::abandon(const Status &error) {
  for (size_t i = 0; i < results_.size(); ++i)
    fail(i, Status::error("request " + std::to_string(i) +
                          ": the batch run stopped: " + error.message()));
  // Online, freed slots had their results taken: they stay free.
  for (size_t slot : freeSlots_)
    results_[slot].reset();
  for (const auto &q : live_)
    cache_.free(q->kv);
  live_.clear();
  waiting_.clear();
  prefixes_.release(waiting(), /*all=*/true);
}

Status Run::round() {
  admit();
  prefixes_.release(waiting(), /*all=*/false);
  if (live_.empty())
    return Status::ok();
  Status s = step();
  if (!s)
    abandon(s);
  return s;
}

void Run::cancel(size_t slot, const Status &why) {
  if (results_[slot])
    return;
  fail(slot, why);
  waiting_.erase(std::remove(waiting_.begin(), waiting_.end(), slot), waiting_.end());
  // Its sequences go now, their blocks with them (forks share blocks by
  // reference count, so a neighbour's shared prefix survives).
  live_.erase(std::remove_if(live_.begin(), live_.end(),
                             [&](const std::unique_ptr<Sequence> &q) {
                               if (q->group->index != slot)
                                 return false;
                               cache_.free(q->kv);
                               return true;
                             }),
              live_.end());
  prefixes_.release(waiting(), /*all=*/false);
}

void Run::visitSamples(size_t slot,
                       const std::function<void(int32_t, const GenerationResult &)> &visit) const {
  if (results_[slot]) {
    if (!*results_[slot])
      return;
    const GenerationResult &result = **results_[slot];
    if (result.sequences.empty())
      visit(0, result);
    for (size_t i = 0; i < result.sequences.size(); ++i)
      visit(int32_t(i), result.sequences[i]);
    return;
  }
  const Group *group = nullptr;
  for (const auto &q : live_) {
    if (q->group->index != slot || q->group->beams)
      continue;
    group = q->group.get();
    if (q->pending >= 0 || !q->result.tokens.empty())
      visit(q->member, q->result);
  }
  if (!group)
    return;
  // Samples that finished while their siblings run.
  for (size_t i = 0; i < group->results.size(); ++i)
    if (!group->results[i].promptTokens.empty())
      visit(int32_t(i), group->results[i]);
}

ErrorOr<GenerationResult> Run::take(size_t slot) {
  ErrorOr<GenerationResult> result = std::move(*results_[slot]);
  results_[slot].reset();
  prompts_[slot] = {};
  requests_[slot] = {};
  freeSlots_.push_back(slot);
  return result;
}

std::vector<ErrorOr<GenerationResult>>
Run::execute(const std::vector<GenerationRequest> &requests) {
  auto start = Clock::now();
  for (const GenerationRequest &request : requests)
    add(request);
  while (busy())
    if (!round())
      break;
  prefixes_.release(waiting(), /*all=*/true);
  stats_.seconds = secondsBetween(start, Clock::now());
  std::vector<ErrorOr<GenerationResult>> out;
  out.reserve(results_.size());
  for (size_t i = 0; i < results_.size(); ++i) {
    if (results_[i])
      out.push_back(std::move(*results_[i]));
    else
      out.push_back(Status::error("request " + std::to_string(i) +
                                  ": internal error: the batch run ended without its result"));
  }
  return out;
}

} // namespace quill::scheduler
