// The step checks end-to-end tests share: an artifact's decode, prefill and
// batch steps against the reference forward pass.
#include "StepChecks.h"

#include "TestSupport.h"
#include "runtime/scheduler/BatchScheduler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

namespace quill::test {

double relativeDifference(const float *got, const std::vector<float> &expected) {
  double maxDiff = 0, maxRef = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    maxDiff = std::max(maxDiff, std::fabs(double(got[i]) - expected[i]));
    maxRef = std::max(maxRef, std::fabs(double(expected[i])));
  }
  return maxDiff / maxRef;
}

int tokenAt(int pos, int vocab) { return pos == 0 ? 1 : (pos * 97 + 13) % vocab; }

void checkDecodeAndPrefill(const std::string &artifact, const OracleFactory &makeOracle,
                           const ModelConfig &c, const std::string &what, double tolerance) {
  LoadedArtifact one = load(artifact, 1), two = load(artifact, 2);
  ASSERT_TRUE(one.device && two.device);
  auto oracle = makeOracle();
  ASSERT_TRUE(oracle.isOk()) << oracle.message();
  const int chunk = one.device->prefillChunk();
  ASSERT_GT(chunk, 0);
  std::vector<int32_t> prompt;
  std::vector<float> expected;
  for (int pos = 0; pos < chunk; ++pos) {
    prompt.push_back(tokenAt(pos, c.vocabSize));
    expected = oracle->forward(prompt.back(), pos);
  }
  one.device->prefill(prompt.data(), 0);
  two.device->prefill(prompt.data(), 0);
  EXPECT_LE(relativeDifference(one.device->logits(), expected), tolerance) << what << " prefill";
  ASSERT_EQ(std::memcmp(one.device->logits(), two.device->logits(), c.vocabSize * 4), 0)
      << what << ": prefill logits depend on the thread count";
  for (int pos = chunk; pos < chunk + 12; ++pos) {
    int token = tokenAt(pos, c.vocabSize);
    one.device->step(token, pos);
    two.device->step(token, pos);
    expected = oracle->forward(token, pos);
    ASSERT_LE(relativeDifference(one.device->logits(), expected), tolerance)
        << what << " decode at position " << pos;
    ASSERT_EQ(std::memcmp(one.device->logits(), two.device->logits(), c.vocabSize * 4), 0)
        << what << ": decode logits depend on the thread count at position " << pos;
  }
}

void checkBatch(const std::string &artifact, const OracleFactory &makeOracle, const ModelConfig &c,
                const std::string &what, double tolerance) {
  LoadedArtifact loaded = load(artifact, 2);
  ASSERT_TRUE(loaded.device && loaded.device->batchLayout());
  const BatchLayout &layout = *loaded.device->batchLayout();
  // The row alone, then beside one other row, then third of seven (an odd
  // count, so register tiles of two rows pair it differently, and rows
  // split between the threads elsewhere).
  struct Placement {
    int rows, at;
  };
  std::vector<Placement> placements = {{1, 0}, {2, 0}};
  if (layout.rows >= 7)
    placements.push_back({7, 2});
  auto cache = createPagedCache(*loaded.device, c, /*budgetBytes=*/8 << 20, 7);
  ASSERT_TRUE(cache.isOk()) << cache.message();
  PagedKVCache &kv = **cache;
  auto oracle = makeOracle();
  ASSERT_TRUE(oracle.isOk()) << oracle.message();
  PagedKVCache::SequenceId a = kv.createSequence();
  // The others each rewrite their own position 0 every time.
  std::vector<PagedKVCache::SequenceId> others;
  for (int i = 0; i < 6; ++i) {
    others.push_back(kv.createSequence());
    ASSERT_TRUE(kv.append(others.back(), 1).isOk());
  }
  std::vector<float> alone(c.vocabSize);
  for (int pos = 0; pos < 10; ++pos) {
    ASSERT_TRUE(kv.append(a, 1).isOk());
    std::vector<float> expected = oracle->forward(tokenAt(pos, c.vocabSize), pos);
    for (const Placement &p : placements) {
      int32_t *tables = loaded.device->batchTables();
      std::fill_n(tables, p.rows * layout.tableWidth, 0);
      for (int row = 0, other = 0; row < p.rows; ++row) {
        const bool mine = row == p.at;
        const std::vector<int32_t> &table = kv.blockTable(mine ? a : others[other++]);
        std::copy(table.begin(), table.end(), tables + row * layout.tableWidth);
        loaded.device->batchTokens()[row] = mine ? tokenAt(pos, c.vocabSize) : 5 + row;
        loaded.device->batchPositions()[row] = mine ? pos : 0;
      }
      loaded.device->batchStep(p.rows, p.rows);
      const float *got = loaded.device->batchLogits() + int64_t(p.at) * c.vocabSize;
      if (p.rows == 1) {
        ASSERT_LE(relativeDifference(got, expected), tolerance) << what << " batch at " << pos;
        std::memcpy(alone.data(), got, c.vocabSize * 4);
      } else {
        ASSERT_EQ(std::memcmp(alone.data(), got, c.vocabSize * 4), 0)
            << what << ": a row's logits depend on the batch at position " << pos << " (row "
            << p.at << " of " << p.rows << ")";
      }
    }
  }
}

void expectFollowsTheRounding(const std::string &artifact, const OracleFactory &rounded,
                              const OracleFactory &plain, const ModelConfig &c,
                              const std::string &what) {
  LoadedArtifact loaded = load(artifact, 2);
  ASSERT_TRUE(loaded.device);
  auto toRounded = rounded(), toPlain = plain();
  ASSERT_TRUE(toRounded.isOk() && toPlain.isOk());
  double offRounded = 0, offPlain = 0;
  auto compare = [&](int token, int pos) {
    std::vector<float> r = toRounded->forward(token, pos), p = toPlain->forward(token, pos);
    for (int i = 0; i < c.vocabSize; ++i) {
      offRounded += std::fabs(double(loaded.device->logits()[i]) - r[i]);
      offPlain += std::fabs(double(loaded.device->logits()[i]) - p[i]);
    }
  };
  const int chunk = loaded.device->prefillChunk();
  std::vector<int32_t> prompt;
  for (int pos = 0; pos < chunk; ++pos)
    prompt.push_back(tokenAt(pos, c.vocabSize));
  loaded.device->prefill(prompt.data(), 0);
  for (int pos = 0; pos + 1 < chunk; ++pos) {
    toRounded->forward(prompt[pos], pos);
    toPlain->forward(prompt[pos], pos);
  }
  compare(prompt.back(), chunk - 1);
  for (int pos = chunk; pos < chunk + 12; ++pos) {
    loaded.device->step(tokenAt(pos, c.vocabSize), pos);
    compare(tokenAt(pos, c.vocabSize), pos);
  }
  std::printf("%s: summed |logit differences| %.4g from the rounded oracle, %.4g from the plain "
              "one\n",
              what.c_str(), offRounded, offPlain);
  EXPECT_LE(offRounded, offPlain / 3) << what << ": the logits do not follow the oracle's rounding";
}

void expectRoundsAsTheOracleAtPositionZero(const std::string &artifact,
                                           const OracleFactory &rounded, const OracleFactory &plain,
                                           const ModelConfig &c, const std::string &what) {
  LoadedArtifact loaded = load(artifact, 2);
  ASSERT_TRUE(loaded.device);
  auto toRounded = rounded(), toPlain = plain();
  ASSERT_TRUE(toRounded.isOk() && toPlain.isOk());
  const int tokens[] = {1, 7, 42, c.vocabSize - 1};
  // Sums of each step's rows' distances to the rounded and the plain oracle.
  struct Distances {
    double rounded = 0, plain = 0;
  };
  auto measure = [&](const float *got, int token, const std::string &where, Distances &sums) {
    const double toR = relativeDifference(got, toRounded->forward(token, 0));
    const double toP = relativeDifference(got, toPlain->forward(token, 0));
    EXPECT_GT(toP, 1e-3) << what << ": " << where << " (token " << token
                         << ") as if its inputs were not rounded";
    sums.rounded += toR, sums.plain += toP;
  };
  auto expectCloser = [&](const Distances &sums, const std::string &step) {
    EXPECT_LE(sums.rounded, sums.plain / 5)
        << what << ": the " << step << "'s rows are not much closer to the rounded oracle";
  };
  // The decode step (matrix-vector products) from an empty context.
  Distances decode;
  for (int token : tokens) {
    loaded.device->step(token, 0);
    measure(loaded.device->logits(), token, "decode at position 0", decode);
  }
  expectCloser(decode, "decode step");
  // The batch step (matrix-matrix products): one row per token, each a
  // sequence at its position 0.
  if (!loaded.device->batchLayout())
    return;
  const BatchLayout &layout = *loaded.device->batchLayout();
  auto cache = createPagedCache(*loaded.device, c, /*budgetBytes=*/8 << 20, 2);
  ASSERT_TRUE(cache.isOk()) << cache.message();
  PagedKVCache &kv = **cache;
  const int rows = std::min<int>(layout.rows, int(std::size(tokens)));
  int32_t *tables = loaded.device->batchTables();
  std::fill_n(tables, layout.rows * layout.tableWidth, 0);
  for (int row = 0; row < rows; ++row) {
    PagedKVCache::SequenceId id = kv.createSequence();
    ASSERT_TRUE(kv.append(id, 1).isOk());
    const std::vector<int32_t> &table = kv.blockTable(id);
    std::copy(table.begin(), table.end(), tables + row * layout.tableWidth);
    loaded.device->batchTokens()[row] = tokens[row];
    loaded.device->batchPositions()[row] = 0;
  }
  loaded.device->batchStep(rows, rows);
  Distances batch;
  for (int row = 0; row < rows; ++row)
    measure(loaded.device->batchLogits() + size_t(row) * c.vocabSize, tokens[row],
            "batch row " + std::to_string(row) + " at position 0", batch);
  expectCloser(batch, "batch step");
}

OracleFactory oracleFile(const std::string &path, std::set<std::string> q8Inputs,
                         std::set<std::string> bf16Inputs) {
  return [path, q8Inputs, bf16Inputs]() -> ErrorOr<ReferenceModel> {
    auto model = ReferenceModel::load(path);
    if (model.isOk()) {
      model->roundInputsToQ8_0(q8Inputs);
      model->roundInputsToBf16(bf16Inputs);
    }
    return model;
  };
}

std::set<std::string> matrixNames(const ModelConfig &c) {
  std::set<std::string> names = {"tok_embeddings", "output"};
  for (int l = 0; l < c.nLayers; ++l)
    for (const char *kind : {"wq", "wk", "wv", "wo", "w1", "w2", "w3"})
      names.insert("layers." + std::to_string(l) + "." + kind);
  return names;
}

std::set<std::string>
q8InputMatrices(const ModelConfig &c,
                const std::function<std::string(const std::string &)> &typeOf) {
  std::set<std::string> names;
  for (const std::string &name : matrixNames(c))
    if (std::string type = typeOf(name);
        type == "Q8_0" || type == "Q4_0" || type == "Q4_K" || type == "Q6_K")
      names.insert(name);
  return names;
}

std::set<std::string>
bf16InputMatrices(const ModelConfig &c,
                  const std::function<std::string(const std::string &)> &typeOf) {
  std::set<std::string> names;
  for (const std::string &name : matrixNames(c))
    if (typeOf(name) == "BF16")
      names.insert(name);
  return names;
}

} // namespace quill::test
