// The bytes a decode schedule streams per token, counted from its weight
// bindings: overlapping ranges once, an embedding table as one row unless
// another kernel reads it whole; and the KV-cache bytes its attention
// reads, by the positions each step attends to.
#include "runtime/bench/ModelBench.h"

#include <gtest/gtest.h>

namespace quill {
namespace {

Dispatch dispatchOf(uint32_t kernel, std::vector<std::pair<uint64_t, uint64_t>> weights) {
  Dispatch d;
  d.kernel = kernel;
  for (auto [offset, bytes] : weights)
    d.bindings.push_back({MemorySpace::Weights, offset, bytes});
  d.bindings.push_back({MemorySpace::Scratch, 0, 1 << 20}); // Never counted.
  return d;
}

TEST(WeightBytesPerToken, CountsRangesOnceAndTheEmbeddingAsOneRow) {
  Schedule s;
  s.kernels = {"embedding_10x8", "linear_8_16x8", "logits_8_10x8"};
  // A 10-row table of 1000 bytes; a packed weight [1000, 3000) read whole
  // and through a slice [2000, 2500); a classifier [3000, 4000).
  s.dispatches = {dispatchOf(0, {{0, 1000}}), dispatchOf(1, {{1000, 2000}}),
                  dispatchOf(1, {{2000, 500}}), dispatchOf(2, {{3000, 1000}})};
  EXPECT_DOUBLE_EQ(weightBytesPerToken(s, 10), 100 + 2000 + 1000);
}

TEST(WeightBytesPerToken, ASharedClassifierReadsTheWholeTable) {
  Schedule s;
  s.kernels = {"embedding_10x8", "logits_8_10x8"};
  s.dispatches = {dispatchOf(0, {{0, 1000}}), dispatchOf(1, {{0, 1000}})};
  EXPECT_DOUBLE_EQ(weightBytesPerToken(s, 10), 1000);
}

TEST(KVBytesReadPerStep, EachStepReadsEveryPositionUpToItsOwn) {
  // Steps at positions 4, 5, 6, 7 read 5, 6, 7 and 8 positions: 6.5 on
  // average, of 100 bytes each.
  EXPECT_DOUBLE_EQ(kvBytesReadPerStep(100, 4, 4, 0), 650);
  // A window of 6 positions: 5, 6, 6, 6.
  EXPECT_DOUBLE_EQ(kvBytesReadPerStep(100, 4, 4, 6), 575);
  EXPECT_DOUBLE_EQ(kvBytesReadPerStep(100, 4, 0, 0), 0);
}

} // namespace
} // namespace quill
