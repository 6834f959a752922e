// quill-compile --report: the lowering as one HTML page. Its pass table
// must be the passes --dump-ir-after-all dumps, each with the lines `diff`
// finds between the dumps around it; its kernels those of the artifact
// with FLOPs from the shapes; and the page must open in a real browser
// (Debian's chromium, headless) without console errors and draw something.
#include "BrowserCheck.h"
#include "TestSupport.h"

#include "runtime/artifact/Artifact.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace quill::test {
namespace {

namespace fs = std::filesystem;

/// `file` with the digits of every %value, ^block and #alias name dropped,
/// by perl: the report compares IR lines so, as value numbers shift after
/// any inserted op. The copy's path.
std::string withoutNameNumbers(const std::string &file) {
  const std::string copy = file + ".names";
  CommandResult r = run("perl -pe 's/([%^#])([A-Za-z0-9_\\$.\\-]*)/$1 . ($2 =~ tr#0-9##dr)/ge' " +
                        quote(file) + " > " + quote(copy));
  EXPECT_EQ(r.exitCode, 0) << r.err;
  return copy;
}

/// Lines `diff --minimal` removes and adds between two IR files, compared
/// without the numbers in their names.
std::pair<size_t, size_t> diffCounts(const std::string &before, const std::string &after) {
  CommandResult r = run("diff --minimal " + quote(withoutNameNumbers(before)) + " " +
                        quote(withoutNameNumbers(after)));
  std::istringstream lines(r.out);
  std::string line;
  size_t removed = 0, added = 0;
  while (std::getline(lines, line)) {
    removed += line.rfind("< ", 0) == 0 || line == "<";
    added += line.rfind("> ", 0) == 0 || line == ">";
  }
  return {removed, added};
}

/// The report of stories260K, compiled once for the tests below; empty
/// when the model is absent.
struct Report {
  std::string dir, dumpDir, artifact;
};
const Report &storiesReport() {
  static Report report = [] {
    Report r;
    std::string model = sharedModel("stories260K/stories260K.bin");
    if (model.empty())
      return r;
    r.dir = tempDir() + "/report-stories";
    r.dumpDir = tempDir() + "/report-stories-dump";
    fs::remove_all(r.dir);
    fs::remove_all(r.dumpDir);
    r.artifact =
        compileArtifact(model, sharedModel("stories260K/tok512.bin"), "report-stories",
                        "--report " + quote(r.dir) + " --dump-ir-after-all " + quote(r.dumpDir));
    return r;
  }();
  return report;
}

TEST(Report, PassTableIsEveryDumpedPassWithItsDiff) {
  const Report &report = storiesReport();
  if (report.dir.empty())
    GTEST_SKIP() << "../shared/models/stories260K is absent";
  ASSERT_FALSE(report.artifact.empty());
  auto passes = nlohmann::json::parse(readFile(report.dir + "/passes.json"));
  std::vector<std::string> dumps;
  for (const auto &entry : fs::directory_iterator(report.dumpDir))
    if (entry.path().extension() == ".mlir")
      dumps.push_back(entry.path().string());
  std::sort(dumps.begin(), dumps.end());
  // The first dump is the imported module, then one per top-level pass.
  ASSERT_EQ(passes.size() + 1, dumps.size());
  std::vector<std::string> stages;
  size_t minimal = 0;
  for (size_t i = 0; i < passes.size(); ++i) {
    const auto &pass = passes[i];
    // The dump is named after the pass's pipeline up to its options, in
    // the characters a file name keeps.
    auto letters = [](const std::string &text) {
      std::string kept;
      for (char c : text)
        if (std::isalnum(static_cast<unsigned char>(c)))
          kept += c;
      return kept;
    };
    std::string name = fs::path(dumps[i + 1]).filename().string().substr(4);
    name = letters(name.substr(0, name.size() - 5));
    std::string pipeline = pass["pipeline"];
    EXPECT_EQ(letters(pipeline).rfind(name, 0), 0u)
        << "pass " << i << ": " << pipeline << " dumped as " << name;
    // A shortest edit script matches diff's, but for the kept lines whose
    // names do not rename one to one (operand swaps), which the report
    // counts as one removed and one added line each; a rewrite (past 1000
    // edits) gives its changed middle whole, so it is at least as long.
    auto [removed, added] = diffCounts(dumps[i], dumps[i + 1]);
    if (pass["minimal"].get<bool>()) {
      ++minimal;
      EXPECT_GE(pass["removed"].get<size_t>(), removed) << pipeline;
      EXPECT_GE(pass["added"].get<size_t>(), added) << pipeline;
      EXPECT_EQ(pass["removed"].get<size_t>() - removed, pass["added"].get<size_t>() - added)
          << pipeline;
    } else {
      EXPECT_GT(removed + added, 1000u) << pipeline;
      EXPECT_GE(pass["removed"].get<size_t>(), removed) << pipeline;
      EXPECT_GE(pass["added"].get<size_t>(), added) << pipeline;
      EXPECT_EQ(pass["removed"].get<size_t>() - removed, pass["added"].get<size_t>() - added)
          << pipeline;
    }
    EXPECT_GE(pass["seconds"].get<double>(), 0.0);
    if (stages.empty() || stages.back() != pass["stage"])
      stages.push_back(pass["stage"]);
  }
  EXPECT_GE(minimal, passes.size() / 2);
  // The stages run in the CPU target's order, each once.
  std::vector<std::string> expected = {"quill", "kernels", "linalg", "loops", "llvm-dialect"};
  std::vector<std::string> inOrder;
  for (const std::string &stage : expected)
    if (std::find(stages.begin(), stages.end(), stage) != stages.end())
      inOrder.push_back(stage);
  EXPECT_EQ(stages, inOrder);
  EXPECT_GE(stages.size(), 4u);

  // The page lists them too, with their diffs, and no resource from elsewhere.
  std::string page = readFile(report.dir + "/index.html");
  EXPECT_EQ(page.rfind("<!DOCTYPE html>", 0), 0u);
  for (const auto &pass : passes) {
    std::string pipeline = pass["pipeline"];
    EXPECT_NE(page.find(pipeline.substr(0, pipeline.find('{'))), std::string::npos) << pipeline;
  }
  EXPECT_NE(page.find("<span class=\"add\">"), std::string::npos);
  EXPECT_EQ(page.find("<script"), std::string::npos);
  EXPECT_EQ(page.find("<link"), std::string::npos);
  EXPECT_EQ(page.find("src="), std::string::npos);
  EXPECT_EQ(page.find("url("), std::string::npos);
  // Every target's stages, the graph drawn by Graphviz, the roofline.
  EXPECT_NE(page.find("<b>cuda</b>"), std::string::npos);
  EXPECT_NE(page.find("<b>ptx</b>"), std::string::npos);
  EXPECT_NE(page.find("class=\"graph\"><svg"), std::string::npos)
      << "Graphviz's dot (setup installs graphviz) drew no SVG";
  EXPECT_NE(page.find("Roofline of"), std::string::npos);
}

TEST(Report, KernelTableIsTheArtifactsKernelsWithTheirWork) {
  const Report &report = storiesReport();
  if (report.dir.empty())
    GTEST_SKIP() << "../shared/models/stories260K is absent";
  auto artifact = Artifact::open(report.artifact);
  ASSERT_TRUE(artifact.isOk()) << artifact.message();
  auto table = nlohmann::json::parse(readFile(report.dir + "/kernels.json"));
  // Launches per step and kernel, as the schedules hold them.
  std::map<std::pair<std::string, std::string>, long long> launches;
  auto count = [&](const std::string &step, const Schedule &schedule) {
    for (const auto &d : schedule.dispatches)
      ++launches[{step, schedule.kernels[d.kernel]}];
  };
  count("step", artifact->schedule());
  count("prefill", *artifact->prefillSchedule());
  count("batch", artifact->batchSchedule()->schedule);
  std::map<std::pair<std::string, std::string>, long long> listed;
  for (const auto &row : table["kernels"])
    listed[{row["step"], row["kernel"]}] = row["launches"];
  EXPECT_EQ(listed, launches);

  // The ceilings were probed, and each bound is the roofline's.
  const auto &c = table["ceilings"];
  const double bandwidth = c["bandwidth_gbs"], fp32 = c["fp32_gflops"], int8 = c["int8_gops"];
  EXPECT_GT(bandwidth, 0);
  EXPECT_GT(fp32, 0);
  bool sawLogits = false;
  for (const auto &row : table["kernels"]) {
    const double intensity = row["intensity"];
    EXPECT_NEAR(intensity, row["flops"].get<double>() / row["bytes"].get<double>(), 1e-6);
    const double peak = row["limit"] == "int8 compute" ? int8 : fp32;
    EXPECT_NEAR(row["bound_gflops"].get<double>(), std::min(peak, bandwidth * intensity),
                1e-3 * peak);
    // The decode step's logits: 2 FLOPs per weight of 512 x 64, which it
    // reads whole (f32), with little else.
    if (row["step"] == "step" && row["op"] == "logits") {
      sawLogits = true;
      EXPECT_EQ(row["flops"].get<double>(), 2.0 * 512 * 64);
      EXPECT_GE(row["bytes"].get<double>(), 512.0 * 64 * 4);
      EXPECT_LT(row["bytes"].get<double>(), 512.0 * 64 * 4 * 1.1);
      EXPECT_EQ(row["limit"], "memory");
    }
  }
  EXPECT_TRUE(sawLogits);
}

TEST(Report, OpensInHeadlessChromiumWithoutConsoleErrorsAndDrawsSomething) {
  const Report &report = storiesReport();
  if (report.dir.empty())
    GTEST_SKIP() << "../shared/models/stories260K is absent";
  if (run("command -v chromium").exitCode != 0)
    GTEST_SKIP() << "chromium is absent (scripts/setup.sh installs it)";
  expectOpensAndDraws(fs::absolute(report.dir + "/index.html").string(), "report-page");
}

TEST(Report, CudaKernelsSitUnderTheDatasheetCeilingsOfTheNamedPart) {
  std::string model = sharedModel("stories260K/stories260K.bin");
  if (model.empty())
    GTEST_SKIP() << "../shared/models/stories260K is absent";
  // No GPU to probe: H100 SXM's 3.35 TB/s and 66.9 TFLOP/s (fp32, no tensor
  // cores), A100 SXM 80 GB's 2.039 TB/s and 19.5 TFLOP/s, as NVIDIA states them.
  struct Part {
    const char *arch;
    double bandwidth, fp32;
  };
  for (Part part : {Part{"sm_90", 3350, 66900}, Part{"sm_80", 2039, 19500}}) {
    const std::string dir = tempDir() + "/report-cuda-" + part.arch;
    fs::remove_all(dir);
    CommandResult r = run(quote(tool("quill-compile")) + " " + quote(model) + " --tokenizer " +
                          quote(sharedModel("stories260K/tok512.bin")) +
                          " --target=cuda --gpu-arch=" + part.arch + " --report " + quote(dir));
    ASSERT_EQ(r.exitCode, 0) << r.err;
    auto table = nlohmann::json::parse(readFile(dir + "/kernels.json"), nullptr, false);
    ASSERT_TRUE(table.is_object());
    const auto &c = table["ceilings"];
    EXPECT_EQ(c["bandwidth_gbs"].get<double>(), part.bandwidth);
    EXPECT_EQ(c["fp32_gflops"].get<double>(), part.fp32);
    EXPECT_NE(c["source"].get<std::string>().find(std::string("(") + part.arch + ")"),
              std::string::npos);
    // The logits stay where the CPU's are: a matrix-vector product held by
    // memory, its bound the bandwidth times its intensity.
    bool sawLogits = false;
    for (const auto &row : table["kernels"])
      if (row["step"] == "step" && row["op"] == "logits") {
        sawLogits = true;
        EXPECT_EQ(row["flops"].get<double>(), 2.0 * 512 * 64);
        EXPECT_EQ(row["limit"], "memory");
        EXPECT_NEAR(row["bound_gflops"].get<double>(),
                    part.bandwidth * row["intensity"].get<double>(), 1e-6 * part.bandwidth);
      }
    EXPECT_TRUE(sawLogits);
    // The page lists the CUDA target's stages, its PTX among the texts.
    const std::string page = readFile(dir + "/index.html");
    EXPECT_NE(page.find("for cuda"), std::string::npos);
  }
}

TEST(Report, BadReportFlagsAreOneLine) {
  std::string model = sharedModel("stories260K/stories260K.bin");
  if (model.empty())
    GTEST_SKIP() << "../shared/models/stories260K is absent";
  CommandResult r =
      run(quote(tool("quill-compile")) + " " + quote(model) + " --tokenizer " +
          quote(sharedModel("stories260K/tok512.bin")) + " --report /proc/quill-report");
  expectCleanFailure(r, "/proc/quill-report: cannot create the report directory");
  r = run(quote(tool("quill-compile")) + " " + quote(model) + " --report " +
          quote(tempDir() + "/report-emit") + " --emit=linalg");
  expectCleanFailure(r, "--report follows the whole lowering");
}

} // namespace
} // namespace quill::test
