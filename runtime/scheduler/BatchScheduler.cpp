// Continuous batching: admission against the KV budget, prefix sharing,
// row assembly for the batch step, and per-sequence sampling.
#include "runtime/scheduler/BatchScheduler.h"

#include <algorithm>
#include <chrono>
#include <deque>
#include <memory>

namespace quill {

namespace {
using Clock = std::chrono::steady_clock;

double secondsBetween(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

/// Length of the common prefix of a and b[0, bLength).
int32_t commonPrefix(const std::vector<int32_t> &a, const std::vector<int32_t> &b,
                     int32_t bLength) {
  int32_t n = std::min<int32_t>(static_cast<int32_t>(a.size()), bLength);
  int32_t i = 0;
  while (i < n && a[i] == b[i])
    ++i;
  return i;
}

int32_t ceilDiv(int64_t a, int64_t b) { return static_cast<int32_t>((a + b - 1) / b); }
} // namespace

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

/// One request in flight.
struct BatchScheduler::Sequence {
  size_t index = 0;                 ///< Into the requests.
  std::vector<int32_t> tokens;      ///< The prompt, BOS included.
  int32_t promptLength = 0;
  int32_t maxPositions = 0;         ///< The most positions it may write.
  PagedKVCache::SequenceId kv = -1;
  int32_t pending = -1;             ///< Sampled, to be fed next step; -1 in prefill.
  GenerationResult result;
  std::optional<SamplerChain> sampler;
  std::optional<SequenceOutput> output;
  Clock::time_point admitted, firstToken;
};

/// Blocks kept for prompts still waiting that start like a finished one.
struct BatchScheduler::PrefixHolder {
  PagedKVCache::SequenceId kv;
  std::vector<int32_t> tokens; ///< Exactly the positions held.
};

/// The state of one run().
class BatchScheduler::Run {
public:
  Run(BatchScheduler &s, const std::vector<GenerationRequest> &requests, BatchStats &stats)
      : s_(s), requests_(requests), stats_(stats), results_(requests.size()),
        layout_(*s.device_.batchLayout()) {
    maxSequences_ = s.options_.maxSequences > 0 ? std::min(s.options_.maxSequences, layout_.rows)
                                                : layout_.rows;
  }

  std::vector<ErrorOr<GenerationResult>> execute();

private:
  /// Blocks a sequence may still take: new blocks up to its last position,
  /// plus a copy of its last block when that is shared and still filling.
  int32_t futureBlocks(const Sequence &q) const;
  /// Whether the cache can take `q` on top of everything in flight.
  bool fits(const Sequence &q) const;
  void admit();
  /// Frees holders no waiting prompt can use (all of them with `all`).
  void releaseHolders(bool all);
  void step();
  void finish(size_t liveIndex);
  void fail(size_t index, const std::string &message) {
    results_[index] = Status::error(message);
  }

  BatchScheduler &s_;
  const std::vector<GenerationRequest> &requests_;
  BatchStats &stats_;
  std::vector<std::optional<ErrorOr<GenerationResult>>> results_;
  const BatchLayout &layout_;
  int32_t maxSequences_;
  std::vector<std::vector<int32_t>> prompts_;
  std::deque<size_t> waiting_;
  std::vector<std::unique_ptr<Sequence>> live_;
  std::vector<PrefixHolder> holders_;
};

int32_t BatchScheduler::Run::futureBlocks(const Sequence &q) const {
  const PagedKVCache &cache = s_.cache_;
  const int32_t blockSize = layout_.blockSize;
  const std::vector<int32_t> &table = cache.blockTable(q.kv);
  int32_t length = cache.length(q.kv);
  int32_t blocks = std::max(0, ceilDiv(q.maxPositions, blockSize) - int32_t(table.size()));
  if (length % blockSize != 0 && length < q.maxPositions && cache.refCount(table.back()) > 1)
    ++blocks; // Copy-on-write of the shared last block.
  return blocks;
}

bool BatchScheduler::Run::fits(const Sequence &q) const {
  int64_t committed = s_.cache_.usedBlocks() + futureBlocks(q);
  for (const auto &other : live_)
    committed += futureBlocks(*other);
  return committed <= s_.cache_.totalBlocks();
}

void BatchScheduler::Run::admit() {
  PagedKVCache &cache = s_.cache_;
  const int32_t blockSize = layout_.blockSize;
  while (!waiting_.empty() && int32_t(live_.size()) < maxSequences_) {
    size_t index = waiting_.front();
    const std::vector<int32_t> &prompt = prompts_[index];
    const int32_t promptLength = static_cast<int32_t>(prompt.size());
    // The last prompt token always runs: its row yields the first logits.
    const int32_t shareable = promptLength - 1;
    const GenerationRequest &request = requests_[index];
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
    q->index = index;
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
      int32_t alone = ceilDiv(maxPositions, blockSize);
      if (alone > cache.totalBlocks()) {
        double mib = double(alone + 1) * cache.bytesPerBlock() / (1024.0 * 1024.0);
        double have = double(cache.totalBlocks() + 1) * cache.bytesPerBlock() / (1024.0 * 1024.0);
        fail(index, "request " + std::to_string(index) + " needs " + std::to_string(alone) +
                        " KV blocks (" + std::to_string(maxPositions) + " positions, " +
                        std::to_string(mib) + " MiB) but the KV budget holds " +
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
    q->result.promptTokens = prompt;
    q->sampler.emplace(s_.samplers_(index));
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

void BatchScheduler::Run::finish(size_t liveIndex) {
  Sequence &q = *live_[liveIndex];
  PagedKVCache &cache = s_.cache_;
  q.output->finish();
  auto now = Clock::now();
  if (q.result.tokens.empty())
    q.firstToken = now;
  q.result.prefillSeconds = secondsBetween(q.admitted, q.firstToken);
  q.result.decodeSeconds = secondsBetween(q.firstToken, now);
  stats_.generatedTokens += static_cast<int64_t>(q.result.tokens.size());
  // Keep the prefix a waiting prompt shares with this one.
  if (s_.options_.sharePrefixes) {
    int32_t length = cache.length(q.kv), best = 0;
    for (size_t index : waiting_)
      best = std::max(best, std::min(commonPrefix(prompts_[index], q.tokens, length),
                                     int32_t(prompts_[index].size()) - 1));
    if (best >= layout_.blockSize) {
      PagedKVCache::SequenceId holder = cache.fork(q.kv);
      cache.truncate(holder, best);
      holders_.push_back({holder, std::vector<int32_t>(q.tokens.begin(), q.tokens.begin() + best)});
    }
  }
  cache.free(q.kv);
  results_[q.index] = std::move(q.result);
  live_.erase(live_.begin() + liveIndex);
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
  for (size_t i = 0; i < live_.size() && used < rows; ++i)
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
      fail(live_[plan.live]->index, "internal error: " + first.message());
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
  std::vector<size_t> logitOwners;
  for (const Plan &plan : plans)
    if (plan.logits) {
      writeRow(*live_[plan.live], plan.first + plan.count - 1);
      logitOwners.push_back(plan.live);
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

  // Sample every sequence that got logits; collect the ones that end.
  std::vector<size_t> ended;
  const float *logits = device.batchLogits();
  for (int32_t i = 0; i < logitRows; ++i) {
    Sequence &q = *live_[logitOwners[i]];
    if (q.pending < 0)
      q.firstToken = Clock::now();
    if (!q.output->wantsToken()) {
      ended.push_back(logitOwners[i]);
      continue;
    }
    int32_t next = q.sampler->sample(logits + int64_t(i) * s_.config_.vocabSize,
                                     s_.config_.vocabSize);
    if (next < 0) {
      q.result.stop = StopReason::Length;
      fail(q.index, "request " + std::to_string(q.index) + ": the sampler found no token to pick "
                    "after " + std::to_string(q.result.tokens.size()) +
                    " tokens: every logit is NaN or -inf after the logit processors");
      ended.push_back(logitOwners[i]);
      continue;
    }
    if (!q.output->accept(next, q.sampler->lastLogprobs())) {
      ended.push_back(logitOwners[i]);
    } else if (cache.length(q.kv) >= s_.config_.seqLen) {
      q.output->stop(StopReason::Context);
      ended.push_back(logitOwners[i]);
    } else {
      q.pending = next;
      ++q.result.decodeSteps;
    }
  }
  if (decodeOnly) {
    stats_.decodeOnlySeconds += secondsBetween(stepStart, Clock::now());
    stats_.decodeOnlyTokens += row;
  }
  // Highest index first, so the others stay valid.
  std::sort(ended.rbegin(), ended.rend());
  for (size_t i : ended) {
    bool failed = results_[live_[i]->index].has_value();
    if (failed) {
      s_.cache_.free(live_[i]->kv);
      live_.erase(live_.begin() + i);
    } else {
      finish(i);
    }
  }
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
