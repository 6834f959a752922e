// Helpers shared by the batch scheduler's tests: a tiny model config and
// vocabulary, and a fake device whose batch step keeps each position's token
// in the paged cache and derives a row's logits from the tokens it reads back
// through the row's block table (so wrong sharing or copy-on-write shows).
#pragma once

#include "runtime/scheduler/BatchScheduler.h"
#include "runtime/scheduler/Sequence.h"
#include "runtime/support/SplitMix64.h"

#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace quill::test {

/// Context 48, vocabulary 32 (unk 0, BOS 1, EOS 2), one layer, KV rows of
/// 8 floats.
inline ModelConfig tinyConfig() {
  ModelConfig c;
  c.dim = 8;
  c.hiddenDim = 16;
  c.nLayers = 1;
  c.nHeads = 2;
  c.nKvHeads = 2;
  c.vocabSize = 32;
  c.seqLen = 48;
  c.bosId = 1;
  c.eosId = 2;
  return c;
}

/// <unk>, <s>, </s>, then "a".."z", " ", "." and "!": id 3 is "a".
inline Tokenizer tinyTokenizer() {
  TokenizerData d;
  d.pieces = {"<unk>", "<s>", "</s>"};
  for (char c = 'a'; c <= 'z'; ++c)
    d.pieces.push_back(std::string(1, c));
  for (const char *p : {" ", ".", "!"})
    d.pieces.push_back(p);
  d.scores.assign(d.pieces.size(), 0.0f);
  d.types.assign(d.pieces.size(), TokenType::Normal);
  for (int i = 0; i < 3; ++i)
    d.types[i] = TokenType::Control;
  d.unkId = 0, d.bosId = 1, d.eosId = 2;
  auto tok = Tokenizer::fromData(d, "tiny");
  EXPECT_TRUE(tok.isOk()) << tok.message();
  return tok.take();
}

/// The fake model: the logits after `context` (BOS included), a fixed
/// pseudo-random function of every token in it.
inline void fakeLogits(const std::vector<int32_t> &context, int32_t vocab, float *out) {
  uint64_t h = 0x243f6a8885a308d3ull;
  for (int32_t t : context)
    h = splitMix64Mix(h + uint64_t(t) + kSplitMix64Gamma);
  for (int32_t v = 0; v < vocab; ++v)
    out[v] =
        float(splitMix64Mix(h ^ (uint64_t(v) * kSplitMix64Gamma)) >> 40) / float(1 << 24) * 8.0f -
        4.0f;
}

/// What greedy decoding of the fake model gives for `prompt`: up to
/// `maxNewTokens` argmax tokens, ending before EOS or BOS (llama2.c's end
/// tokens) unless `ignoreEos`, within the context.
inline std::vector<int32_t> referenceGreedy(std::vector<int32_t> context, int32_t maxNewTokens,
                                            const ModelConfig &config, bool ignoreEos = false) {
  std::vector<int32_t> out;
  std::vector<float> logits(config.vocabSize);
  while (int32_t(out.size()) < maxNewTokens) {
    fakeLogits(context, config.vocabSize, logits.data());
    int32_t best = 0;
    for (int32_t v = 1; v < config.vocabSize; ++v)
      if (logits[v] > logits[best])
        best = v;
    if (!ignoreEos && (best == config.eosId || best == config.bosId))
      break;
    out.push_back(best);
    if (int32_t(context.size()) >= config.seqLen)
      break;
    context.push_back(best);
  }
  return out;
}

/// One batch step as the device saw it.
struct StepTrace {
  int32_t rows = 0, logitRows = 0;
  std::vector<int32_t> tokens, positions, tables;
};

/// A device with only a batch step, over the fake model. Each row stores
/// its token (as a float) in the first float of its position's key row,
/// section 0; then each logit row reads positions 0..pos back through its
/// block table and gets fakeLogits() of them.
class FakeBatchDevice : public Device {
public:
  FakeBatchDevice(const ModelConfig &config, int32_t rows, int32_t blockSize = 4)
      : config_(config), kv_(0, config.seqLen, /*hostMemory=*/false) {
    layout_.rows = rows;
    layout_.blockSize = blockSize;
    layout_.tableWidth = (config.seqLen + blockSize - 1) / blockSize;
    layout_.maxBlocks = 1 << 16;
    layout_.sections = 2 * config.nLayers;
    layout_.blockBytes = uint64_t(blockSize) * config.kvDim() * sizeof(float);
    tokens_.resize(rows);
    positions_.resize(rows);
    tables_.resize(size_t(rows) * layout_.tableWidth);
    logits_.resize(size_t(rows) * config.vocabSize);
  }

  const char *name() const override { return "fake"; }
  void step(int32_t, int32_t) override { ADD_FAILURE() << "only the batch step runs"; }
  const float *logits() const override { return nullptr; }
  KVCache &kvCache() override { return kv_; }
  std::string describe() const override { return "fake batch device"; }
  const BatchLayout *batchLayout() const override { return &layout_; }
  Status attachPagedCache(PagedKVCache &cache) override {
    if (cache.layout().blockSize != layout_.blockSize ||
        cache.layout().blockBytes() != layout_.blockBytes)
      return Status::error("the paged KV cache does not match the fake batch step");
    cache_ = &cache;
    return Status::ok();
  }
  int32_t *batchTokens() override { return tokens_.data(); }
  int32_t *batchPositions() override { return positions_.data(); }
  int32_t *batchTables() override { return tables_.data(); }
  const float *batchLogits() const override { return logits_.data(); }

  void batchStep(int32_t rows, int32_t logitRows) override {
    const int32_t width = layout_.tableWidth, blockSize = layout_.blockSize;
    StepTrace trace{rows, logitRows};
    for (int32_t r = 0; r < rows; ++r) {
      int32_t pos = positions_[r];
      *slot(tables_[size_t(r) * width + pos / blockSize], pos % blockSize) = float(tokens_[r]);
      trace.tokens.push_back(tokens_[r]);
      trace.positions.push_back(pos);
      trace.tables.insert(trace.tables.end(), tables_.begin() + size_t(r) * width,
                          tables_.begin() + size_t(r + 1) * width);
    }
    for (int32_t r = 0; r < logitRows; ++r) {
      std::vector<int32_t> context;
      for (int32_t p = 0; p <= positions_[r]; ++p)
        context.push_back(
            int32_t(*slot(tables_[size_t(r) * width + p / blockSize], p % blockSize)));
      fakeLogits(context, config_.vocabSize, logits_.data() + size_t(r) * config_.vocabSize);
    }
    steps.push_back(std::move(trace));
    if (afterStep)
      afterStep();
  }

  /// Every step run so far.
  std::vector<StepTrace> steps;
  /// Runs after each step (tests that break the scheduler's invariants).
  std::function<void()> afterStep;

private:
  float *slot(int32_t block, int32_t row) {
    auto *base = static_cast<float *>(cache_->blockData(/*section=*/0, block));
    return base + size_t(row) * config_.kvDim();
  }

  ModelConfig config_;
  KVCache kv_;
  BatchLayout layout_;
  PagedKVCache *cache_ = nullptr;
  std::vector<int32_t> tokens_, positions_, tables_;
  std::vector<float> logits_;
};

/// A greedy chain for every sample (temperature 0).
inline SamplerFactory greedySamplers() {
  return [](size_t, int32_t) {
    SamplingParams p;
    p.temperature = 0;
    return SamplerChain::fromParams(p, nullptr);
  };
}

/// A seeded draw per sample: seed (request + 1) * 1000 + sample.
inline SamplerFactory seededSamplers(float temperature = 1.0f) {
  return [temperature](size_t request, int32_t sample) {
    SamplingParams p;
    p.temperature = temperature;
    p.seed = (request + 1) * 1000 + uint64_t(sample);
    return SamplerChain::fromParams(p, nullptr);
  };
}

/// A paged cache of `numBlocks` blocks (the reserved one included), 4
/// positions each, over tinyConfig()'s rows.
inline std::unique_ptr<PagedKVCache> makeTinyCache(int32_t numBlocks, int32_t blockSize = 4) {
  ModelConfig c = tinyConfig();
  PagedKVLayout layout;
  layout.blockSize = blockSize;
  layout.sections = 2 * c.nLayers;
  layout.rowBytes = uint64_t(c.kvDim()) * sizeof(float);
  layout.maxPositions = c.seqLen;
  auto cache = PagedKVCache::create(layout, numBlocks);
  EXPECT_TRUE(cache.isOk()) << cache.message();
  return cache.take();
}

/// A bare sequence (no sampler or output) of a new group of `width` for
/// request `index`: `prompt` with `computed` of its positions in a new
/// sequence of `cache`.
inline std::unique_ptr<scheduler::Sequence> bareSequence(PagedKVCache &cache,
                                                         const std::vector<int32_t> &prompt,
                                                         int32_t computed, int32_t maxPositions,
                                                         int32_t width = 1, size_t index = 0) {
  auto q = scheduler::SequenceFactory::candidate(index, width, prompt, maxPositions,
                                                 cache.createSequence());
  if (computed > 0) {
    EXPECT_TRUE(cache.append(q->kv, computed).isOk());
  }
  q->group->live = 1;
  return q;
}

/// A bare member `member` of `q`'s group in a fork of its cache sequence
/// (the group's live count is left to the test).
inline std::unique_ptr<scheduler::Sequence> bareFork(PagedKVCache &cache,
                                                     const scheduler::Sequence &q, int32_t member) {
  std::unique_ptr<scheduler::Sequence> child = scheduler::forkState(cache, q, member);
  child->pending = q.pending;
  return child;
}

/// Token ids 3.. of the letters of `text` ("abc" -> 3, 4, 5), after BOS.
inline std::vector<int32_t> letters(const std::string &text) {
  std::vector<int32_t> ids = {1};
  for (char c : text)
    ids.push_back(3 + (c - 'a'));
  return ids;
}

} // namespace quill::test
