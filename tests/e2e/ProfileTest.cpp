// quill-run --profile: every launch of every kernel is counted, on the CPU
// and through the CUDA path (against the stand-in driver, whose events time
// each kernel at one microsecond). quill-run --bench --json: every figure and
// its fraction of the machine's probed ceilings.
#include "TestSupport.h"

#include "runtime/artifact/Artifact.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <fstream>
#include <map>
#include <optional>
#include <sstream>

namespace quill::test {
namespace {

/// Every kernel of the step schedule is there, launched the same whole
/// number of steps' worth of times (no prompt: no prefill), at least `steps`.
void expectWholeSteps(const Artifact &artifact, const std::map<std::string, ProfileRow> &rows,
                      int steps) {
  const Schedule &s = artifact.schedule();
  std::map<std::string, long long> perStep;
  for (const Dispatch &d : s.dispatches)
    ++perStep[s.kernels[d.kernel]];
  ASSERT_EQ(rows.size(), perStep.size());
  long long ran = -1;
  for (const auto &[kernel, count] : perStep) {
    auto it = rows.find(kernel);
    ASSERT_NE(it, rows.end()) << kernel << " is missing from the profile";
    EXPECT_EQ(it->second.launches % count, 0) << kernel;
    if (ran < 0)
      ran = it->second.launches / count;
    EXPECT_EQ(it->second.launches / count, ran) << kernel;
  }
  EXPECT_GE(ran, steps);
}

/// stories260K compiled into NAME.qm (with `flags`): nullopt where
/// ../shared lacks the model, "" where it did not compile.
std::optional<std::string> compileStories(const std::string &name, const std::string &flags = "") {
  std::string model = sharedModel("stories260K/stories260K.bin");
  if (model.empty())
    return std::nullopt;
  return compileArtifact(model, sharedModel("stories260K/tok512.bin"), name, flags);
}

/// Tests over stories260K compiled for this CPU (once for them all).
class StoriesOnCpu : public testing::Test {
protected:
  void SetUp() override {
    static const std::optional<std::string> compiled = compileStories("profile-cpu");
    if (!compiled)
      GTEST_SKIP() << "../shared/models/stories260K is absent";
    ASSERT_FALSE(compiled->empty());
    path = *compiled;
  }
  std::string path;
};

TEST_F(StoriesOnCpu, ProfileCountsEveryLaunchOfEveryKernel) {
  auto artifact = Artifact::open(path);
  ASSERT_TRUE(artifact.isOk()) << artifact.message();
  CommandResult r =
      run(quote(tool("quill-run")) + " " + quote(path) + " -n 8 --temp 0 --threads 1 --profile");
  ASSERT_EQ(r.exitCode, 0) << r.err;
  expectWholeSteps(*artifact, parseProfile(r.err), 8);
}

TEST_F(StoriesOnCpu, KernelsDirLoadsTheKernelsFromAFileProfilersCanRead) {
  // QUILL_KERNELS_DIR: the kernel library is written there and loaded from
  // that file (so `perf` can name its symbols); the run is the same.
  auto artifact = Artifact::open(path);
  ASSERT_TRUE(artifact.isOk()) << artifact.message();
  std::string dir = tempDir() + "/kernels-dir";
  ASSERT_EQ(run("rm -rf " + quote(dir) + " && mkdir -p " + quote(dir)).exitCode, 0);
  const std::string args = " " + quote(path) + " -n 16 --temp 0 --threads 1";
  CommandResult plain = run(quote(tool("quill-run")) + args);
  ASSERT_EQ(plain.exitCode, 0) << plain.err;
  CommandResult filed =
      run("QUILL_KERNELS_DIR=" + quote(dir) + " " + quote(tool("quill-run")) + args);
  ASSERT_EQ(filed.exitCode, 0) << filed.err;
  EXPECT_EQ(filed.out, plain.out);
  // One quill-kernels-PID.so: an ELF file naming every kernel it runs.
  CommandResult listing = run("ls " + quote(dir));
  ASSERT_EQ(listing.exitCode, 0);
  std::string name = listing.out.substr(0, listing.out.find('\n'));
  EXPECT_EQ(name.rfind("quill-kernels-", 0), 0u) << name;
  std::string library = readFile(dir + "/" + name);
  ASSERT_GT(library.size(), 4u);
  EXPECT_EQ(library.substr(0, 4), "\x7f"
                                  "ELF");
  for (const std::string &kernel : artifact->schedule().kernels)
    EXPECT_NE(library.find(kernel), std::string::npos) << kernel;
  // A directory that cannot be written: one line, a nonzero exit.
  expectCleanFailure(run("QUILL_KERNELS_DIR=/nonexistent/dir " + quote(tool("quill-run")) + args),
                     "cannot write the kernel library");
}

TEST(Profile, CudaTimesEveryLaunchBetweenEvents) {
  std::optional<std::string> compiled = compileStories("profile-cuda", "--target=cuda");
  if (!compiled)
    GTEST_SKIP() << "../shared/models/stories260K is absent";
  const std::string path = *compiled;
  ASSERT_FALSE(path.empty());
  auto artifact = Artifact::open(path);
  ASSERT_TRUE(artifact.isOk()) << artifact.message();
  CommandResult r = run("QUILL_CUDA_DRIVER=" + quote(QUILL_MOCK_CUDA) + " MOCK_CUDA_REPORT=1 " +
                        quote(tool("quill-run")) + " " + quote(path) +
                        " --device cuda -n 8 --temp 0 --profile --verbose");
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.err.find("launched one by one, each timed"), std::string::npos) << r.err;
  std::map<std::string, ProfileRow> rows = parseProfile(r.err);
  expectWholeSteps(*artifact, rows, 8);
  // One microsecond per launch over the bindings' bytes.
  for (const auto &[kernel, row] : rows)
    EXPECT_GT(row.gbPerSecond, 0) << kernel;
  // Events are freed with the device.
  EXPECT_NE(r.err.find(" 0 live allocations, 0 failed calls"), std::string::npos) << r.err;
}

TEST(Bench, JsonSetsPrefillAgainstTheFmaAndInt8DotPeaks) {
  ModelConfig c = llamaShape(64, 172, 2, 4, 2, 320, 64);
  std::string path = compileSynthetic(c, "bench-json", "--quantize=q8_0");
  ASSERT_FALSE(path.empty());
  CommandResult r = run(quote(tool("quill-run")) + " " + quote(path) +
                        " --bench --json --bench-prompt 16 --bench-decode 8 --threads 1");
  ASSERT_EQ(r.exitCode, 0) << r.err;
  auto json = nlohmann::json::parse(r.out, nullptr, /*allow_exceptions=*/false);
  ASSERT_TRUE(json.is_object()) << r.out;
  // Q8_0 holds most bytes; the rows of 172 that are not whole blocks fall
  // back to F16 (as llama.cpp's do), the norms are f32.
  EXPECT_EQ(json["weight_type"], "q8_0") << r.out;
  // Copied into memory (not asked --mmap); this model's weights are under
  // 2 MiB, too few for a huge page.
  EXPECT_EQ(json["weight_pages"], "copied") << r.out;
  EXPECT_EQ(json["weight_bytes_in_huge_pages"], 0) << r.out;
  const auto &types = json["weight_bytes_by_type"];
  ASSERT_TRUE(types.is_object()) << r.out;
  for (const auto &[type, bytes] : types.items())
    EXPECT_TRUE(type == "q8_0" || type == "f16" || type == "f32") << type;
  EXPECT_GT(types.value("q8_0", 0.0), types.value("f16", 0.0)) << r.out;
  EXPECT_GT(types.value("f32", 0.0), 0) << r.out;
  const double prefill = json["prefill_tokens_per_s"], flops = json["prefill_flops_per_token"];
  const double fma = json["fma_gflop_s"];
  ASSERT_GT(fma, 0);
  EXPECT_NEAR(json["prefill_fraction_of_fma_peak"].get<double>(), prefill * flops / (fma * 1e9),
              1e-3 * prefill * flops / (fma * 1e9));
  if (!cpuHasFlag("avx2")) {
    EXPECT_TRUE(json["int8_dot_gop_s"].is_null()) << r.out;
    EXPECT_TRUE(json["prefill_fraction_of_int8_dot_peak"].is_null()) << r.out;
    return;
  }
  const double int8 = json["int8_dot_gop_s"];
  // vpdpbusd does 4 byte products per 32-bit lane where an FMA does one
  // float product, AVX2's vpmaddubsw 2 per 16-bit lane: at equal
  // instruction rates, 4x the ops. Zen 3 issues vpmaddubsw on half as many
  // pipes as its FMAs (its probe reads 1.4-1.85x the FMA peak), so without
  // VNNI the test asks only that the int8 peak pass the FMA one.
  const bool vnni = cpuHasFlag("avx512_vnni") || cpuHasFlag("avx_vnni");
  EXPECT_GT(int8, (vnni ? 1.5 : 1.1) * fma) << r.out;
  EXPECT_NEAR(json["prefill_fraction_of_int8_dot_peak"].get<double>(),
              prefill * flops / (int8 * 1e9), 1e-3 * prefill * flops / (int8 * 1e9));
  // The text report names it too.
  CommandResult text = run(quote(tool("quill-run")) + " " + quote(path) +
                           " --bench --bench-prompt 16 --bench-decode 8 --threads 1");
  ASSERT_EQ(text.exitCode, 0) << text.err;
  EXPECT_NE(text.out.find("int8 dot-product peak"), std::string::npos) << text.out;
  EXPECT_EQ(text.out.rfind("weights: q8_0 (", 0), 0u) << text.out;
  EXPECT_NE(text.out.find("% of the int8 peak"), std::string::npos) << text.out;
}

} // namespace
} // namespace quill::test
