// Faults from outside: SIGINT during generation, and an address space
// (ulimit -v) too small for the artifact. (A file-size limit during
// quill-compile is in BadInputTest.)
#include "TestSupport.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <fstream>

namespace quill::test {
namespace {

/// A long context (65,536 positions, 64 MiB of KV cache) of a tiny model:
/// generation runs for seconds, long enough to interrupt.
const std::string &longArtifact() {
  static std::string path = compileSynthetic(llamaShape(64, 128, 2, 2, 2, 512, 65536), "long");
  return path;
}

/// Starts quill-run FLAGS in the background, waits until WATCHED ("out"
/// or "err") has output, sends SIGINT and prints the exit code.
CommandResult interruptAfterOutput(const std::string &flags, const std::string &watched) {
  std::string out = tempDir() + "/interrupted.out", err = tempDir() + "/interrupted.err";
  std::string script = tempDir() + "/interrupt.sh";
  std::ofstream(script) << quote(tool("quill-run")) << " " << quote(longArtifact()) << " " << flags
                        << " > " << quote(out) << " 2> " << quote(err) << " &\n"
                        << "pid=$!\n"
                        << "for i in $(seq 400); do [ -s " << quote(watched == "out" ? out : err)
                        << " ] && break; sleep 0.05; done\n"
                        << "sleep 0.3; kill -INT $pid\n"
                        // A run that missed the signal fails in a minute, not
                        // after its 60,000 tokens.
                        << "( sleep 60; kill -KILL $pid ) > /dev/null 2>&1 & watchdog=$!\n"
                        << "wait $pid; code=$?; kill $watchdog 2> /dev/null; echo $code\n";
  CommandResult r = run("bash " + quote(script));
  CommandResult result;
  result.exitCode = std::atoi(r.out.c_str());
  result.out = readFile(out);
  result.err = readFile(err);
  return result;
}

/// Never the end token (nor BOS, which ends llama2.c-style text): the run
/// goes on until interrupted or the context ends.
const char *kEndless = " -n 60000 --temp 1 --seed 3 --threads 1 --logit-bias 1=-inf "
                       "--logit-bias 2=-inf";

TEST(Faults, SigintStopsAtTheNextTokenAndPrintsTheText) {
  ASSERT_FALSE(longArtifact().empty());
  CommandResult r = interruptAfterOutput(kEndless, "out");
  EXPECT_EQ(r.exitCode, 130) << r.err;
  EXPECT_FALSE(r.out.empty());
  // One stop line: interrupted after some tokens, fewer than the budget.
  EXPECT_EQ(r.err.rfind("[stop: interrupted after ", 0), 0u) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
  int tokens = std::atoi(r.err.c_str() + std::strlen("[stop: interrupted after "));
  EXPECT_GT(tokens, 0);
  EXPECT_LT(tokens, 60000);
}

TEST(Faults, SigintEndsTheJsonWithStopReasonInterrupted) {
  ASSERT_FALSE(longArtifact().empty());
  // --verbose writes to stderr before generation starts: the signal comes
  // while tokens are being generated.
  CommandResult r = interruptAfterOutput(std::string(kEndless) + " --json --verbose", "err");
  EXPECT_EQ(r.exitCode, 130) << r.err;
  EXPECT_NE(r.out.find("\"stop_reason\":\"interrupted\""), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("\"tokens\":[]"), std::string::npos) << "some tokens came first";
  EXPECT_EQ(r.out.back(), '\n');
}

TEST(Faults, SigintStopsSamplesBeamsAndBatchFilesAtTheNextToken) {
  ASSERT_FALSE(longArtifact().empty());
  // Through the batch scheduler: every sequence stops before its next
  // token, a prompt that had not started yet ends with none, and each is
  // printed with stop_reason interrupted (--verbose writes before the run).
  std::string prompts = tempDir() + "/interrupted-prompts.txt";
  std::ofstream(prompts) << "one\ntwo\nthree\n";
  struct Mode {
    std::string flags;
    int interrupted; ///< stop_reason entries expected, at least.
  };
  // Each mode's --verbose line comes before its run, after quill-run
  // catches SIGINT (a background job of a script starts with SIGINT
  // ignored, so a signal before then would be lost). The first result's
  // fields, then each sample's (2), or each hypothesis's (1 or 2); one per
  // prompt.
  for (const Mode &mode : {Mode{"--n-samples 2", 3}, Mode{"--beams 2", 2},
                           Mode{"--batch-file " + quote(prompts), 3}}) {
    CommandResult r =
        interruptAfterOutput(std::string(kEndless) + " --json --verbose " + mode.flags, "err");
    EXPECT_EQ(r.exitCode, 130) << mode.flags << ": " << r.err;
    int count = 0;
    for (size_t at = r.out.find("\"stop_reason\":\"interrupted\""); at != std::string::npos;
         at = r.out.find("\"stop_reason\":\"interrupted\"", at + 1))
      ++count;
    EXPECT_GE(count, mode.interrupted) << mode.flags << ": " << r.out.substr(0, 400);
    EXPECT_EQ(r.out.find("\"stop_reason\":\"length\""), std::string::npos) << mode.flags;
    // Stopped within moments of the signal, far short of the 60,000 tokens.
    EXPECT_LT(r.out.size(), size_t(2) << 20) << mode.flags;
  }
}

TEST(Faults, AnAddressSpaceTooSmallFailsInOneLine) {
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
  // ASan and TSan reserve terabytes of shadow address space at start, so no
  // instrumented quill-run starts under any ulimit -v near its needs.
  GTEST_SKIP() << "quill-run is built with a sanitizer, which cannot start under ulimit -v";
#endif
#endif
  ASSERT_FALSE(longArtifact().empty());
  // The artifact file (weights and all, mapped) plus its 64 MiB KV cache.
  const long needKiB = long(readFile(longArtifact()).size() / 1024) + 65536;
  std::string command =
      quote(tool("quill-run")) + " " + quote(longArtifact()) + " -n 8 --temp 0 --threads 1";
  // Just above: the program itself takes a few MB more.
  CommandResult enough = run("ulimit -v " + std::to_string(needKiB + 32 * 1024) + "; " + command);
  EXPECT_EQ(enough.exitCode, 0) << enough.err;
  EXPECT_NE(enough.err.find("[stop: length after 8 tokens"), std::string::npos) << enough.err;
  for (long limit : {needKiB, needKiB / 2, 20 * 1024L}) {
    CommandResult tight = run("ulimit -v " + std::to_string(limit) + "; " + command);
    expectCleanFailure(tight, "memory");
  }
}

} // namespace
} // namespace quill::test
