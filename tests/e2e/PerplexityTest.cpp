// quill-run --perplexity and --kl-divergence on the real stories260K model:
// the perplexity equals exp(mean NLL) of the reference forward pass over the
// same windows, an artifact against itself has KL 0 and full top-1
// agreement, Q8_0 weights a small positive KL, and bad input is one line.
#include "ReferenceForward.h"
#include "TestSupport.h"

#include "runtime/decode/Perplexity.h"
#include "runtime/tokenizer/Tokenizer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>

namespace quill::test {
namespace {

struct Stories {
  std::string model, tokenizer, text, artifact, q8;
};

/// The model, its text and two artifacts (fp32, Q8_0), compiled once.
const Stories *stories() {
  static Stories s = [] {
    Stories s;
    s.model = sharedModel("stories260K/stories260K.bin");
    s.tokenizer = sharedModel("stories260K/tok512.bin");
    s.text = sharedModel("stories260K/expected-greedy-200.txt");
    if (s.model.empty() || s.tokenizer.empty() || s.text.empty())
      return s;
    s.artifact = compileArtifact(s.model, s.tokenizer, "ppl-f32");
    s.q8 = compileArtifact(s.model, s.tokenizer, "ppl-q8", "--quantize q8_0");
    return s;
  }();
  return s.artifact.empty() || s.q8.empty() ? nullptr : &s;
}

#define REQUIRE_STORIES(s)                                                                         \
  const Stories *s = stories();                                                                    \
  if (!s)                                                                                          \
    GTEST_SKIP() << "../shared/models/stories260K is absent (or did not compile)";

/// The number after "key": in a JSON object; NaN when absent.
double field(const std::string &json, const std::string &key) {
  size_t at = json.find("\"" + key + "\":");
  return at == std::string::npos ? NAN : std::strtod(json.c_str() + at + key.size() + 3, nullptr);
}

CommandResult quality(const std::string &artifact, const std::string &flags) {
  return run(quote(tool("quill-run")) + " " + quote(artifact) + " --threads 1 " + flags);
}

TEST(PerplexityTool, MatchesTheReferenceForwardPassOverTheSameWindows) {
  REQUIRE_STORIES(s);
  CommandResult r = quality(s->artifact, "--perplexity " + quote(s->text) +
                                             " --ppl-context 64 --ppl-stride 24 --json");
  ASSERT_EQ(r.exitCode, 0) << r.err;

  // The oracle: every window from position 0 of the reference model.
  auto reference = ReferenceModel::load(s->model);
  ASSERT_TRUE(reference.isOk()) << reference.message();
  const int32_t vocab = reference->config().vocabSize;
  auto tokenizer = Tokenizer::fromFile(s->tokenizer, vocab);
  ASSERT_TRUE(tokenizer.isOk()) << tokenizer.message();
  std::vector<int32_t> tokens = tokenizer->encode(readFile(s->text), true, false);
  auto windows = evalWindows(static_cast<int32_t>(tokens.size()), 64, 24);
  ASSERT_TRUE(windows.isOk());
  double nllSum = 0;
  int64_t scored = 0;
  std::vector<double> logP;
  for (const EvalWindow &w : *windows)
    for (int32_t pos = w.start; pos + 1 < w.end; ++pos) {
      std::vector<float> logits = reference->forward(tokens[pos], pos - w.start);
      if (pos + 1 < w.firstScored)
        continue;
      logSoftmax(logits.data(), vocab, logP);
      nllSum -= logP[tokens[pos + 1]];
      ++scored;
    }
  EXPECT_EQ(scored, int64_t(tokens.size()) - 1); // Overlapping windows score every token once.
  const double expected = std::exp(nllSum / double(scored));
  EXPECT_EQ(field(r.out, "tokens"), double(scored)) << r.out;
  EXPECT_NEAR(field(r.out, "perplexity"), expected, 1e-3 * expected) << r.out;
  EXPECT_GT(field(r.out, "perplexity_stderr"), 0) << r.out;
  EXPECT_EQ(field(r.out, "window"), 64);
  EXPECT_EQ(field(r.out, "stride"), 24);
}

TEST(PerplexityTool, TextReportIsFiniteAndBelowTheVocabulary) {
  REQUIRE_STORIES(s);
  CommandResult r = quality(s->artifact, "--perplexity " + quote(s->text));
  ASSERT_EQ(r.exitCode, 0) << r.err;
  double ppl = 0, err = 0;
  int tokens = 0;
  ASSERT_EQ(
      std::sscanf(r.out.c_str(), "perplexity: %lf +/- %lf over %d tokens", &ppl, &err, &tokens), 3)
      << r.out;
  EXPECT_TRUE(std::isfinite(ppl));
  EXPECT_GT(ppl, 1);
  EXPECT_LT(ppl, 512);
  EXPECT_GT(tokens, 100);
}

TEST(PerplexityTool, AgainstItselfKlIsZeroAndTop1AgreesEverywhere) {
  REQUIRE_STORIES(s);
  CommandResult r = quality(s->artifact, "--perplexity " + quote(s->text) + " --kl-divergence " +
                                             quote(s->artifact) + " --ppl-context 48 --json");
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_LT(std::fabs(field(r.out, "kl_mean")), 1e-9) << r.out;
  EXPECT_LT(std::fabs(field(r.out, "kl_p99")), 1e-9) << r.out;
  EXPECT_EQ(field(r.out, "top1_agreement"), 1.0) << r.out;
  EXPECT_EQ(field(r.out, "perplexity"), field(r.out, "base_perplexity")) << r.out;
}

TEST(PerplexityTool, Q8AgainstF32HasASmallPositiveKlAndValidJson) {
  REQUIRE_STORIES(s);
  CommandResult r = quality(s->q8, "--perplexity " + quote(s->text) + " --kl-divergence " +
                                       quote(s->artifact) + " --json");
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_GT(field(r.out, "kl_mean"), 0) << r.out;
  EXPECT_LT(field(r.out, "kl_mean"), 0.01) << r.out;
  EXPECT_GE(field(r.out, "kl_p99"), field(r.out, "kl_mean")) << r.out;
  EXPECT_GT(field(r.out, "top1_agreement"), 0.9) << r.out;
  EXPECT_NE(field(r.out, "perplexity"), field(r.out, "base_perplexity")) << r.out;

  // One JSON object with every figure, as python3's json module reads it.
  std::string json = tempDir() + "/q8.json";
  std::ofstream(json) << r.out;
  CommandResult parsed = run("python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); "
                             "print(sorted(d))' " +
                             quote(json));
  if (parsed.exitCode == 127)
    GTEST_SKIP() << "python3 is absent";
  ASSERT_EQ(parsed.exitCode, 0) << parsed.err;
  EXPECT_EQ(parsed.out, "['base_perplexity', 'base_perplexity_stderr', 'kl_mean', 'kl_p99', "
                        "'perplexity', 'perplexity_stderr', 'stride', 'tokens', "
                        "'top1_agreement', 'window']\n");
}

TEST(PerplexityTool, BadInputIsOneLine) {
  REQUIRE_STORIES(s);
  const std::string dir = tempDir();
  const std::string text = " --perplexity " + quote(s->text);
  std::ofstream(dir + "/empty.txt");
  expectCleanFailure(quality(s->artifact, "--perplexity " + quote(dir + "/missing.txt")),
                     "missing.txt");
  expectCleanFailure(quality(s->artifact, "--perplexity " + quote(dir + "/empty.txt")), "empty");
  expectCleanFailure(quality(s->artifact, "--perplexity " + quote(dir)), "directory");
  expectCleanFailure(quality(s->artifact, text + " --ppl-context 1"), "--ppl-context");
  expectCleanFailure(quality(s->artifact, text + " --ppl-context 513"), "--ppl-context");
  expectCleanFailure(quality(s->artifact, text + " --ppl-stride 0"), "--ppl-stride");
  expectCleanFailure(quality(s->artifact, text + " --ppl-context 8 --ppl-stride 9"),
                     "--ppl-stride");
  expectCleanFailure(quality(s->artifact, text + " --ppl-stride 1000"), "--ppl-stride");
  expectCleanFailure(quality(s->artifact, "--kl-divergence " + quote(s->artifact)), "--perplexity");
  expectCleanFailure(quality(s->artifact, text + " -p hello"), "--perplexity");

  // (Fewer than 2 tokens cannot come from a text with BOS: see the unit tests.)
  // A vocabulary of 320 tokens against stories260K's 512.
  std::string other = compileSynthetic(llamaShape(32, 64, 1, 2, 2, 320, 64), "ppl-vocab320");
  ASSERT_FALSE(other.empty());
  expectCleanFailure(quality(s->artifact, text + " --kl-divergence " + quote(other)), "vocabulary");
}

} // namespace
} // namespace quill::test
