// Prefix sharing and retention: which sequence a new prompt forks and how
// much of it, when it waits for a prefill instead, which whole blocks a
// retiring sequence leaves behind, and when those are freed.
#include "runtime/scheduler/PrefixRetention.h"

#include "tests/unit/SchedulerTestSupport.h"

#include <gtest/gtest.h>

namespace quill::scheduler {
namespace {

using test::bareSequence;
using test::letters;
using test::makeTinyCache;

/// A run's prompts and its queue of waiting ones.
struct Queue {
  std::vector<std::vector<int32_t>> prompts;
  std::deque<size_t> order;
  WaitingPrompts view() const { return {prompts, order}; }
  void wait(std::vector<int32_t> prompt) {
    order.push_back(prompts.size());
    prompts.push_back(std::move(prompt));
  }
};

TEST(PrefixRetention, TheDonorSharesTheLongestComputedPrefix) {
  auto cache = makeTinyCache(41);
  PrefixRetention prefixes(*cache, true);
  SequenceList live;
  // Decoding, its 11-token prompt computed.
  live.push_back(bareSequence(*cache, letters("abcdefghij"), 11, 20));
  live.back()->pending = 5;
  live.push_back(bareSequence(*cache, letters("abxx"), 5, 20));
  live.back()->pending = 5;
  // BOS + "abcdef" in common with the first: 7 positions.
  auto donor = prefixes.findDonor(letters("abcdefxyz"), live);
  ASSERT_TRUE(donor);
  EXPECT_EQ(donor->kv, live[0]->kv);
  EXPECT_EQ(donor->shared, 7);
  // A prompt that is all prefix keeps its last token to run: 6 - 1 = 5.
  donor = prefixes.findDonor(letters("abcde"), live);
  ASSERT_TRUE(donor);
  EXPECT_EQ(donor->shared, 5);
  // Nothing in common but BOS: 1 position.
  donor = prefixes.findDonor(letters("zz"), live);
  ASSERT_TRUE(donor);
  EXPECT_EQ(donor->shared, 1);
}

TEST(PrefixRetention, APromptWaitsForAPrefillThatComputesAWholeBlockMoreOfIt) {
  auto cache = makeTinyCache(41);
  PrefixRetention prefixes(*cache, true);
  SequenceList live;
  live.push_back(bareSequence(*cache, letters("abcdefghij"), 2, 20)); // In prefill.
  // 7 in common, 2 computed: 7 >= 2 + 4, the prefill will compute a whole
  // block more of it.
  EXPECT_FALSE(prefixes.findDonor(letters("abcdefxyz"), live));
  // 5 computed: 7 < 5 + 4; it shares the 5 there are.
  ASSERT_TRUE(cache->append(live[0]->kv, 3).isOk());
  auto donor = prefixes.findDonor(letters("abcdefxyz"), live);
  ASSERT_TRUE(donor);
  EXPECT_EQ(donor->shared, 5);
  // A decoding sequence never makes it wait.
  live.push_back(bareSequence(*cache, letters("abcdefghij"), 0, 20));
  live.back()->pending = 3;
  EXPECT_TRUE(prefixes.findDonor(letters("abcdefxyz"), live));
}

TEST(PrefixRetention, NothingIsSharedWhenDisabled) {
  auto cache = makeTinyCache(41);
  PrefixRetention prefixes(*cache, false);
  SequenceList live;
  live.push_back(bareSequence(*cache, letters("abcdefghij"), 2, 20));
  auto donor = prefixes.findDonor(letters("abcdefxyz"), live);
  ASSERT_TRUE(donor);
  EXPECT_EQ(donor->kv, -1);
  EXPECT_EQ(donor->shared, 0);
  Queue queue;
  queue.wait(letters("abcdefghxy"));
  prefixes.keep(*live[0], queue.view());
  EXPECT_TRUE(prefixes.empty());
}

TEST(PrefixRetention, ARetiringSequenceLeavesTheWholeBlocksAWaitingPromptShares) {
  auto cache = makeTinyCache(41);
  PrefixRetention prefixes(*cache, true);
  auto q = bareSequence(*cache, letters("abcdefghij"), 11, 20);
  Queue queue;
  queue.wait(letters("zz"));         // Only BOS in common.
  queue.wait(letters("abcdefghxy")); // 9 in common: 2 whole blocks, 8 positions.
  prefixes.keep(*q, queue.view());
  ASSERT_EQ(prefixes.held().size(), 1u);
  const PrefixRetention::Held &held = prefixes.held()[0];
  EXPECT_EQ(held.tokens, std::vector<int32_t>(q->tokens.begin(), q->tokens.begin() + 8));
  EXPECT_EQ(cache->length(held.kv), 8);
  std::vector<int32_t> firstTwo(cache->blockTable(q->kv).begin(),
                                cache->blockTable(q->kv).begin() + 2);
  EXPECT_EQ(cache->blockTable(held.kv), firstTwo);
  cache->free(q->kv);
  EXPECT_EQ(cache->usedBlocks(), 2);

  // The next prompt like it forks the kept prefix: all 8 positions.
  SequenceList live;
  auto donor = prefixes.findDonor(letters("abcdefghxy"), live);
  ASSERT_TRUE(donor);
  EXPECT_EQ(donor->kv, held.kv);
  EXPECT_EQ(donor->shared, 8);
}

TEST(PrefixRetention, OnlyWholeBlocksOfWhatTheWaitingPromptCanShareAreKept) {
  auto cache = makeTinyCache(41);
  PrefixRetention prefixes(*cache, true);
  auto q = bareSequence(*cache, letters("abcdefghij"), 11, 20);
  Queue few;
  few.wait(letters("abx")); // 3 in common: not a whole block.
  prefixes.keep(*q, few.view());
  EXPECT_TRUE(prefixes.empty());
  // The waiting prompt is BOS + "abcdefg" (8): it can share 7, so 1 block.
  Queue shorter;
  shorter.wait(letters("abcdefg"));
  prefixes.keep(*q, shorter.view());
  ASSERT_EQ(prefixes.held().size(), 1u);
  EXPECT_EQ(prefixes.held()[0].tokens.size(), 4u);
}

TEST(PrefixRetention, APrefixAlreadyKeptIsNotKeptTwice) {
  auto cache = makeTinyCache(41);
  PrefixRetention prefixes(*cache, true);
  auto a = bareSequence(*cache, letters("abcdefghij"), 11, 20);
  auto b = bareSequence(*cache, letters("abcdefghik"), 11, 20);
  Queue queue;
  queue.wait(letters("abcdefghxy"));
  prefixes.keep(*a, queue.view());
  prefixes.keep(*b, queue.view());
  EXPECT_EQ(prefixes.held().size(), 1u);
}

TEST(PrefixRetention, KeptPrefixesNoWaitingPromptSharesAreFreed) {
  auto cache = makeTinyCache(41);
  PrefixRetention prefixes(*cache, true);
  auto a = bareSequence(*cache, letters("abcdefghij"), 11, 20);
  auto b = bareSequence(*cache, letters("mnopqrstuv"), 11, 20);
  Queue queue;
  queue.wait(letters("abcdefghxy"));
  queue.wait(letters("mnopqrsxyz"));
  prefixes.keep(*a, queue.view());
  prefixes.keep(*b, queue.view());
  cache->free(a->kv);
  cache->free(b->kv);
  ASSERT_EQ(prefixes.held().size(), 2u);
  EXPECT_EQ(cache->liveSequences(), 2);
  // The first waiting prompt is admitted: its prefix is no use any more.
  queue.order.pop_front();
  prefixes.release(queue.view(), /*all=*/false);
  ASSERT_EQ(prefixes.held().size(), 1u);
  EXPECT_EQ(prefixes.held()[0].tokens, letters("mnopqrs"));
  EXPECT_EQ(cache->liveSequences(), 1);
  prefixes.release(queue.view(), /*all=*/true);
  EXPECT_TRUE(prefixes.empty());
  EXPECT_EQ(cache->liveSequences(), 0);
  EXPECT_EQ(cache->usedBlocks(), 0);
}

} // namespace
} // namespace quill::scheduler
