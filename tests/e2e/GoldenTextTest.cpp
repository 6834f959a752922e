// The real trained stories260K model, compiled ahead of time, must print
// exactly what llama2.c prints for 200 greedy tokens from BOS.
#include "TestSupport.h"

#include "runtime/decode/Generator.h"

#include <gtest/gtest.h>

namespace quill::test {
namespace {

class GoldenText : public ::testing::TestWithParam<const char *> {};

TEST_P(GoldenText, Greedy200TokensFromBosMatchLlama2c) {
  std::string model = sharedModel(std::string("stories260K/") + GetParam());
  std::string tokenizerPath = sharedModel("stories260K/tok512.bin");
  std::string expected = sharedModel("stories260K/expected-greedy-200.txt");
  if (model.empty() || tokenizerPath.empty() || expected.empty())
    GTEST_SKIP() << "../shared/models/stories260K is absent";
  std::string artifactPath = compileArtifact(model, tokenizerPath, GetParam());
  ASSERT_FALSE(artifactPath.empty());

  // Through the runtime's API, with two threads.
  LoadedArtifact loaded = load(artifactPath, 2);
  ASSERT_TRUE(loaded.device);
  const ModelConfig &config = loaded.artifact->config();
  auto tokenizer = Tokenizer::fromBytes(loaded.artifact->tokenizerData(),
                                        loaded.artifact->tokenizerSize(), config.vocabSize, "t");
  ASSERT_TRUE(tokenizer.isOk()) << tokenizer.message();
  SamplingParams greedy;
  greedy.temperature = 0;
  SamplerChain sampler = SamplerChain::fromParams(greedy, loaded.arena.get());
  Generator generator(*loaded.device, *tokenizer, sampler, config);
  auto result = generator.generate({"", 200});
  ASSERT_TRUE(result.isOk()) << result.message();
  EXPECT_EQ(result->promptTokens, std::vector<int32_t>{1});
  EXPECT_EQ(result->tokens.size(), 200u);
  EXPECT_EQ(result->stop, StopReason::Length);
  EXPECT_EQ(result->text, readFile(expected));

  // Through the quill-run tool: the same text, then a newline, whether the
  // weights are copied into memory (the default) or read in place.
  for (const char *pages : {"", " --mmap"}) {
    CommandResult r = run(quote(tool("quill-run")) + " " + quote(artifactPath) +
                          " -n 200 --temp 0 --threads 1 --verbose" + pages);
    ASSERT_EQ(r.exitCode, 0) << r.err;
    EXPECT_EQ(r.out, readFile(expected) + "\n") << pages;
    EXPECT_NE(r.err.find("stop: length"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(*pages ? "weights read from: the artifact's mapping"
                                : "weights read from: a copy in memory"),
              std::string::npos)
        << r.err;
  }
}

INSTANTIATE_TEST_SUITE_P(Stories260K, GoldenText,
                         ::testing::Values("stories260K.bin", "stories260K.v1.bin"),
                         [](const auto &info) {
                           return std::string(info.param).find("v1") != std::string::npos
                                      ? "Version1"
                                      : "Legacy";
                         });

TEST(QuillRunJson, ReportsPromptTokensTextStopReasonAndTimings) {
  std::string model = sharedModel("stories260K/stories260K.bin");
  std::string tokenizerPath = sharedModel("stories260K/tok512.bin");
  if (model.empty())
    GTEST_SKIP() << "../shared/models/stories260K is absent";
  std::string artifactPath = compileArtifact(model, tokenizerPath, "json");
  CommandResult r = run(quote(tool("quill-run")) + " " + quote(artifactPath) +
                        " -p 'Once upon a time' -n 16 --temp 0.8 --top-p 0.9 --seed 42"
                        " --threads 2 --json");
  ASSERT_EQ(r.exitCode, 0) << r.err;
  // The prompt's ids as llama2.c's encoder gives them for tok512.bin.
  EXPECT_NE(r.out.find("\"prompt_tokens\":[1,403,407,261,378]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"stop_reason\":\"length\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"text\":\""), std::string::npos);
  EXPECT_NE(r.out.find("\"prefill_tokens_per_s\":"), std::string::npos);
  EXPECT_NE(r.out.find("\"decode_tokens_per_s\":"), std::string::npos);
  EXPECT_EQ(r.out.back(), '\n');
  EXPECT_EQ(r.out.find('\n'), r.out.size() - 1) << "one JSON object on one line";
}

} // namespace
} // namespace quill::test
