// Admission against the KV budget: request checks, the blocks a sequence may
// still take, the budget and slot checks, and the verdicts they lead to.
// Every expected count is worked out from the budget rule by hand.
#include "runtime/scheduler/Admission.h"

#include "tests/unit/SchedulerTestSupport.h"

#include <gtest/gtest.h>

namespace quill::scheduler {
namespace {

using test::bareSequence;
using test::letters;
using test::makeTinyCache;

GenerationRequest withBeams(int32_t beams) {
  GenerationRequest r;
  r.beamSearch = BeamSearchOptions{};
  r.beamSearch->beams = beams;
  return r;
}

TEST(SchedulerAdmission, WidthIsTheBeamsOrTheSamples) {
  GenerationRequest samples;
  samples.samples = 3;
  EXPECT_EQ(requestWidth(samples), 3);
  EXPECT_EQ(requestWidth(withBeams(4)), 4);
  EXPECT_EQ(requestWidth(GenerationRequest{}), 1);
}

TEST(SchedulerAdmission, RequestChecksNameTheRequestAndTheProblem) {
  GenerationRequest negative;
  negative.maxNewTokens = -1;
  Status s = checkRequest(3, negative);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(), "request 3: the number of new tokens must not be negative");

  GenerationRequest none;
  none.samples = 0;
  EXPECT_FALSE(checkRequest(0, none));
  GenerationRequest tooMany;
  tooMany.samples = kMaxBeams + 1;
  EXPECT_FALSE(checkRequest(0, tooMany));
  GenerationRequest most;
  most.samples = kMaxBeams;
  EXPECT_TRUE(checkRequest(0, most));
  GenerationRequest both = withBeams(2);
  both.samples = 2;
  s = checkRequest(1, both);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(), "request 1: samples and beams must be 1 to 64, and not both");
  EXPECT_TRUE(checkRequest(0, withBeams(kMaxBeams)));

  EXPECT_TRUE(checkPromptLength(0, 48, 48));
  s = checkPromptLength(2, 49, 48);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(), "request 2: the prompt has 49 tokens but the model's context holds 48");
}

TEST(SchedulerAdmission, MaxPositionsAreThePromptAndAllButTheLastNewToken) {
  EXPECT_EQ(maxPositionsFor(10, 5, 48), 14); // 10 + 4 fed back.
  EXPECT_EQ(maxPositionsFor(10, 1, 48), 10); // The one new token is never fed back.
  EXPECT_EQ(maxPositionsFor(10, 0, 48), 10);
  EXPECT_EQ(maxPositionsFor(40, 20, 48), 48); // The context caps it.
}

TEST(SchedulerAdmission, FutureBlocksOfOneSequence) {
  auto cache = makeTinyCache(41); // 4 positions per block.
  // Nothing computed, 10 positions to write: ceil(10 / 4) = 3 blocks.
  auto fresh = bareSequence(*cache, letters("abcdefghi"), 0, 10);
  EXPECT_EQ(futureBlocks(*cache, *fresh), 3);
  // 5 computed (2 blocks held): 3 - 2 = 1 more.
  auto started = bareSequence(*cache, letters("abcdefghi"), 5, 10);
  EXPECT_EQ(futureBlocks(*cache, *started), 1);
  // Done: never below 0.
  auto full = bareSequence(*cache, letters("abcdefghi"), 10, 10);
  EXPECT_EQ(futureBlocks(*cache, *full), 0);
}

TEST(SchedulerAdmission, ASharedPartialLastBlockCountsItsCopy) {
  auto cache = makeTinyCache(41);
  auto parent = bareSequence(*cache, letters("abcdefghi"), 6, 10);
  // A fork of 6 positions shares 2 blocks, the second half full: it needs
  // ceil(10 / 4) - 2 = 1 new block, plus the copy of the shared one.
  auto child = SequenceFactory::candidate(0, 1, parent->tokens, 10, cache->fork(parent->kv));
  EXPECT_EQ(futureBlocks(*cache, *child), 2);
  // At 8 positions the last shared block is full: nothing to copy.
  auto whole = bareSequence(*cache, letters("abcdefghi"), 8, 10);
  auto wholeChild = SequenceFactory::candidate(0, 1, whole->tokens, 10, cache->fork(whole->kv));
  EXPECT_EQ(futureBlocks(*cache, *wholeChild), 1);
}

TEST(SchedulerAdmission, AGroupNotYetForkedReservesForEverySequence) {
  auto cache = makeTinyCache(41);
  // 3 samples, 6 positions computed (1 whole block), 14 to write: each of
  // the 3 may fill ceil(14 / 4) - 6 / 4 = 4 - 1 = 3 blocks of its own.
  auto q = bareSequence(*cache, letters("abcdefghijkl"), 6, 14, /*width=*/3);
  EXPECT_TRUE(reservesWholeGroup(*q->group));
  EXPECT_EQ(futureBlocks(*cache, *q), 9);
  // Once forked, each sample counts for itself: ceil(14 / 4) - 2 held = 2.
  q->group->forked = true;
  EXPECT_FALSE(reservesWholeGroup(*q->group));
  EXPECT_EQ(futureBlocks(*cache, *q), 2);
  // A beam search stays reserved as a whole.
  q->group->beams.emplace(BeamSearchOptions{}, std::vector<int32_t>{2});
  EXPECT_TRUE(reservesWholeGroup(*q->group));
}

TEST(SchedulerAdmission, TheBudgetCountsBlocksInUseAndEveryReservation) {
  auto cache = makeTinyCache(11); // 10 usable blocks.
  SequenceList live;
  // 5 positions in use (2 blocks), 12 to write: 1 more block.
  live.push_back(bareSequence(*cache, letters("abcdefghij"), 5, 12));
  ASSERT_EQ(cache->usedBlocks(), 2);
  // used 2 + reserved 1 + the candidate's ceil(n / 4) blocks must be <= 10.
  auto fits28 = bareSequence(*cache, letters("abc"), 0, 28); // 7: 10.
  EXPECT_TRUE(fitsBudget(*cache, live, *fits28));
  auto over32 = bareSequence(*cache, letters("abc"), 0, 32); // 8: 11.
  EXPECT_FALSE(fitsBudget(*cache, live, *over32));
}

TEST(SchedulerAdmission, ABeamGroupIsReservedOnce) {
  auto cache = makeTinyCache(11);
  SequenceList live;
  // Two beams of one search, forked from a 4-position prompt (1 block in
  // use), 12 positions to write: the group may take 2 * (3 - 1) = 4.
  live.push_back(bareSequence(*cache, letters("abc"), 4, 12, /*width=*/2));
  live.front()->group->beams.emplace(BeamSearchOptions{}, std::vector<int32_t>{2});
  live.push_back(test::bareFork(*cache, *live.front(), 1));
  ASSERT_EQ(cache->usedBlocks(), 1);
  // 1 + 4 + 5 = 10 fits; counted twice the group would make it 14.
  auto fits = bareSequence(*cache, letters("abc"), 0, 20);
  EXPECT_TRUE(fitsBudget(*cache, live, *fits));
  auto over = bareSequence(*cache, letters("abc"), 0, 24); // 1 + 4 + 6 = 11.
  EXPECT_FALSE(fitsBudget(*cache, live, *over));
}

TEST(SchedulerAdmission, SlotsAreWholeGroupsUntilSamplesFork) {
  auto cache = makeTinyCache(41);
  SequenceList live;
  live.push_back(bareSequence(*cache, letters("a"), 0, 8)); // 1.
  // A beam search of 3 down to one running sequence: still 3.
  live.push_back(bareSequence(*cache, letters("b"), 0, 8, 3));
  live.back()->group->beams.emplace(BeamSearchOptions{}, std::vector<int32_t>{2});
  live.back()->group->forked = true;
  // 4 samples not yet forked: 4.
  live.push_back(bareSequence(*cache, letters("c"), 0, 8, 4));
  EXPECT_EQ(slotsInUse(live), 8);
  // 3 samples forked, 2 of them still running: 2 (counted once).
  live.push_back(bareSequence(*cache, letters("d"), 0, 8, 3));
  live.back()->group->forked = true;
  live.back()->group->live = 2;
  live.push_back(test::bareFork(*cache, *live.back(), 1));
  EXPECT_EQ(slotsInUse(live), 10);
}

TEST(SchedulerAdmission, SlotVerdicts) {
  Verdict v = judgeSlots(2, 5, 0, 4);
  EXPECT_EQ(v.kind, Verdict::Reject);
  EXPECT_EQ(v.error.message(), "request 2 needs 5 sequences at once but at most 4 run together "
                               "(--batch, --batch-rows)");
  EXPECT_EQ(judgeSlots(0, 2, 3, 4).kind, Verdict::Wait);
  EXPECT_EQ(judgeSlots(0, 2, 2, 4).kind, Verdict::Admit);
}

TEST(SchedulerAdmission, ARequestLargerThanTheWholeBudgetIsRejectedWithItsSizes) {
  auto cache = makeTinyCache(11); // 10 usable blocks of 2 * 4 * 32 = 256 bytes.
  ASSERT_EQ(cache->bytesPerBlock(), 256u);
  SequenceList live;
  // 2 samples of 24 positions: 2 * 6 = 12 blocks alone.
  auto q = bareSequence(*cache, letters("abc"), 0, 24, /*width=*/2, /*index=*/5);
  EXPECT_EQ(blocksAlone(2, 24, 4), 12);
  Verdict v = judgeBudget(*cache, live, *q, false);
  ASSERT_EQ(v.kind, Verdict::Reject);
  // (12 + 1) * 256 bytes = 0.003174 MiB; the budget (10 + 1) * 256 = 0.002686.
  EXPECT_EQ(v.error.message(),
            "request 5 needs 12 KV blocks (24 positions for each of 2 sequences, 0.003174 MiB) "
            "but the KV budget holds 10 (0.002686 MiB): raise --kv-budget or lower -n");
}

TEST(SchedulerAdmission, ARequestThatFitsAloneWaitsOrFreesKeptPrefixes) {
  auto cache = makeTinyCache(5); // 4 usable blocks.
  // Something else holds 2 blocks (a kept prefix, say).
  PagedKVCache::SequenceId held = cache->createSequence();
  ASSERT_TRUE(cache->append(held, 8).isOk());
  SequenceList live;
  // 12 positions: 3 blocks; 2 + 3 > 4 but 3 <= 4 alone.
  auto q = bareSequence(*cache, letters("abc"), 0, 12);
  EXPECT_EQ(judgeBudget(*cache, live, *q, /*prefixesHeld=*/true).kind, Verdict::FreeHeldPrefixes);
  EXPECT_EQ(judgeBudget(*cache, live, *q, /*prefixesHeld=*/false).kind, Verdict::Wait);
  // With a sequence in flight it waits for that one instead.
  live.push_back(bareSequence(*cache, letters("x"), 0, 1));
  EXPECT_EQ(judgeBudget(*cache, live, *q, /*prefixesHeld=*/true).kind, Verdict::Wait);
  cache->free(held);
  live.clear();
  EXPECT_EQ(judgeBudget(*cache, live, *q, false).kind, Verdict::Admit);
}

} // namespace
} // namespace quill::scheduler
