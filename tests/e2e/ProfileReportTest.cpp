// quill-run --profile --report: the kernels as they ran, on a roofline.
// Each kernel's FLOPs must be those of its shapes at the positions it read
// (the logits' 2 * vocab * dim per step; attention's 4 * dim per cached
// position and layer, summed over the steps), its rates its work over its
// time, its bound the roofline's; and the page must open in a real browser.
#include "BrowserCheck.h"
#include "TestSupport.h"

#include "runtime/artifact/Artifact.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <map>

namespace quill::test {
namespace {

namespace fs = std::filesystem;

/// stories260K: dim 64, 5 layers, vocab 512.
constexpr double kDim = 64, kLayers = 5, kVocab = 512;

/// A profiled run of stories260K with its report, made once; empty when
/// the model is absent.
struct ProfiledRun {
  std::string artifact, dir;
  CommandResult result;
};
const ProfiledRun &storiesRun() {
  static ProfiledRun profiled = [] {
    ProfiledRun p;
    std::string model = sharedModel("stories260K/stories260K.bin");
    if (model.empty())
      return p;
    p.artifact = compileArtifact(model, sharedModel("stories260K/tok512.bin"), "profile-report");
    p.dir = tempDir() + "/profile-report";
    fs::remove_all(p.dir);
    // No prompt: decode steps only, from position 0.
    p.result = run(quote(tool("quill-run")) + " " + quote(p.artifact) +
                   " -n 24 --temp 0 --ignore-eos --threads 1 --profile --report " + quote(p.dir));
    return p;
  }();
  return profiled;
}

nlohmann::json readJson(const std::string &path) {
  return nlohmann::json::parse(readFile(path), nullptr, /*allow_exceptions=*/false);
}

TEST(ProfileReport, DecodeKernelsCarryTheWorkOfTheirShapesAtThePositionsRead) {
  const ProfiledRun &p = storiesRun();
  if (p.artifact.empty())
    GTEST_SKIP() << "../shared/models/stories260K is absent";
  ASSERT_EQ(p.result.exitCode, 0) << p.result.err;
  auto artifact = Artifact::open(p.artifact);
  ASSERT_TRUE(artifact.isOk()) << artifact.message();
  nlohmann::json table = readJson(p.dir + "/kernels.json");
  ASSERT_TRUE(table.is_object());

  // Every kernel of the decode schedule, as often as the schedule says.
  std::map<std::string, long long> perStep;
  const Schedule &s = artifact->schedule();
  for (const Dispatch &d : s.dispatches)
    ++perStep[s.kernels[d.kernel]];
  double steps = 0;
  for (const auto &row : table["kernels"])
    if (row["op"] == "logits")
      steps = row["launches"];
  ASSERT_GE(steps, 24);
  std::map<std::string, long long> listed;
  for (const auto &row : table["kernels"]) {
    EXPECT_EQ(row["step"], "step") << row; // No prompt: no prefill.
    listed[row["kernel"]] = row["launches"];
  }
  for (auto &[kernel, count] : perStep)
    count *= static_cast<long long>(steps);
  EXPECT_EQ(listed, perStep);

  // Step p (from 0) reads p + 1 cached positions: attention's score and
  // weighted sum are 2 * dim FLOPs each per position, in every layer.
  const double attentionFlops = kLayers * 4 * kDim * steps * (steps + 1) / 2;
  double attentionSeen = 0;
  bool sawLogits = false;
  const auto &c = table["ceilings"];
  const double bandwidth = c["bandwidth_gbs"], fp32 = c["fp32_gflops"];
  EXPECT_GT(bandwidth, 0);
  EXPECT_GT(fp32, 0);
  for (const auto &row : table["kernels"]) {
    const std::string op = row["op"];
    const double flops = row["flops"], bytes = row["bytes"], seconds = row["seconds"];
    if (op == "logits") {
      sawLogits = true;
      EXPECT_DOUBLE_EQ(flops, steps * 2 * kVocab * kDim);
      // Its f32 weights whole each step, and little else.
      EXPECT_GE(bytes, steps * kVocab * kDim * 4);
      EXPECT_LT(bytes, steps * kVocab * kDim * 4 * 1.1);
      EXPECT_EQ(row["limit"], "memory");
    }
    if (op == "attention" || op == "attention_partial")
      attentionSeen += flops;
    // The rates are the work over the measured time; the bound the
    // roofline's at the kernel's intensity.
    ASSERT_GT(seconds, 0) << row;
    EXPECT_NEAR(row["gflops"].get<double>(), flops / seconds / 1e9, 1e-9 * flops / seconds);
    EXPECT_NEAR(row["gbs"].get<double>(), bytes / seconds / 1e9, 1e-9 * bytes / seconds);
    if (flops > 0) {
      const double intensity = flops / bytes;
      EXPECT_NEAR(row["intensity"].get<double>(), intensity, 1e-9 * intensity);
      EXPECT_NEAR(row["bound_gflops"].get<double>(), std::min(fp32, bandwidth * intensity),
                  1e-6 * fp32);
      EXPECT_NEAR(row["of_bound"].get<double>(),
                  row["gflops"].get<double>() / row["bound_gflops"].get<double>(), 1e-9);
    }
  }
  EXPECT_TRUE(sawLogits);
  EXPECT_DOUBLE_EQ(attentionSeen, attentionFlops);

  // The text profile on stderr has the same rates.
  for (const auto &[kernel, row] : parseProfile(p.result.err))
    EXPECT_GE(row.gflopsPerSecond, 0) << kernel << " has no FLOP count";
}

/// The kernels of a profiled run of `flags`, from its report's JSON.
nlohmann::json profiledKernels(const std::string &artifact, const std::string &name,
                               const std::string &flags) {
  const std::string dir = tempDir() + "/" + name;
  fs::remove_all(dir);
  CommandResult r = run(quote(tool("quill-run")) + " " + quote(artifact) + " " + flags +
                        " --threads 1 --profile --report " + quote(dir));
  EXPECT_EQ(r.exitCode, 0) << r.err;
  nlohmann::json table = readJson(dir + "/kernels.json");
  return table.is_object() ? table["kernels"] : nlohmann::json::array();
}

TEST(ProfileReport, PrefillAndBatchStepsAreCountedAsTheyRan) {
  const ProfiledRun &p = storiesRun();
  if (p.artifact.empty())
    GTEST_SKIP() << "../shared/models/stories260K is absent";
  auto artifact = Artifact::open(p.artifact);
  ASSERT_TRUE(artifact.isOk()) << artifact.message();
  const double chunk = artifact->prefillSchedule()->tokens;
  // A prompt of several chunks, each at the position the one before ended;
  // row i of a chunk at position q reads q + i + 1 positions.
  std::string prompt;
  while (prompt.size() < 8 * chunk)
    prompt += "Once upon a time there was a little girl named Lily. ";
  bool sawAttention = false, sawLogits = false;
  for (const auto &row : profiledKernels(p.artifact, "profile-report-prefill",
                                         "-p " + quote(prompt) + " -n 2 --temp 0")) {
    if (row["step"] != "prefill")
      continue;
    if (row["op"] == "attention") {
      sawAttention = true;
      const double chunks = row["launches"].get<double>() / kLayers;
      EXPECT_GE(chunks, 2);
      double positions = 0;
      for (double c = 0; c < chunks; ++c)
        positions += c * chunk * chunk + chunk * (chunk + 1) / 2;
      EXPECT_DOUBLE_EQ(row["flops"].get<double>(), kLayers * 4 * kDim * positions);
    }
    if (row["op"] == "logits") {
      // Only the chunk's last row wants logits.
      sawLogits = true;
      EXPECT_DOUBLE_EQ(row["flops"].get<double>(),
                       row["launches"].get<double>() * 2 * kVocab * kDim);
    }
  }
  EXPECT_TRUE(sawAttention);
  EXPECT_TRUE(sawLogits);

  // Three samples of one prompt run as batch steps of at most 3 live rows,
  // of which only the decoding ones want logits: the work scales to them.
  const BatchLayout &layout = artifact->batchSchedule()->layout;
  ASSERT_LT(3, layout.rows) << "the test needs fewer live rows than compiled ones";
  bool sawBatch = false;
  for (const auto &row : profiledKernels(p.artifact, "profile-report-batch",
                                         "-p 'Once upon a time' -n 8 --n-samples 3 --seed 1 "
                                         "--ignore-eos")) {
    EXPECT_EQ(row["step"], "batch") << row;
    if (row["op"] != "logits")
      continue;
    sawBatch = true;
    const double launches = row["launches"];
    EXPECT_GT(row["flops"].get<double>(), launches * 2 * kVocab * kDim);
    EXPECT_LE(row["flops"].get<double>(), launches * 3 * 2 * kVocab * kDim);
  }
  EXPECT_TRUE(sawBatch);
}

TEST(ProfileReport, GpuKernelsAreHeldToTheGpusOwnBandwidth) {
  std::string model = sharedModel("stories260K/stories260K.bin");
  if (model.empty())
    GTEST_SKIP() << "../shared/models/stories260K is absent";
  std::string path = compileArtifact(model, sharedModel("stories260K/tok512.bin"),
                                     "profile-report-cuda", "--target=cuda");
  ASSERT_FALSE(path.empty());
  // The stand-in driver's events time each launch at one microsecond; its
  // memory is the host's, which the bandwidth probe copies.
  const std::string dir = tempDir() + "/profile-report-cuda";
  fs::remove_all(dir);
  CommandResult r = run(
      "QUILL_CUDA_DRIVER=" + quote(QUILL_MOCK_CUDA) + " " + quote(tool("quill-run")) + " " +
      quote(path) + " --device cuda -n 8 --temp 0 --ignore-eos --profile --report " + quote(dir));
  ASSERT_EQ(r.exitCode, 0) << r.err;
  nlohmann::json table = readJson(dir + "/kernels.json");
  ASSERT_TRUE(table.is_object());
  const auto &c = table["ceilings"];
  EXPECT_GT(c["bandwidth_gbs"].get<double>(), 0);
  EXPECT_EQ(c["fp32_gflops"].get<double>(), 0) << "no FLOP peak is probed on a GPU";
  EXPECT_NE(c["source"].get<std::string>().find("cuda device's own memory bandwidth"),
            std::string::npos);
  bool sawLogits = false;
  for (const auto &row : table["kernels"]) {
    EXPECT_EQ(row["limit"], "memory") << row;
    if (row["op"] == "logits") {
      sawLogits = true;
      EXPECT_DOUBLE_EQ(row["flops"].get<double>(),
                       row["launches"].get<double>() * 2 * kVocab * kDim);
      EXPECT_NEAR(row["seconds"].get<double>(), row["launches"].get<double>() * 1e-6, 1e-9);
    }
  }
  EXPECT_TRUE(sawLogits);
}

TEST(ProfileReport, OpensInHeadlessChromiumWithoutConsoleErrorsAndDrawsSomething) {
  const ProfiledRun &p = storiesRun();
  if (p.artifact.empty())
    GTEST_SKIP() << "../shared/models/stories260K is absent";
  if (run("command -v chromium").exitCode != 0)
    GTEST_SKIP() << "chromium is absent (scripts/setup.sh installs it)";
  ASSERT_EQ(p.result.exitCode, 0) << p.result.err;
  const std::string page = readFile(p.dir + "/index.html");
  EXPECT_NE(page.find("<svg"), std::string::npos);
  EXPECT_EQ(page.find("http://"), page.find("http://www.w3.org/2000/svg")) << "no network";
  expectOpensAndDraws(fs::absolute(p.dir + "/index.html").string(), "profile-report-page");
}

TEST(ProfileReport, BadFlagsAreOneLine) {
  const ProfiledRun &p = storiesRun();
  if (p.artifact.empty())
    GTEST_SKIP() << "../shared/models/stories260K is absent";
  CommandResult r = run(quote(tool("quill-run")) + " " + quote(p.artifact) + " -n 2 --report " +
                        quote(tempDir() + "/profile-report-unused"));
  expectCleanFailure(r, "--report draws the profiled kernels: it needs --profile");
  r = run(quote(tool("quill-run")) + " " + quote(p.artifact) +
          " -n 2 --profile --report /proc/quill-profile-report");
  expectCleanFailure(r, "/proc/quill-profile-report: cannot write the report there");
  r = run(quote(tool("quill-run")) + " " + quote(p.artifact) + " -n 2 --profile --report ''");
  expectCleanFailure(r, "invalid --report '': expected a directory");
}

} // namespace
} // namespace quill::test
