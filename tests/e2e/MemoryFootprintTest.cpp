// What quill-run holds in memory: the artifact's weights once, whether
// copied into huge pages (the default: read with pread, the file's pages
// never mapped in) or read in place (--mmap), so a run's peak resident set stays
// within the weights, the KV cache and 200 MB (the bound), measured
// from the kernel's own accounting of the process (wait4's ru_maxrss).
#include "TestSupport.h"
#include "runtime/artifact/Artifact.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

// Under a sanitizer the resident set is mostly its shadow memory, not
// Quill's: the bound is checked in the plain build only.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define QUILL_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define QUILL_SANITIZED 1
#endif
#endif

namespace quill::test {
namespace {

/// Runs `argv` (no shell, output to /dev/null) and returns its exit code
/// and peak resident set in bytes.
std::pair<int, uint64_t> runMeasured(const std::vector<std::string> &argv) {
  std::vector<char *> args;
  for (const std::string &a : argv)
    args.push_back(const_cast<char *>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    int null = open("/dev/null", O_RDWR);
    dup2(null, 0), dup2(null, 1), dup2(null, 2);
    execv(args[0], args.data());
    _exit(127);
  }
  int status = 0;
  struct rusage usage = {};
  if (pid < 0 || wait4(pid, &status, 0, &usage) != pid)
    return {-1, 0};
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 128, uint64_t(usage.ru_maxrss) * 1024};
}

TEST(MemoryFootprint, PeakResidentSetIsTheWeightsTheCacheAnd200MB) {
#ifdef QUILL_SANITIZED
  GTEST_SKIP() << "a sanitizer's shadow memory is in the resident set; the plain build checks it";
#endif
  // 8 layers of width 512 over a 32000-word vocabulary with its own
  // classifier: 58M fp32 weights (233 MB), more than the allowance, so a
  // copy of them would not fit.
  ModelConfig c = llamaShape(512, 1376, 8, 8, 8, 32000, 256);
  c.sharedClassifier = false;
  std::string artifact = compileSynthetic(c, "footprint");
  ASSERT_FALSE(artifact.empty());
  auto opened = Artifact::open(artifact);
  ASSERT_TRUE(opened.isOk()) << opened.message();
  const uint64_t weights = opened->schedule().weightBytes;
  // K and V, f32, every layer and position.
  const uint64_t cache = 2ull * c.nLayers * c.seqLen * (c.dim / c.nHeads * c.nKvHeads) * 4;
  EXPECT_GT(weights, 230'000'000u);
  const uint64_t bound = weights + cache + 200'000'000u;
  for (std::string pages : {"", "--mmap"}) {
    std::vector<std::string> argv = {
        tool("quill-run"), artifact, "--prompt", "Once upon a time", "-n", "24", "--threads", "2",
        "--temp",          "0"};
    if (!pages.empty())
      argv.push_back(pages);
    else
      pages = "(weights copied)";
    auto [code, peak] = runMeasured(argv);
    ASSERT_EQ(code, 0) << pages;
    EXPECT_LE(peak, bound) << pages << ": peak RSS " << peak << " bytes for " << weights
                           << " of weights and " << cache << " of KV cache";
    // Every weight was read, so most of them are resident.
    EXPECT_GE(peak, weights / 2) << pages;
    std::printf("quill-run %s: peak RSS %.1f MB: %.1f MB of weights, %.1f MB of KV cache\n",
                pages.c_str(), peak / 1e6, weights / 1e6, cache / 1e6);
  }
}

} // namespace
} // namespace quill::test
