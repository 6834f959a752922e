// Bad input gets one clear line and a nonzero exit: never a crash, a hang,
// or silent garbage. Exercised through the real tools.
#include "TestSupport.h"

#include <gtest/gtest.h>

#include <sys/stat.h>

#include <fstream>
#include <unistd.h>

namespace quill::test {
namespace {

std::string runTool() { return quote(tool("quill-run")) + " "; }
std::string compileTool() { return quote(tool("quill-compile")) + " "; }

/// A small compiled artifact (synthetic, so this runs without ../shared).
const std::string &smallArtifact() {
  static std::string path = compileSynthetic(llamaShape(64, 160, 2, 4, 2, 512, 16), "bad-input");
  return path;
}

void writeBytes(const std::string &path, const std::string &bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

TEST(BadInput, QuillRunRejectsImpossibleSamplingSettings) {
  std::string a = quote(smallArtifact()) + " -n 4 ";
  expectCleanFailure(run(runTool() + a + "--top-p 1.5"), "--top-p");
  expectCleanFailure(run(runTool() + a + "--top-p 0"), "--top-p");
  expectCleanFailure(run(runTool() + a + "--temp -1"), "--temp");
  expectCleanFailure(run(runTool() + a + "--temp nan"), "--temp");
  expectCleanFailure(run(runTool() + a + "--top-k -3"), "--top-k");
  expectCleanFailure(run(runTool() + a + "--threads 0"), "--threads");
  expectCleanFailure(run(runTool() + a + "-n -5"), "must not be negative");
  expectCleanFailure(run(runTool() + a + "--temp"), "missing value");
  expectCleanFailure(run(runTool() + a + "--seed abc"), "--seed");
  expectCleanFailure(run(runTool() + a + "--frobnicate"), "unknown option");
}

TEST(BadInput, QuillRunRejectsImpossibleSamplerChains) {
  std::string a = quote(smallArtifact()) + " -n 4 ";
  expectCleanFailure(run(runTool() + a + "--min-p 2"), "--min-p");
  expectCleanFailure(run(runTool() + a + "--min-p nan"), "--min-p");
  expectCleanFailure(run(runTool() + a + "--repeat-last-n -1"), "--repeat-last-n");
  expectCleanFailure(run(runTool() + a + "--repeat-penalty nan"), "--repeat-penalty");
  expectCleanFailure(run(runTool() + a + "--repeat-penalty 0"), "--repeat-penalty");
  expectCleanFailure(run(runTool() + a + "--frequency-penalty nan"), "--frequency-penalty");
  expectCleanFailure(run(runTool() + a + "--presence-penalty nan"), "--presence-penalty");
  // The vocabulary is 512: id 512 is checked once the artifact is open.
  expectCleanFailure(run(runTool() + a + "--logit-bias 512=1"), "outside the vocabulary");
  expectCleanFailure(run(runTool() + a + "--logit-bias 12"), "expected ID=VALUE");
  expectCleanFailure(run(runTool() + a + "--logit-bias 12=abc"), "--logit-bias");
  expectCleanFailure(run(runTool() + a + "--logit-bias 12=nan"), "--logit-bias");
  expectCleanFailure(run(runTool() + a + "--logit-bias -3=1"), "--logit-bias");
  expectCleanFailure(run(runTool() + a + "--samplers top-k,bogus"), "unknown sampler 'bogus'");
  expectCleanFailure(run(runTool() + a + "--samplers top-k,top-k"), "listed twice");
  expectCleanFailure(run(runTool() + a + "--logprobs -1 --json"), "--logprobs");
  expectCleanFailure(run(runTool() + a + "--logprobs 3"), "--json");
  expectCleanFailure(run(runTool() + a + "--logprobs-mode sideways"), "--logprobs-mode");
  expectCleanFailure(run(runTool() + a + "--stop ''"), "--stop");
}

TEST(BadInput, QuillRunStopsWhenEveryTokenIsBanned) {
  // Every logit -inf after the processors: an error, not an arbitrary token.
  std::string bans;
  for (int id = 0; id < 512; ++id)
    bans += " --logit-bias " + std::to_string(id) + "=-inf";
  for (const char *temp : {"0", "0.8"})
    expectCleanFailure(run(runTool() + quote(smallArtifact()) + " -n 4 --temp " + temp + bans),
                       "no token to pick");
}

TEST(BadInput, QuillRunRejectsAMissingArtifact) {
  expectCleanFailure(run(runTool() + quote(tempDir() + "/nope.qm")), "cannot open artifact");
  expectCleanFailure(run(runTool()), "no artifact given");
}

TEST(BadInput, QuillRunRejectsAPromptLongerThanTheContext) {
  std::string longPrompt(200, 'x');
  expectCleanFailure(run(runTool() + quote(smallArtifact()) + " -p " + quote(longPrompt)),
                     "context holds 16");
}

TEST(BadInput, GenerationStopsAtTheContextEnd) {
  CommandResult r = run(runTool() + quote(smallArtifact()) + " -n 100 --temp 0 --json");
  ASSERT_EQ(r.exitCode, 0) << r.err;
  // Either the model ends its text, or the 16-position context runs out.
  bool eos = r.out.find("\"stop_reason\":\"eos\"") != std::string::npos;
  bool context = r.out.find("\"stop_reason\":\"context\"") != std::string::npos;
  EXPECT_TRUE(eos || context) << r.out;
}

TEST(BadInput, TruncatedArtifactsAreRejected) {
  std::string bytes = readFile(smallArtifact());
  ASSERT_GT(bytes.size(), 4096u);
  for (size_t cut : {size_t(0), size_t(10), size_t(63), size_t(64), size_t(200), size_t(1000),
                     bytes.size() / 2, bytes.size() - 1}) {
    std::string path = tempDir() + "/truncated.qm";
    writeBytes(path, bytes.substr(0, cut));
    CommandResult r = run(runTool() + quote(path) + " -n 2");
    EXPECT_EQ(r.exitCode, 1) << "cut at " << cut << ": " << r.err;
    EXPECT_NE(r.err.find("quill-run: "), std::string::npos) << r.err;
  }
}

TEST(BadInput, CorruptedArtifactsAreRejected) {
  std::string bytes = readFile(smallArtifact());
  // A bit flip anywhere (header, section table, config, tokenizer, kernels,
  // schedule, weights) is caught by the checks or the checksums.
  for (size_t at = 0; at < bytes.size(); at += bytes.size() / 97 + 1) {
    std::string corrupt = bytes;
    corrupt[at] = static_cast<char>(corrupt[at] ^ 0x10);
    if (corrupt == bytes)
      continue;
    std::string path = tempDir() + "/corrupt.qm";
    writeBytes(path, corrupt);
    CommandResult r = run(runTool() + quote(path) + " -n 2");
    // Padding between sections is not covered by a checksum; a flip there
    // is harmless, so only a crash or a silent wrong load is a failure.
    if (r.exitCode == 0)
      continue;
    EXPECT_EQ(r.exitCode, 1) << "flip at " << at << ": " << r.err;
    EXPECT_NE(r.err.find("quill-run: "), std::string::npos) << r.err;
  }
}

TEST(BadInput, WrongVersionArtifactIsRejected) {
  std::string bytes = readFile(smallArtifact());
  bytes[8] = 99; // The version field follows the 8-byte magic.
  std::string path = tempDir() + "/version.qm";
  writeBytes(path, bytes);
  expectCleanFailure(run(runTool() + quote(path)), "format version 99");
  writeBytes(path, "not an artifact at all, but long enough to hold a header........");
  expectCleanFailure(run(runTool() + quote(path)), "bad magic");
}

TEST(BadInput, QuillCompileRejectsBrokenModels) {
  ModelConfig c;
  c.dim = 64, c.hiddenDim = 160, c.nLayers = 1, c.nHeads = 4, c.nKvHeads = 2;
  c.vocabSize = 512, c.seqLen = 16;
  std::string model = synthesizeModel(c, "to-truncate");
  std::string bytes = readFile(model);
  std::string truncated = tempDir() + "/truncated.bin";
  writeBytes(truncated, bytes.substr(0, bytes.size() / 2));
  std::string tok = quote(syntheticTokenizer(512));
  std::string out = " -o " + quote(tempDir() + "/x.qm");
  expectCleanFailure(run(compileTool() + quote(truncated) + " --tokenizer " + tok + out),
                     "expected");
  expectCleanFailure(
      run(compileTool() + quote(tempDir() + "/missing.bin") + " --tokenizer " + tok + out),
      "missing.bin");
  expectCleanFailure(run(compileTool() + quote(model) + out), "--tokenizer");
  expectCleanFailure(run(compileTool() + quote(model) + " --tokenizer " + quote(truncated) + out),
                     "truncated.bin");
  expectCleanFailure(run(compileTool() + quote(model) + " --emit=bogus"), "unknown --emit stage");
  expectCleanFailure(run(compileTool() + quote(model) + " --tokenizer " + tok), "-o");
  expectCleanFailure(
      run(compileTool() + quote(model) + " --tokenizer " + tok + out + " --cpu not-a-cpu"),
      "--cpu");
}

TEST(BadInput, QuillSynthRejectsImpossibleShapesAndPeriods) {
  std::string synth = quote(tool("quill-synth")) + " -o " + quote(tempDir() + "/s.bin") + " ";
  expectCleanFailure(run(synth + "--shape 110m --period 0"), "--period expects a positive integer");
  expectCleanFailure(run(synth + "--shape 110m --period x"), "--period expects a positive integer");
  expectCleanFailure(run(synth + "--shape tiny --query-key-gain 0"),
                     "--query-key-gain expects a number from 0.25 to 16");
  expectCleanFailure(run(synth + "--shape tiny --query-key-gain 3x"),
                     "--query-key-gain expects a number from 0.25 to 16");
  expectCleanFailure(run(synth + "--shape 7b"), "unknown shape '7b'");
  expectCleanFailure(run(synth + "--shape tiny --heads 0"), "--heads expects a positive integer");
}

TEST(BadInput, FilesThatAreNotFilesAreRefusedBeforeAnyRead) {
  ModelConfig c = llamaShape(64, 160, 1, 4, 2, 512, 16);
  std::string model = quote(synthesizeModel(c, "not-files"));
  std::string out = " -o " + quote(tempDir() + "/x.qm");
  expectCleanFailure(run(compileTool() + model + " --tokenizer " + quote(tempDir()) + out),
                     "the tokenizer is not a regular file");
  // /dev/zero would otherwise be read without end.
  expectCleanFailure(run(compileTool() + model + " --tokenizer /dev/zero" + out),
                     "/dev/zero: the tokenizer is not a regular file");
  expectCleanFailure(run(compileTool() + "/dev/null" + out),
                     "/dev/null: not a regular file or a directory");
  expectCleanFailure(run(runTool() + quote(smallArtifact()) + " --batch-file /dev/zero"),
                     "/dev/zero: batch file is a device, not a file");
  expectCleanFailure(run(runTool() + quote(smallArtifact()) + " --batch-file " + quote(tempDir())),
                     "batch file is a directory, not a file");
  // Past the cap (a sparse file: its size is checked, nothing read).
  std::string huge = tempDir() + "/huge-prompts.txt";
  writeBytes(huge, "x");
  ASSERT_EQ(truncate(huge.c_str(), (64 << 20) + 1), 0);
  expectCleanFailure(run(runTool() + quote(smallArtifact()) + " --batch-file " + quote(huge)),
                     "batch file is 67108865 bytes, more than the limit of 67108864");
}

TEST(BadInput, AnOutputThatIsNotARegularFileIsLeftAlone) {
  // The artifact is finished beside the output and renamed onto it: onto a
  // pipe, a directory or a device (as root, -o /dev/null would have become
  // a regular file) that would replace it. They are refused in one line.
  ModelConfig c = llamaShape(64, 160, 1, 4, 2, 512, 16);
  std::string model = quote(synthesizeModel(c, "not-an-output"));
  std::string tokenizer = " --tokenizer " + quote(syntheticTokenizer(c.vocabSize));
  std::string fifo = tempDir() + "/output-fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  expectCleanFailure(run(compileTool() + model + tokenizer + " -o " + quote(fifo)),
                     "output-fifo: not a regular file");
  struct stat after;
  ASSERT_EQ(stat(fifo.c_str(), &after), 0);
  EXPECT_TRUE(S_ISFIFO(after.st_mode));
  std::string directory = tempDir() + "/output-directory";
  ASSERT_EQ(mkdir(directory.c_str(), 0700), 0);
  expectCleanFailure(run(compileTool() + model + tokenizer + " -o " + quote(directory)),
                     "output-directory: not a regular file");
  ASSERT_EQ(stat(directory.c_str(), &after), 0);
  EXPECT_TRUE(S_ISDIR(after.st_mode));
}

TEST(BadInput, ATokenizerMustHaveTheModelsVocabulary) {
  // A 1024-token tokenizer.bin on a 512-token model: its ids past 511 would
  // index past the embedding.
  ModelConfig c = llamaShape(64, 160, 1, 4, 2, 512, 16);
  std::string model = quote(synthesizeModel(c, "vocab-512"));
  std::string big = quote(syntheticTokenizer(1024));
  expectCleanFailure(
      run(compileTool() + model + " --tokenizer " + big + " -o " + quote(tempDir() + "/v.qm")),
      "the tokenizer has 1024 tokens, the model's vocabulary 512");
  // --info says so too, and fails.
  expectCleanFailure(run(compileTool() + "--info " + model + " --tokenizer " + big),
                     "the tokenizer has 1024 tokens");
}

TEST(BadInput, ImpossibleSizesAreRefusedUpFront) {
  // A context whose attention scores cannot be a kernel's temporaries:
  // one line naming the model, not a lowering failure.
  ModelConfig c = llamaShape(64, 160, 1, 8, 4, 512, 512000);
  std::string model = synthesizeModel(c, "long-context");
  std::string tok = quote(syntheticTokenizer(512));
  expectCleanFailure(
      run(compileTool() + quote(model) + " --tokenizer " + tok + " -o " +
          quote(tempDir() + "/l.qm")),
      model + ": context 512000 with 8 heads needs 16384000 bytes of attention scores per kernel "
              "call, more than the 4194304 Quill allows (at most 131072 positions for this model)");
  expectCleanFailure(run(compileTool() + quote(model) + " --emit=quill"), "context 512000");
  c.seqLen = 16;
  std::string small = quote(synthesizeModel(c, "short-context"));
  expectCleanFailure(run(compileTool() + small + " --prefill-chunk 1099511627776 --emit=quill"),
                     "--prefill-chunk must be a multiple of 4 from 0 to 4096");
  // The context of the small artifact is 16: a 100,000-token benchmark
  // does not fit (the default lengths shrink to fit instead).
  expectCleanFailure(run(runTool() + quote(smallArtifact()) + " --bench --bench-prompt 100000"),
                     "--bench-prompt 100000 and --bench-decode 128 do not fit the context of 16");
}

TEST(BadInput, AFileSizeLimitLeavesNoHalfWrittenArtifact) {
  // Under ulimit -f the write fails: one line, and neither the output nor
  // a temporary file is left behind.
  std::string dir = tempDir() + "/fsize";
  std::string output = dir + "/limited.qm";
  ASSERT_EQ(run("mkdir -p " + quote(dir)).exitCode, 0);
  // About 6 MB of weights: past a 2 MB limit, which the kernels' object
  // file and shared object stay under.
  std::string model = quote(synthesizeModel(llamaShape(128, 384, 4, 4, 2, 512, 16), "fsize"));
  std::string tok = quote(syntheticTokenizer(512));
  CommandResult limited = run("ulimit -f 2048; " + compileTool() + model + " --tokenizer " + tok +
                              " -o " + quote(output));
  expectCleanFailure(limited, "write failed: File too large");
  EXPECT_EQ(run("ls -A " + quote(dir)).out, "");
  // Without the limit the same command writes the artifact, and only it.
  ASSERT_EQ(run(compileTool() + model + " --tokenizer " + tok + " -o " + quote(output)).exitCode,
            0);
  EXPECT_EQ(run("ls -A " + quote(dir)).out, "limited.qm\n");
}

} // namespace
} // namespace quill::test
