// The step checks end-to-end tests share: an artifact's decode, prefill and
// batch steps against the reference forward pass.
#include "StepChecks.h"

#include "TestSupport.h"
#include "runtime/scheduler/BatchScheduler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
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
                           const ModelConfig &c, const std::string &what) {
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
  EXPECT_LE(relativeDifference(one.device->logits(), expected), 1e-4) << what << " prefill";
  ASSERT_EQ(std::memcmp(one.device->logits(), two.device->logits(), c.vocabSize * 4), 0)
      << what << ": prefill logits depend on the thread count";
  for (int pos = chunk; pos < chunk + 12; ++pos) {
    int token = tokenAt(pos, c.vocabSize);
    one.device->step(token, pos);
    two.device->step(token, pos);
    expected = oracle->forward(token, pos);
    ASSERT_LE(relativeDifference(one.device->logits(), expected), 1e-4)
        << what << " decode at position " << pos;
    ASSERT_EQ(std::memcmp(one.device->logits(), two.device->logits(), c.vocabSize * 4), 0)
        << what << ": decode logits depend on the thread count at position " << pos;
  }
}

void checkBatch(const std::string &artifact, const OracleFactory &makeOracle, const ModelConfig &c,
                const std::string &what) {
  LoadedArtifact loaded = load(artifact, 2);
  ASSERT_TRUE(loaded.device && loaded.device->batchLayout());
  auto cache = createPagedCache(*loaded.device, c, /*budgetBytes=*/8 << 20, 2);
  ASSERT_TRUE(cache.isOk()) << cache.message();
  PagedKVCache &kv = **cache;
  auto oracle = makeOracle();
  ASSERT_TRUE(oracle.isOk()) << oracle.message();
  const BatchLayout &layout = *loaded.device->batchLayout();
  PagedKVCache::SequenceId a = kv.createSequence(), b = kv.createSequence();
  std::vector<float> alone(c.vocabSize);
  for (int pos = 0; pos < 10; ++pos) {
    ASSERT_TRUE(kv.append(a, 1).isOk());
    std::vector<float> expected = oracle->forward(tokenAt(pos, c.vocabSize), pos);
    for (int withOther = 0; withOther < 2; ++withOther) {
      int32_t *tables = loaded.device->batchTables();
      std::fill_n(tables, 2 * layout.tableWidth, 0);
      const std::vector<int32_t> &ta = kv.blockTable(a);
      std::copy(ta.begin(), ta.end(), tables);
      loaded.device->batchTokens()[0] = tokenAt(pos, c.vocabSize);
      loaded.device->batchPositions()[0] = pos;
      if (withOther) {
        // The other sequence rewrites its own position 0 each time.
        if (kv.length(b) == 0)
          ASSERT_TRUE(kv.append(b, 1).isOk());
        const std::vector<int32_t> &tb = kv.blockTable(b);
        std::copy(tb.begin(), tb.end(), tables + layout.tableWidth);
        loaded.device->batchTokens()[1] = 5;
        loaded.device->batchPositions()[1] = 0;
      }
      loaded.device->batchStep(1 + withOther, 1 + withOther);
      const float *got = loaded.device->batchLogits();
      if (!withOther) {
        ASSERT_LE(relativeDifference(got, expected), 1e-4) << what << " batch at " << pos;
        std::memcpy(alone.data(), got, c.vocabSize * 4);
      } else {
        ASSERT_EQ(std::memcmp(alone.data(), got, c.vocabSize * 4), 0)
            << what << ": a row's logits depend on the batch at position " << pos;
      }
    }
  }
}

OracleFactory oracleFile(const std::string &path) {
  return [path] { return ReferenceModel::load(path); };
}

} // namespace quill::test
