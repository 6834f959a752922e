// The online scheduler under quill-serve: requests that arrive while others
// run get the tokens they get alone (checked against BatchScheduler runs of
// one request), a cancel frees a request's blocks at once, samples read
// mid-run are prefixes of their final text, and impossible requests are
// named before they queue.
#include "TestSupport.h"

#include "runtime/scheduler/BatchScheduler.h"
#include "runtime/scheduler/ServingScheduler.h"

#include <gtest/gtest.h>

#include <map>

namespace quill::test {
namespace {

std::string stories(const std::string &file) { return sharedModel("stories260K/" + file); }

struct Fixture {
  LoadedArtifact loaded;
  std::optional<Tokenizer> tokenizer;
  std::unique_ptr<PagedKVCache> cache;

  const ModelConfig &config() const { return loaded.artifact->config(); }

  /// false (with the test skipped or failed) when stories260K is missing.
  bool setUp(int32_t sequences, uint64_t budgetMB = 0) {
    if (stories("stories260K.bin").empty())
      return false;
    std::string path = compileArtifact(stories("stories260K.bin"), stories("tok512.bin"), "serving",
                                       "--batch-rows 8");
    if (path.empty())
      return false;
    loaded = load(path, 2);
    auto t = Tokenizer::fromBytes(loaded.artifact->tokenizerData(),
                                  loaded.artifact->tokenizerSize(), config().vocabSize, "t");
    EXPECT_TRUE(t.isOk()) << t.message();
    tokenizer.emplace(t.take());
    auto c = createPagedCache(*loaded.device, config(), budgetMB << 20, sequences);
    EXPECT_TRUE(c.isOk()) << c.message();
    if (!c)
      return false;
    cache = c.take();
    return true;
  }
};

SamplingParams seeded(uint64_t seed) {
  SamplingParams p;
  p.temperature = 0.8f;
  p.topP = 0.95f;
  p.seed = seed;
  return p;
}

/// `request` alone through BatchScheduler::run, sampling with `params`.
GenerationResult alone(Fixture &f, const GenerationRequest &request, const SamplingParams &params) {
  BatchOptions options;
  options.maxSequences = 1;
  BatchScheduler scheduler(
      *f.loaded.device, *f.cache, *f.tokenizer, f.config(),
      [&](size_t, int32_t) { return SamplerChain::fromParams(params, f.loaded.arena.get()); },
      options);
  auto results = scheduler.run({request});
  EXPECT_TRUE(results[0].isOk()) << results[0].message();
  return results[0] ? results[0].take() : GenerationResult{};
}

#define SKIP_WITHOUT_STORIES(f, ...)                                                               \
  if (!(f).setUp(__VA_ARGS__)) {                                                                   \
    if (stories("stories260K.bin").empty())                                                        \
      GTEST_SKIP() << "../shared/models/stories260K is absent";                                    \
    return;                                                                                        \
  }

TEST(ServingScheduler, RequestsArrivingMidRunGetTheirSoloTokens) {
  Fixture f;
  SKIP_WITHOUT_STORIES(f, 4);
  const char *prompts[] = {"Once upon a time", "The little dog", "Lily and Tom went to the park",
                           "One day",          "The sun was",    "A big red ball",
                           "Tim wanted to"};
  std::map<size_t, SamplingParams> params;
  ServingScheduler scheduler(
      *f.loaded.device, *f.cache, *f.tokenizer, f.config(),
      [&](size_t ticket, int32_t) {
        return SamplerChain::fromParams(params.at(ticket), f.loaded.arena.get());
      },
      BatchOptions{4});
  std::vector<ServingScheduler::Ticket> tickets;
  std::vector<GenerationRequest> requests;
  std::map<ServingScheduler::Ticket, GenerationResult> results;
  // One request joins every third round, so each meets neighbours at every
  // stage: in prefill, decoding, finishing; more than 4 also wait.
  for (int round = 0; round < 400 && (tickets.size() < 7 || scheduler.busy()); ++round) {
    if (round % 3 == 0 && tickets.size() < 7) {
      size_t i = tickets.size();
      GenerationRequest r{prompts[i], 24 + int32_t(i) * 5, {}};
      requests.push_back(r);
      ServingScheduler::Ticket t = scheduler.submit(r);
      params[t] = seeded(100 + i);
      tickets.push_back(t);
    }
    ASSERT_TRUE(scheduler.round().isOk());
    for (size_t i = 0; i < tickets.size(); ++i)
      if (!results.count(tickets[i]) && scheduler.done(tickets[i])) {
        auto r = scheduler.take(tickets[i]);
        ASSERT_TRUE(r.isOk()) << r.message();
        results[tickets[i]] = r.take();
      }
  }
  ASSERT_EQ(results.size(), 7u);
  EXPECT_GT(scheduler.stats().peakSequences, 1);
  EXPECT_EQ(f.cache->usedBlocks(), 0);
  for (size_t i = 0; i < 7; ++i) {
    GenerationResult solo = alone(f, requests[i], seeded(100 + i));
    EXPECT_EQ(results[tickets[i]].tokens, solo.tokens) << "request " << i;
    EXPECT_EQ(results[tickets[i]].text, solo.text) << "request " << i;
  }
}

TEST(ServingScheduler, CancelFreesBlocksAtOnceAndOthersFinish) {
  Fixture f;
  SKIP_WITHOUT_STORIES(f, 2);
  ServingScheduler scheduler(
      *f.loaded.device, *f.cache, *f.tokenizer, f.config(),
      [&](size_t, int32_t) { return SamplerChain::fromParams(seeded(1), f.loaded.arena.get()); },
      BatchOptions{2});
  GenerationRequest longRequest{"Once upon a time", 300, {}};
  longRequest.ignoreEos = true;
  auto a = scheduler.submit(longRequest);
  auto b = scheduler.submit(longRequest);
  auto waiting = scheduler.submit(longRequest); // No slot: it waits.
  for (int i = 0; i < 20; ++i)
    ASSERT_TRUE(scheduler.round().isOk());
  EXPECT_EQ(scheduler.sequencesInFlight(), 2);
  EXPECT_EQ(scheduler.requestsWaiting(), 1);
  int32_t before = f.cache->usedBlocks();
  scheduler.cancel(a, Status::error("cancelled"));
  EXPECT_LT(f.cache->usedBlocks(), before);
  EXPECT_EQ(scheduler.sequencesInFlight(), 1);
  ASSERT_TRUE(scheduler.done(a));
  auto cancelled = scheduler.take(a);
  ASSERT_FALSE(cancelled.isOk());
  EXPECT_EQ(cancelled.message(), "cancelled");
  scheduler.cancel(waiting, Status::error("gone"));
  EXPECT_EQ(scheduler.requestsWaiting(), 0);
  EXPECT_EQ(scheduler.take(waiting).message(), "gone");
  while (scheduler.busy())
    ASSERT_TRUE(scheduler.round().isOk());
  auto finished = scheduler.take(b);
  ASSERT_TRUE(finished.isOk()) << finished.message();
  EXPECT_EQ(finished->tokens.size(), 300u);
  EXPECT_EQ(f.cache->usedBlocks(), 0);
  // Freed tickets are reused, and work as new.
  auto again = scheduler.submit({"One day", 5, {}});
  EXPECT_TRUE(again == a || again == b || again == waiting);
  while (scheduler.busy())
    ASSERT_TRUE(scheduler.round().isOk());
  EXPECT_EQ(scheduler.take(again)->tokens.size(), 5u);
}

TEST(ServingScheduler, SamplesReadMidRunArePrefixesOfTheirResult) {
  Fixture f;
  SKIP_WITHOUT_STORIES(f, 4);
  ServingScheduler scheduler(
      *f.loaded.device, *f.cache, *f.tokenizer, f.config(),
      [&](size_t, int32_t sample) {
        return SamplerChain::fromParams(seeded(7 + uint64_t(sample)), f.loaded.arena.get());
      },
      BatchOptions{4});
  GenerationRequest request{"Once upon a time", 60, {" the"}};
  request.samples = 3;
  auto t = scheduler.submit(request);
  std::map<int32_t, std::vector<std::string>> seen;
  std::map<int32_t, size_t> tokensSeen;
  while (!scheduler.done(t)) {
    ASSERT_TRUE(scheduler.round().isOk());
    scheduler.visitSamples(t, [&](int32_t sample, const GenerationResult &r) {
      seen[sample].push_back(r.text);
      EXPECT_GE(r.tokens.size(), tokensSeen[sample]);
      tokensSeen[sample] = r.tokens.size();
    });
  }
  auto result = scheduler.take(t);
  ASSERT_TRUE(result.isOk()) << result.message();
  ASSERT_EQ(result->sequences.size(), 3u);
  for (int32_t s = 0; s < 3; ++s) {
    const std::string &final = result->sequences[size_t(s)].text;
    ASSERT_FALSE(seen[s].empty());
    for (const std::string &text : seen[s])
      EXPECT_EQ(final.compare(0, text.size(), text), 0)
          << "sample " << s << ": '" << text << "' is not a prefix of '" << final << "'";
    EXPECT_EQ(final.find(" the"), std::string::npos);
  }
}

TEST(ServingScheduler, ImpossibleRequestsAreNamedWithoutASlot) {
  Fixture f;
  SKIP_WITHOUT_STORIES(f, 2, 1);
  ServingScheduler scheduler(
      *f.loaded.device, *f.cache, *f.tokenizer, f.config(),
      [&](size_t, int32_t) { return SamplerChain::fromParams(seeded(1), f.loaded.arena.get()); },
      BatchOptions{2});
  const int32_t context = f.config().seqLen;
  GenerationRequest tooLong{"", 4, {}};
  Status s = scheduler.check(tooLong, context + 1);
  ASSERT_FALSE(s.isOk());
  EXPECT_EQ(s.message(), "the prompt has " + std::to_string(context + 1) +
                             " tokens but the model's context holds " + std::to_string(context));
  GenerationRequest wide{"x", 4, {}};
  wide.samples = 3; // Only 2 run at once.
  s = scheduler.check(wide, 2);
  ASSERT_FALSE(s.isOk());
  EXPECT_EQ(s.message().rfind("the request needs 3 sequences", 0), 0u) << s.message();
  // 1 MB of stories260K's KV blocks cannot hold 16 full-context samples.
  GenerationRequest huge{"x", context, {}};
  huge.samples = 2;
  int32_t blockSize = f.cache->layout().blockSize;
  if (2 * ((context + blockSize - 1) / blockSize) > f.cache->totalBlocks()) {
    s = scheduler.check(huge, 2);
    ASSERT_FALSE(s.isOk());
    EXPECT_NE(s.message().find("KV blocks"), std::string::npos) << s.message();
  }
  EXPECT_TRUE(scheduler.check({"x", 8, {}}, 2).isOk());
  // submit() gives the same errors as results, without a slot number.
  GenerationRequest negative{"x", -1, {}};
  auto t = scheduler.submit(negative);
  ASSERT_TRUE(scheduler.done(t));
  EXPECT_EQ(scheduler.take(t).message(), "the number of new tokens must not be negative");
}

} // namespace
} // namespace quill::test
