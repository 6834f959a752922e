// Row assembly for the batch step: decode rows before prompt chunks, chunks
// cut to the rows left, positions claimed in the cache, rows written with
// logit rows first and tables padded, and internal errors as values.
#include "runtime/scheduler/RowAssembly.h"

#include "tests/unit/SchedulerTestSupport.h"

#include <gtest/gtest.h>

namespace quill::scheduler {
namespace {

using test::bareSequence;
using test::letters;
using test::makeTinyCache;

/// live: 0 decoding (5 positions, next token 7), 1 a 10-token prompt in
/// prefill, 2 decoding (3 positions, next token 9), 3 a 6-token prompt.
struct Mix {
  std::unique_ptr<PagedKVCache> cache = makeTinyCache(41);
  SequenceList live;
  Mix() {
    live.push_back(bareSequence(*cache, letters("abcd"), 5, 20));
    live.back()->pending = 7;
    live.push_back(bareSequence(*cache, letters("efghijklm"), 0, 20));
    live.push_back(bareSequence(*cache, letters("no"), 3, 20));
    live.back()->pending = 9;
    live.push_back(bareSequence(*cache, letters("pqrst"), 0, 20));
  }
};

void expectPlan(const RowPlan &plan, size_t live, int32_t count, bool logits) {
  EXPECT_EQ(plan.live, live);
  EXPECT_EQ(plan.count, count);
  EXPECT_EQ(plan.logits, logits);
}

TEST(RowAssembly, DecodeRowsComeFirstThenPromptChunksThatFit) {
  Mix m;
  // 8 rows: 2 decode rows, then 6 of the first prompt's 10 (no logits yet);
  // nothing is left for the second prompt.
  std::vector<RowPlan> plans = planRows(*m.cache, m.live, 8, false);
  ASSERT_EQ(plans.size(), 3u);
  expectPlan(plans[0], 0, 1, true);
  expectPlan(plans[1], 2, 1, true);
  expectPlan(plans[2], 1, 6, false);
  // 16 rows: 2 + all 10 (ending the prompt: logits) + 4 of the second's 6.
  plans = planRows(*m.cache, m.live, 16, false);
  ASSERT_EQ(plans.size(), 4u);
  expectPlan(plans[2], 1, 10, true);
  expectPlan(plans[3], 3, 4, false);
}

TEST(RowAssembly, PrefillFirstHoldsDecodeRowsBackWhileAPromptIsInPrefill) {
  Mix m;
  std::vector<RowPlan> plans = planRows(*m.cache, m.live, 8, /*prefillFirst=*/true);
  ASSERT_EQ(plans.size(), 1u);
  expectPlan(plans[0], 1, 8, false);
  // No prompt in prefill: decode rows as usual.
  m.live.erase(m.live.begin() + 3);
  m.live.erase(m.live.begin() + 1);
  plans = planRows(*m.cache, m.live, 8, true);
  ASSERT_EQ(plans.size(), 2u);
  expectPlan(plans[0], 0, 1, true);
  expectPlan(plans[1], 1, 1, true);
}

TEST(RowAssembly, ClaimedRowsAreWrittenLogitRowsFirst) {
  Mix m;
  std::vector<RowPlan> plans = planRows(*m.cache, m.live, 16, false);
  ASSERT_TRUE(claimPositions(*m.cache, m.live, plans));
  // Each plan starts where its sequence was: 5, 3, 0, 0.
  EXPECT_EQ(plans[0].first, 5);
  EXPECT_EQ(plans[1].first, 3);
  EXPECT_EQ(plans[2].first, 0);
  EXPECT_EQ(plans[3].first, 0);
  EXPECT_EQ(m.cache->length(m.live[1]->kv), 10);
  EXPECT_EQ(m.cache->length(m.live[3]->kv), 4);

  const int32_t width = 12;
  std::vector<int32_t> tokens(16, -1), positions(16, -1), tables(16 * width, -1);
  auto rows =
      writeRows(*m.cache, m.live, plans, {tokens.data(), positions.data(), tables.data(), width});
  ASSERT_TRUE(rows.isOk()) << rows.message();
  EXPECT_EQ(rows->rows, 16);
  // Logit rows: the two decode rows and the last of the first prompt.
  EXPECT_EQ(rows->logitRows, 3);
  ASSERT_EQ(rows->logitOwners.size(), 3u);
  EXPECT_EQ(rows->logitOwners[0], m.live[0].get());
  EXPECT_EQ(rows->logitOwners[1], m.live[2].get());
  EXPECT_EQ(rows->logitOwners[2], m.live[1].get());
  EXPECT_EQ(rows->prefilledTokens, 14); // 10 + 4.
  EXPECT_FALSE(rows->decodeOnly);
  // Decode rows feed the pending token at the claimed position; the
  // prompt's logit row is its last token (letters "m" = 3 + 12 = 15).
  std::vector<int32_t> expectTokens = {7, 9, 15};
  std::vector<int32_t> expectPositions = {5, 3, 9};
  // Then the first prompt's positions 0..8, the second's 0..3.
  std::vector<int32_t> first = letters("efghijklm"), second = letters("pqrst");
  for (int32_t p = 0; p < 9; ++p)
    expectTokens.push_back(first[p]), expectPositions.push_back(p);
  for (int32_t p = 0; p < 4; ++p)
    expectTokens.push_back(second[p]), expectPositions.push_back(p);
  EXPECT_EQ(tokens, expectTokens);
  EXPECT_EQ(positions, expectPositions);
  // Row 0's table: sequence 0's 2 blocks, then the reserved block 0.
  const std::vector<int32_t> &table = m.cache->blockTable(m.live[0]->kv);
  ASSERT_EQ(table.size(), 2u);
  EXPECT_EQ(std::vector<int32_t>(tables.begin(), tables.begin() + 2), table);
  EXPECT_EQ(std::vector<int32_t>(tables.begin() + 2, tables.begin() + width),
            std::vector<int32_t>(width - 2, PagedKVCache::kTrashBlock));
  // The last row is the second prompt's: its one block.
  EXPECT_EQ(tables[15 * width], m.cache->blockTable(m.live[3]->kv)[0]);
}

TEST(RowAssembly, AStepOfDecodeRowsOnlyIsDecodeOnly) {
  Mix m;
  m.live.erase(m.live.begin() + 3);
  m.live.erase(m.live.begin() + 1);
  std::vector<RowPlan> plans = planRows(*m.cache, m.live, 8, false);
  ASSERT_TRUE(claimPositions(*m.cache, m.live, plans));
  std::vector<int32_t> tokens(8), positions(8), tables(8 * 12);
  auto rows =
      writeRows(*m.cache, m.live, plans, {tokens.data(), positions.data(), tables.data(), 12});
  ASSERT_TRUE(rows.isOk());
  EXPECT_EQ(rows->rows, 2);
  EXPECT_EQ(rows->logitRows, 2);
  EXPECT_EQ(rows->prefilledTokens, 0);
  EXPECT_TRUE(rows->decodeOnly);
}

TEST(RowAssembly, RunningOutOfReservedBlocksIsAnErrorNotACrash) {
  auto cache = makeTinyCache(3); // 2 usable blocks.
  SequenceList live;
  live.push_back(bareSequence(*cache, letters("abcdefghijk"), 0, 12, 1, /*index=*/4));
  // 12 prompt positions need 3 blocks: admission would never have let it in.
  std::vector<RowPlan> plans = planRows(*cache, live, 16, false);
  Status s = claimPositions(*cache, live, plans);
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("internal error: request 4 ran out of the KV blocks"),
            std::string::npos)
      << s.message();
  EXPECT_EQ(cache->length(live[0]->kv), 0); // The failed append changed nothing.
}

TEST(RowAssembly, ATableWiderThanTheRowsIsAnError) {
  Mix m;
  std::vector<RowPlan> plans = planRows(*m.cache, m.live, 8, false);
  ASSERT_TRUE(claimPositions(*m.cache, m.live, plans));
  std::vector<int32_t> tokens(8), positions(8), tables(8);
  // Sequence 0 holds 2 blocks (6 positions); a row's table has 1 entry.
  auto rows =
      writeRows(*m.cache, m.live, plans, {tokens.data(), positions.data(), tables.data(), 1});
  ASSERT_FALSE(rows.isOk());
  EXPECT_NE(rows.message().find("internal error"), std::string::npos) << rows.message();
}

} // namespace
} // namespace quill::scheduler
