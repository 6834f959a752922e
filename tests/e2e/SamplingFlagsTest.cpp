// quill-run's sampling flags end to end: stop strings that span tokens on
// the real stories260K model (byte-exact against the golden greedy text),
// logprobs in the JSON, the chain --verbose prints, and one seed giving the
// same tokens for 1 and 2 threads with every pass on.
#include "TestSupport.h"

#include "runtime/artifact/Artifact.h"
#include "runtime/support/Json.h"
#include "runtime/tokenizer/Tokenizer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>

namespace quill::test {
namespace {

std::string runTool() { return quote(tool("quill-run")) + " "; }

/// stories260K compiled once for this file, or "" when ../shared is absent.
const std::string &storiesArtifact() {
  static std::string path = [] {
    std::string model = sharedModel("stories260K/stories260K.bin");
    if (model.empty())
      return std::string();
    return compileArtifact(model, sharedModel("stories260K/tok512.bin"), "sampling-flags");
  }();
  return path;
}

/// A small synthetic artifact, for what does not need a trained model.
const std::string &syntheticArtifact() {
  static std::string path = [] {
    ModelConfig c;
    c.dim = 64, c.hiddenDim = 160, c.nLayers = 2, c.nHeads = 4, c.nKvHeads = 2;
    c.vocabSize = 512, c.seqLen = 32;
    return compileArtifact(synthesizeModel(c, "sampling-flags"), syntheticTokenizer(512),
                           "sampling-flags-synthetic");
  }();
  return path;
}

/// The integers of the JSON array that follows `"key":`.
std::vector<int32_t> jsonInts(const std::string &json, const std::string &key) {
  std::vector<int32_t> out;
  size_t at = json.find("\"" + key + "\":[");
  if (at == std::string::npos)
    return out;
  at = json.find('[', at) + 1;
  while (at < json.size() && json[at] != ']') {
    char *end = nullptr;
    out.push_back(static_cast<int32_t>(std::strtol(json.c_str() + at, &end, 10)));
    at = static_cast<size_t>(end - json.c_str());
    if (json[at] == ',')
      ++at;
  }
  return out;
}

size_t countOf(const std::string &text, const std::string &needle) {
  size_t count = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1))
    ++count;
  return count;
}

TEST(SamplingFlags, StopStringSpanningTokensEndsTheTextBeforeIt) {
  const std::string &artifactPath = storiesArtifact();
  std::string golden = sharedModel("stories260K/expected-greedy-200.txt");
  if (artifactPath.empty() || golden.empty())
    GTEST_SKIP() << "../shared/models/stories260K is absent";
  const std::string expectedText = readFile(golden);
  std::string greedy = runTool() + quote(artifactPath) + " -n 200 --temp 0 --threads 1";

  // The golden run's tokens and their pieces, to find a token boundary.
  CommandResult json = run(greedy + " --json");
  ASSERT_EQ(json.exitCode, 0) << json.err;
  std::vector<int32_t> tokens = jsonInts(json.out, "tokens");
  ASSERT_EQ(tokens.size(), 200u);
  auto artifact = Artifact::open(artifactPath);
  ASSERT_TRUE(artifact.isOk()) << artifact.message();
  auto tokenizer = Tokenizer::fromBytes(artifact->tokenizerData(), artifact->tokenizerSize(),
                                        artifact->config().vocabSize, "tokenizer");
  ASSERT_TRUE(tokenizer.isOk()) << tokenizer.message();
  std::vector<std::string> pieces;
  std::string text;
  int32_t previous = 1;
  for (int32_t token : tokens) {
    pieces.push_back(tokenizer->decode(previous, token));
    text += pieces.back();
    previous = token;
  }
  ASSERT_EQ(text, expectedText);

  // A stop string of the last two bytes of one piece and the first two of
  // the next, whose first occurrence is at that boundary.
  std::string stop;
  size_t cut = 0, completingToken = 0, boundary = 0;
  for (size_t j = 1; j < pieces.size() && stop.empty(); ++j) {
    boundary += pieces[j - 1].size();
    if (boundary < 20 || pieces[j - 1].size() < 2 || pieces[j].size() < 2)
      continue;
    std::string candidate = text.substr(boundary - 2, 4);
    if (text.find(candidate) == boundary - 2 && candidate.find('\'') == std::string::npos) {
      stop = candidate;
      cut = boundary - 2;
      completingToken = j;
    }
  }
  ASSERT_FALSE(stop.empty()) << "no token boundary fit for a spanning stop string";

  // Streamed text ends right before the stop string; the JSON's tokens run
  // up to the token that completed it.
  std::string flags = " --stop " + quote(stop) + " --stop " + quote("never-in-the-text");
  CommandResult streamed = run(greedy + flags);
  ASSERT_EQ(streamed.exitCode, 0) << streamed.err;
  EXPECT_EQ(streamed.out, expectedText.substr(0, cut) + "\n") << "stop " << quote(stop);
  EXPECT_NE(streamed.err.find("[stop: stop_string after " + std::to_string(completingToken + 1) +
                              " tokens"),
            std::string::npos)
      << streamed.err;
  CommandResult stopped = run(greedy + flags + " --json");
  ASSERT_EQ(stopped.exitCode, 0) << stopped.err;
  EXPECT_NE(stopped.out.find("\"text\":" + jsonQuote(expectedText.substr(0, cut)) + ","),
            std::string::npos)
      << stopped.out;
  EXPECT_NE(stopped.out.find("\"stop_reason\":\"stop_string\""), std::string::npos);
  EXPECT_EQ(jsonInts(stopped.out, "tokens"),
            std::vector<int32_t>(tokens.begin(), tokens.begin() + completingToken + 1));

  // A stop string that never occurs changes nothing, not even the last
  // bytes (held back while they might begin it, then released).
  std::string almost = expectedText.substr(expectedText.size() - 3) + "\x01";
  CommandResult unchanged = run(greedy + " --stop " + quote(almost));
  ASSERT_EQ(unchanged.exitCode, 0) << unchanged.err;
  EXPECT_EQ(unchanged.out, expectedText + "\n");
  EXPECT_NE(unchanged.err.find("stop: length"), std::string::npos) << unchanged.err;
}

TEST(SamplingFlags, LogprobsAreInTheJsonOnlyWhenAsked) {
  const std::string &artifactPath = storiesArtifact();
  if (artifactPath.empty())
    GTEST_SKIP() << "../shared/models/stories260K is absent";
  std::string base = runTool() + quote(artifactPath) + " -n 20 --json --threads 1";

  CommandResult plain = run(base + " --temp 0");
  ASSERT_EQ(plain.exitCode, 0) << plain.err;
  EXPECT_EQ(plain.out.find("\"logprobs\""), std::string::npos);

  CommandResult raw = run(base + " --temp 0 --logprobs 3");
  ASSERT_EQ(raw.exitCode, 0) << raw.err;
  std::vector<int32_t> tokens = jsonInts(raw.out, "tokens");
  ASSERT_EQ(tokens.size(), 20u);
  EXPECT_EQ(tokens, jsonInts(plain.out, "tokens")) << "logprobs must not change the tokens";
  // One record per token, three alternatives each; greedy picks the first.
  EXPECT_EQ(countOf(raw.out, "\"top\":["), 20u);
  EXPECT_EQ(countOf(raw.out, "{\"token\":"), 20u * 4);
  // The first token is "Once" (after BOS), its bytes those letters'.
  std::string first = "\"logprobs\":[{\"token\":" + std::to_string(tokens[0]) +
                      ",\"bytes\":[79,110,99,101],\"logprob\":";
  size_t at = raw.out.find(first);
  ASSERT_NE(at, std::string::npos) << raw.out;
  double logprob = std::strtod(raw.out.c_str() + at + first.size(), nullptr);
  EXPECT_LT(logprob, 0.0);
  EXPECT_GT(logprob, -5.0);
  EXPECT_NE(raw.out.find(",\"top\":[{\"token\":" + std::to_string(tokens[0]) + ","),
            std::string::npos);

  // Processed at top-k 1: the selector's distribution is one token, p = 1.
  CommandResult processed =
      run(base + " --temp 0.8 --top-k 1 --seed 3 --logprobs 2 --logprobs-mode processed");
  ASSERT_EQ(processed.exitCode, 0) << processed.err;
  EXPECT_EQ(jsonInts(processed.out, "tokens"), tokens) << "top-k 1 is greedy";
  EXPECT_EQ(countOf(processed.out, "\"logprob\":0"), 20u * 2) << processed.out;
}

TEST(SamplingFlags, VerbosePrintsTheChainInItsOrder) {
  const std::string &artifactPath = syntheticArtifact();
  ASSERT_FALSE(artifactPath.empty());
  CommandResult r = run(runTool() + quote(artifactPath) +
                        " -n 2 --verbose --seed 5 --temp 0.7 --min-p 0.1 --top-p 1"
                        " --repeat-penalty 1.1 --logit-bias 5=-inf"
                        " --samplers 'min-p;temperature;penalties'");
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.err.find("sampler: logit-bias(5=-inf) -> min-p(0.1) -> temperature(0.7) -> "
                       "penalties(last-n=64, repeat=1.1, frequency=0, presence=0) -> "
                       "dist(seed=5)"),
            std::string::npos)
      << r.err;
  CommandResult byDefault = run(runTool() + quote(artifactPath) +
                                " -n 2 --verbose --seed 5 --temp 0.7 --top-k 40 --min-p 0.05"
                                " --presence-penalty 0.5 --repeat-last-n 16");
  ASSERT_EQ(byDefault.exitCode, 0) << byDefault.err;
  EXPECT_NE(byDefault.err.find("sampler: penalties(last-n=16, repeat=1, frequency=0, "
                               "presence=0.5) -> top-k(40) -> top-p(0.9) -> min-p(0.05) -> "
                               "temperature(0.7) -> dist(seed=5)"),
            std::string::npos)
      << byDefault.err;
}

TEST(SamplingFlags, EveryPassGivesTheSameTokensForOneAndTwoThreads) {
  const std::string &real = storiesArtifact();
  const std::string &artifactPath = real.empty() ? syntheticArtifact() : real;
  std::string base = runTool() + quote(artifactPath) +
                     " -p 'Once upon a time' -n 24 --json --seed 42 --temp 0.9 --top-k 60"
                     " --top-p 0.95 --min-p 0.02 --repeat-penalty 1.2 --frequency-penalty 0.2"
                     " --presence-penalty 0.1 --logit-bias 13=-inf --logprobs 2";
  CommandResult one = run(base + " --threads 1");
  CommandResult two = run(base + " --threads 2");
  ASSERT_EQ(one.exitCode, 0) << one.err;
  ASSERT_EQ(two.exitCode, 0) << two.err;
  EXPECT_FALSE(jsonInts(one.out, "tokens").empty());
  EXPECT_EQ(jsonInts(one.out, "tokens"), jsonInts(two.out, "tokens"));
  auto logprobs = [](const std::string &json) {
    size_t at = json.find("\"logprobs\":");
    return json.substr(at, json.find("\"seed\"") - at);
  };
  EXPECT_EQ(logprobs(one.out), logprobs(two.out));
}

TEST(SamplingFlags, BiasAndPenaltiesSteerGreedyText) {
  const std::string &artifactPath = storiesArtifact();
  if (artifactPath.empty())
    GTEST_SKIP() << "../shared/models/stories260K is absent";
  std::string base = runTool() + quote(artifactPath) + " -n 60 --temp 0 --json --threads 1";
  CommandResult plain = run(base);
  ASSERT_EQ(plain.exitCode, 0) << plain.err;
  std::vector<int32_t> tokens = jsonInts(plain.out, "tokens");
  ASSERT_FALSE(tokens.empty());
  // Banning greedy's first token changes the first token.
  CommandResult banned = run(base + " --logit-bias " + std::to_string(tokens[0]) + "=-inf");
  ASSERT_EQ(banned.exitCode, 0) << banned.err;
  std::vector<int32_t> other = jsonInts(banned.out, "tokens");
  ASSERT_FALSE(other.empty());
  EXPECT_NE(other[0], tokens[0]);
  // A strong presence penalty over the whole context: no token repeats
  // among the first ones (the model must keep finding new ones).
  CommandResult fresh = run(base + " --presence-penalty 100 --repeat-last-n 512 -n 30");
  ASSERT_EQ(fresh.exitCode, 0) << fresh.err;
  std::vector<int32_t> unique = jsonInts(fresh.out, "tokens");
  std::vector<int32_t> sorted = unique;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end()) << fresh.out;
}

} // namespace
} // namespace quill::test
