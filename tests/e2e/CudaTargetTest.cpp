// The CUDA target. Without a GPU: every kernel of the stories260K and 110m
// steps gets a PTX entry with no call outside the PTX, the CUDA artifact
// round-trips, and quill-run drives a stand-in driver (tests/mock_cuda) the
// way the PTX declares. With a GPU: the golden text and the logits of every
// step against the CPU.
#include "StepChecks.h"
#include "TestSupport.h"

#include "runtime/device/CudaDevice.h"
#include "runtime/device/CudaProbe.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <set>
#include <sstream>
#include <vector>

namespace quill::test {
namespace {

/// Names after `prefix` (up to a non-identifier character) in `text`.
std::set<std::string> namesAfter(const std::string &text, const std::string &prefix) {
  std::set<std::string> names;
  for (size_t at = text.find(prefix); at != std::string::npos; at = text.find(prefix, at + 1)) {
    size_t start = at + prefix.size(), end = start;
    while (end < text.size() &&
           (std::isalnum(static_cast<unsigned char>(text[end])) || text[end] == '_'))
      ++end;
    names.insert(text.substr(start, end - start));
  }
  return names;
}

void expectPtxForEveryKernel(const std::string &model, const std::string &name,
                             long maxLocalBytes = 64 * 1024, const std::string &flags = "") {
  std::string compile =
      quote(tool("quill-compile")) + " " + quote(model) + " --target=cuda " + flags;
  CommandResult kernels = run(compile + " --emit=kernels");
  ASSERT_EQ(kernels.exitCode, 0) << kernels.err;
  CommandResult ptx = run(compile + " --emit=ptx");
  ASSERT_EQ(ptx.exitCode, 0) << ptx.err;
  // Kernel functions are the ones the schedules dispatch.
  std::set<std::string> dispatched = namesAfter(kernels.out, "quill.dispatch @");
  std::set<std::string> entries = namesAfter(ptx.out, ".visible .entry ");
  EXPECT_FALSE(dispatched.empty());
  EXPECT_EQ(entries, dispatched) << name;
  EXPECT_NE(ptx.out.find(".target sm_90"), std::string::npos);
  EXPECT_EQ(ptx.out.find(".extern"), std::string::npos) << name << ": a call outside the PTX";
  // Each thread computes one unit, so its temporaries are one unit's: well
  // under CUDA's 512 KiB of local memory (the whole range's would be MiBs).
  long largest = 0;
  const std::string depot = "__local_depot";
  for (size_t at = ptx.out.find(depot); at != std::string::npos; at = ptx.out.find(depot, at + 1)) {
    size_t open = ptx.out.find('[', at), newline = ptx.out.find('\n', at);
    if (open < newline)
      largest = std::max(largest, std::stol(ptx.out.substr(open + 1)));
  }
  EXPECT_LE(largest, maxLocalBytes) << name;
  ::testing::Test::RecordProperty(name + "_kernels", std::to_string(entries.size()));
  ::testing::Test::RecordProperty(name + "_largest_local_bytes", std::to_string(largest));
}

TEST(CudaTarget, PtxForEveryKernelOfStories260K) {
  std::string model = sharedModel("stories260K/stories260K.bin");
  if (model.empty())
    GTEST_SKIP() << "../shared/models/stories260K is absent";
  expectPtxForEveryKernel(model, "stories260K");
}

TEST(CudaTarget, PtxForEveryKernelOf110m) {
  std::string model = tempDir() + "/110m.bin";
  CommandResult synth = run(quote(tool("quill-synth")) + " --shape 110m -o " + quote(model) +
                            " --tokenizer-out " + quote(tempDir() + "/110m-tok.bin"));
  ASSERT_EQ(synth.exitCode, 0) << synth.err;
  expectPtxForEveryKernel(model, "110m");
}

/// One line on stderr, a nonzero exit, and the line starts with `prefix`.
void expectOneLineFailure(const CommandResult &r, const std::string &prefix) {
  EXPECT_NE(r.exitCode, 0);
  EXPECT_EQ(r.err.rfind(prefix, 0), 0u) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

/// $QUILL_GPU_ARTIFACTS/NAME where that is set: artifacts compiled
/// elsewhere and carried to a GPU machine that has no quill-compile (see
/// scripts/gpu/); else "".
std::string carried(const std::string &name) {
  const char *dir = std::getenv("QUILL_GPU_ARTIFACTS");
  return dir && *dir ? std::string(dir) + "/" + name : "";
}

/// stories260K compiled for CUDA (once per test binary), or "" to skip.
std::string storiesCudaArtifact() {
  static std::string path;
  if (!path.empty())
    return path;
  if (std::string c = carried("stories260K-cuda.qm"); !c.empty())
    return path = c;
  std::string model = sharedModel("stories260K/stories260K.bin");
  std::string tokenizer = sharedModel("stories260K/tok512.bin");
  if (model.empty() || tokenizer.empty())
    return "";
  path = compileArtifact(model, tokenizer, "stories-cuda", "--target=cuda");
  return path;
}

/// Tests of the stories260K CUDA artifact, opened; skipped without ../shared.
class CudaArtifact : public ::testing::Test {
protected:
  void SetUp() override {
    path = storiesCudaArtifact();
    if (path.empty())
      GTEST_SKIP() << "../shared/models/stories260K is absent";
    auto a = Artifact::open(path);
    ASSERT_TRUE(a.isOk()) << a.message();
    artifact = std::make_unique<Artifact>(a.take());
  }
  std::string path;
  std::unique_ptr<Artifact> artifact;
};

/// quill-run with the stand-in driver and its report.
std::string withMockDriver(const std::string &env = "") {
  return "QUILL_CUDA_DRIVER=" + quote(QUILL_MOCK_CUDA) + " MOCK_CUDA_REPORT=1 " + env + " " +
         quote(tool("quill-run")) + " ";
}

/// The counts the stand-in driver reports at exit.
struct MockReport {
  unsigned long long launches = 0, toDevice = 0, fromDevice = 0, live = 0, failed = 0;
  bool found = false;
};
MockReport mockReport(const std::string &err) {
  MockReport m;
  size_t at = err.find("mock-cuda: ");
  if (at != std::string::npos)
    m.found = std::sscanf(err.c_str() + at,
                          "mock-cuda: %llu launches, %llu bytes to the device, %llu from it, "
                          "%llu live allocations, %llu failed calls",
                          &m.launches, &m.toDevice, &m.fromDevice, &m.live, &m.failed) == 5;
  return m;
}

TEST(CudaTarget, PtxOf1bAttentionShapeKeepsLocalMemorySmall) {
  // 1b's attention geometry (32 heads over 4 kv heads of 64, 2048
  // positions) in one small layer: the prefill attention's scores are one kv
  // head's (8 x 2048 floats), not all four heads'.
  ModelConfig c;
  c.dim = 2048, c.hiddenDim = 256, c.nLayers = 1, c.nHeads = 32, c.nKvHeads = 4;
  c.vocabSize = 512, c.seqLen = 2048;
  expectPtxForEveryKernel(synthesizeModel(c, "1b-attention"), "1b-attention", 80 * 1024);
}

TEST(CudaTarget, PtxOfQuantizedWideRowsKeepsLocalMemorySmall) {
  // 110m's down projection (rows of 2048) over a prefill chunk of 64 with
  // Q8_0 and Q4_K weights: the products' inputs are rounded to Q8_0 blocks
  // where they are read (a rounded [64, 2048] copy per GPU thread would
  // be 512 KiB, past CUDA's limit: quantized 110m did not compile).
  ModelConfig c;
  c.dim = 256, c.hiddenDim = 2048, c.nLayers = 1, c.nHeads = 4, c.nKvHeads = 4;
  c.vocabSize = 512, c.seqLen = 256;
  std::string model = synthesizeModel(c, "quantized-wide-rows");
  for (const char *scheme : {"q8_0", "q4_k_m"})
    expectPtxForEveryKernel(model, std::string("wide-rows-") + scheme, 64 * 1024,
                            std::string("--quantize ") + scheme);
}

TEST(CudaTarget, QuillRunDeviceCudaRefusesACpuArtifactInOneLine) {
  ModelConfig c;
  c.dim = 32, c.hiddenDim = 64, c.nLayers = 1, c.nHeads = 2, c.nKvHeads = 2;
  c.vocabSize = 300, c.seqLen = 16;
  std::string artifact =
      compileArtifact(synthesizeModel(c, "cuda-cli"), syntheticTokenizer(300), "cuda-cli");
  ASSERT_FALSE(artifact.empty());
  CommandResult r = run(quote(tool("quill-run")) + " " + quote(artifact) + " --device cuda -n 4");
  expectOneLineFailure(r, "quill-run: --device cuda: ");
  EXPECT_NE(r.err.find("compiled for the CPU"), std::string::npos) << r.err;
}

TEST_F(CudaArtifact, ArtifactHoldsPtxAndTheCpuRefusesIt) {
  EXPECT_TRUE(artifact->isCuda());
  EXPECT_EQ(artifact->kernelLibraryData(), nullptr);
  std::string ptx(reinterpret_cast<const char *>(artifact->ptxData()), artifact->ptxSize());
  EXPECT_NE(ptx.find(".target sm_90"), std::string::npos);
  for (const std::string &kernel : artifact->schedule().kernels)
    EXPECT_NE(ptx.find(".visible .entry " + kernel + "("), std::string::npos) << kernel;
  EXPECT_NE(artifact->target().find("cuda"), std::string::npos) << artifact->target();

  CommandResult r = run(quote(tool("quill-run")) + " " + quote(path) + " -n 4");
  expectOneLineFailure(r, "quill-run: ");
  EXPECT_NE(r.err.find("compiled for CUDA"), std::string::npos) << r.err;
}

TEST_F(CudaArtifact, NoDriverOrNoDeviceIsOneLine) {
  CommandResult none = run("QUILL_CUDA_DRIVER=/nonexistent/libcuda.so.1 " +
                           quote(tool("quill-run")) + " " + quote(path) + " --device cuda");
  expectOneLineFailure(none, "quill-run: --device cuda: no CUDA driver on this machine");

  // A library that is not a CUDA driver: what it lacks, in one line.
  CommandResult wrong = run("QUILL_CUDA_DRIVER=" + quote(QUILL_MOCK_CUDA) + ".not-there " +
                            quote(tool("quill-run")) + " " + quote(path) + " --device cuda");
  expectOneLineFailure(wrong, "quill-run: --device cuda: no CUDA driver on this machine");
  CommandResult lacking = run("QUILL_CUDA_DRIVER=libm.so.6 " + quote(tool("quill-run")) + " " +
                              quote(path) + " --device cuda");
  expectOneLineFailure(lacking, "quill-run: --device cuda: the CUDA driver lacks cuInit, ");

  CommandResult noGpu =
      run(withMockDriver("MOCK_CUDA_FAIL=init") + quote(path) + " --device cuda -n 4");
  EXPECT_NE(noGpu.exitCode, 0);
  EXPECT_EQ(noGpu.err.rfind("quill-run: --device cuda: ", 0), 0u) << noGpu.err;
  EXPECT_NE(noGpu.err.find("no CUDA-capable device"), std::string::npos) << noGpu.err;

  // A kernel that faults mid-step (a lost device, a bad access) in the
  // replayed graph: one line, nonzero, no text after it, nothing leaked.
  CommandResult fault =
      run(withMockDriver("MOCK_CUDA_FAIL=launch") + quote(path) + " --device cuda -n 4");
  EXPECT_NE(fault.exitCode, 0);
  EXPECT_EQ(fault.out, "");
  EXPECT_EQ(fault.err.rfind("quill-run: running the step (a CUDA graph", 0), 0u) << fault.err;
  EXPECT_NE(fault.err.find(": unspecified launch failure\n"), std::string::npos) << fault.err;
  EXPECT_EQ(mockReport(fault.err).live, 0u) << fault.err;
  // Launched one by one, a kernel whose launch fails is named.
  CommandResult named = run(withMockDriver("MOCK_CUDA_FAIL=launch") + quote(path) +
                            " --device cuda --no-cuda-graphs -n 4");
  EXPECT_NE(named.exitCode, 0);
  EXPECT_EQ(named.out, "");
  EXPECT_EQ(named.err.rfind("quill-run: launching kernel ", 0), 0u) << named.err;
  EXPECT_NE(named.err.find(": unspecified launch failure\n"), std::string::npos) << named.err;
  EXPECT_EQ(mockReport(named.err).live, 0u) << named.err;

  CommandResult graphsOnCpu =
      run(quote(tool("quill-run")) + " " + quote(path) + " --no-cuda-graphs -n 4");
  EXPECT_NE(graphsOnCpu.exitCode, 0);
  EXPECT_EQ(graphsOnCpu.err, "quill-run: --no-cuda-graphs is for --device cuda\n");
  // The CPU's scheduling flags mean nothing on the GPU: refused, not ignored.
  for (const char *flag : {"--sequential-kernels", "--no-step-team"}) {
    CommandResult cpuOnly =
        run(withMockDriver() + quote(path) + " --device cuda " + flag + " -n 4");
    EXPECT_NE(cpuOnly.exitCode, 0) << flag;
    EXPECT_EQ(cpuOnly.out, "") << flag;
    EXPECT_EQ(cpuOnly.err, std::string("quill-run: ") + flag +
                               " schedules the CPU's threads: not with --device cuda\n");
  }

  CommandResult beams = run(withMockDriver() + quote(path) + " --device cuda --beams 2 -n 4");
  EXPECT_NE(beams.exitCode, 0);
  EXPECT_EQ(beams.err.rfind("quill-run: --device cuda runs one sequence", 0), 0u) << beams.err;
}

TEST_F(CudaArtifact, RuntimeDrivesTheDriverAsThePtxDeclares) {
  // The stand-in driver checks every launch against the PTX (parameters,
  // pointers into device memory, grid over the work, the runtime's own
  // stream) and every copy's bounds, and re-checks a graph's launches at
  // each replay; kernels do not run, so the text is not checked here.
  // Replayed as a graph or launched one by one, the kernels run as often.
  const int steps = 8;
  uint64_t launches[2] = {0, 0};
  for (bool graphs : {true, false}) {
    CommandResult r =
        run(withMockDriver() + quote(path) + " --device cuda --temp 0 -n " + std::to_string(steps) +
            " --verbose" + (graphs ? "" : " --no-cuda-graphs"));
    ASSERT_EQ(r.exitCode, 0) << r.err;
    EXPECT_NE(r.err.find("device: cuda, Quill mock GPU"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(graphs ? "replayed as one CUDA graph" : "launched one by one"),
              std::string::npos)
        << r.err;
    MockReport m = mockReport(r.err);
    ASSERT_TRUE(m.found) << r.err;
    EXPECT_EQ(m.failed, 0u) << r.err;
    EXPECT_EQ(m.live, 0u) << "device memory, a stream or a graph leaked: " << r.err;
    // Weights went over once; only logits come back, one vocabulary per step.
    EXPECT_GE(m.toDevice, artifact->schedule().weightBytes);
    const uint64_t logitBytes = uint64_t(artifact->config().vocabSize) * sizeof(float);
    EXPECT_EQ(m.fromDevice % logitBytes, 0u);
    EXPECT_GE(m.fromDevice / logitBytes, uint64_t(steps));
    EXPECT_GE(m.launches, steps * artifact->schedule().dispatches.size());
    launches[graphs ? 0 : 1] = m.launches;
  }
  EXPECT_EQ(launches[0], launches[1]);
}

TEST_F(CudaArtifact, BenchReportsTheDevicesOwnBandwidth) {
  CommandResult r = run(withMockDriver() + quote(path) + " --device cuda --bench --json");
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.out.find("\"device\":\"cuda\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"fma_gflop_s\":null"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("\"bandwidth_gb_s\":0,"), std::string::npos) << r.out;
  EXPECT_EQ(mockReport(r.err).failed, 0u) << r.err;
}

/// Skips the test unless a real GPU and driver are here; with
/// QUILL_REQUIRE_GPU=1 (scripts/gpu/check.sh) their absence fails it instead.
#define REQUIRE_GPU()                                                                              \
  do {                                                                                             \
    std::string why;                                                                               \
    const char *driver = std::getenv("QUILL_CUDA_DRIVER");                                         \
    if (driver && std::string(driver) == QUILL_MOCK_CUDA)                                          \
      why = "QUILL_CUDA_DRIVER names the stand-in driver";                                         \
    else if (Status gpu = probeCuda(); !gpu)                                                       \
      why = "no GPU: " + gpu.message();                                                            \
    if (!why.empty()) {                                                                            \
      const char *required = std::getenv("QUILL_REQUIRE_GPU");                                     \
      if (required && std::string(required) == "1")                                                \
        FAIL() << why;                                                                             \
      GTEST_SKIP() << why;                                                                         \
    }                                                                                              \
  } while (0)

TEST(CudaOnGpu, Greedy200TokensFromBosMatchLlama2c) {
  REQUIRE_GPU();
  std::string artifact = storiesCudaArtifact();
  std::string expected = carried("expected-greedy-200.txt");
  if (expected.empty())
    expected = sharedModel("stories260K/expected-greedy-200.txt");
  if (artifact.empty() || expected.empty())
    GTEST_SKIP() << "../shared/models/stories260K is absent";
  CommandResult r =
      run(quote(tool("quill-run")) + " " + quote(artifact) + " --device cuda -n 200 --temp 0");
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(r.out, readFile(expected) + "\n");
}

/// The CPU and GPU artifacts of one model run side by side: `prefillChunks`
/// chunks of a fixed token sequence (BOS first), then `steps` greedy decode
/// steps; every logit of every step within `tolerance` of the CPU's
/// (absolute, on logits of magnitude ~10; 1e-3 by default: the GPU's fast
/// exp/rsqrt approximations and reduction orders differ from the CPU's),
/// or with `relative`, within `tolerance` times the CPU's largest |logit|
/// of the step. Graphs replay every step.
void expectGpuMatchesCpu(const std::string &gpuPath, const std::string &cpuPath, int prefillChunks,
                         int steps, float tolerance = 1e-3f, bool relative = false) {
  LoadedArtifact cpu = load(cpuPath, 1);
  ASSERT_TRUE(cpu.device);
  auto gpuArtifact = Artifact::open(gpuPath);
  ASSERT_TRUE(gpuArtifact.isOk()) << gpuArtifact.message();
  auto gpu = CudaDevice::create(*gpuArtifact);
  ASSERT_TRUE(gpu.isOk()) << gpu.message();
  const int32_t vocab = cpu.artifact->config().vocabSize;
  float worst = 0, largest = 0;
  // False (after reporting) at the first step that differs: later ones would too.
  auto matches = [&](const std::string &where) {
    if (!(*gpu)->error().isOk()) {
      ADD_FAILURE() << where << ": " << (*gpu)->error().message();
      return false;
    }
    const float *a = cpu.device->logits(), *b = (*gpu)->logits();
    float stepLargest = 0;
    for (int32_t i = 0; i < vocab; ++i) {
      if (!std::isfinite(b[i])) {
        ADD_FAILURE() << where << ", logit " << i << " is " << b[i];
        return false;
      }
      worst = std::max(worst, std::fabs(a[i] - b[i]));
      stepLargest = std::max(stepLargest, std::fabs(a[i]));
    }
    largest = std::max(largest, stepLargest);
    const float bound = relative ? tolerance * stepLargest : tolerance;
    if (worst > bound) {
      ADD_FAILURE() << where << ": a logit differs by " << worst << " (over " << bound
                    << "; the largest |logit| is " << stepLargest << ")";
      return false;
    }
    return true;
  };
  int32_t pos = 0;
  const int32_t chunk = (*gpu)->prefillChunk();
  if (prefillChunks > 0) {
    ASSERT_GT(chunk, 0) << "the GPU artifact has no prefill step";
    ASSERT_EQ(cpu.device->prefillChunk(), chunk);
  }
  std::vector<int32_t> tokens;
  uint64_t state = 4242;
  for (int32_t i = 0; i < prefillChunks * chunk; ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    tokens.push_back(i == 0 ? 1 : int32_t((state >> 33) % uint64_t(vocab)));
  }
  for (int c = 0; c < prefillChunks; ++c, pos += chunk) {
    cpu.device->prefill(tokens.data() + pos, pos);
    (*gpu)->prefill(tokens.data() + pos, pos);
    if (!matches("prefill chunk ending at " + std::to_string(pos + chunk - 1)))
      return;
  }
  int32_t token = 1;
  if (pos > 0) {
    const float *a = cpu.device->logits();
    token = static_cast<int32_t>(std::max_element(a, a + vocab) - a);
  }
  for (int32_t end = pos + steps; pos < end; ++pos) {
    cpu.device->step(token, pos);
    (*gpu)->step(token, pos);
    if (!matches("position " + std::to_string(pos)))
      return;
    const float *a = cpu.device->logits();
    token = static_cast<int32_t>(std::max_element(a, a + vocab) - a);
  }
  ::testing::Test::RecordProperty("worst_abs_logit_difference", std::to_string(worst));
  std::printf("%s: worst |logit difference| %.3g over %d steps (largest |logit| %.3g)\n",
              gpuPath.c_str(), worst, steps, largest);
}

/// stories260K for the CPU: carried (compiled for any x86-64-v3 CPU) or
/// compiled here.
std::string storiesCpuArtifact() {
  if (std::string c = carried("stories260K-cpu.qm"); !c.empty())
    return c;
  return compileArtifact(sharedModel("stories260K/stories260K.bin"),
                         sharedModel("stories260K/tok512.bin"), "stories-cpu");
}

/// stories260K on the GPU against the CPU (skips without a GPU or ../shared).
#define EXPECT_STORIES_GPU_MATCHES_CPU(prefillChunks, steps)                                       \
  do {                                                                                             \
    REQUIRE_GPU();                                                                                 \
    std::string gpuPath = storiesCudaArtifact();                                                   \
    if (gpuPath.empty())                                                                           \
      GTEST_SKIP() << "../shared/models/stories260K is absent";                                    \
    expectGpuMatchesCpu(gpuPath, storiesCpuArtifact(), prefillChunks, steps);                      \
  } while (0)

TEST(CudaOnGpu, LogitsOfEveryStepMatchTheCpu) {
  EXPECT_STORIES_GPU_MATCHES_CPU(/*prefillChunks=*/0, /*steps=*/64);
}

TEST(CudaOnGpu, PrefillThenDecodeMatchTheCpu) {
  // Two prefill chunks (a warp per (query row, kv head), rows of rope, cache
  // writes and embeddings), then decode past them.
  EXPECT_STORIES_GPU_MATCHES_CPU(/*prefillChunks=*/2, /*steps=*/64);
}

TEST(CudaOnGpu, WarpShapesMatchTheCpu) {
  // Heads of 64 (flash-decoding's partial attention a warp per chunk), two
  // query heads per kv head, widths that are multiples of 128, and peaked
  // attention: the shapes of 110m and 1b in a small model. Carried as gpu-warp-{cuda,cpu}.qm (see
  // scripts/gpu/prepare.sh), or compiled here.
  REQUIRE_GPU();
  std::string gpuPath = carried("gpu-warp-cuda.qm"), cpuPath = carried("gpu-warp-cpu.qm");
  if (gpuPath.empty()) {
    ModelConfig c;
    c.dim = 128, c.hiddenDim = 384, c.nLayers = 2, c.nHeads = 2, c.nKvHeads = 1;
    c.vocabSize = 512, c.seqLen = 256, c.sharedClassifier = false;
    std::string model = synthesizeModel(c, "gpu-warp", 0, 7, /*queryKeyGain=*/3.0f);
    gpuPath = compileArtifact(model, syntheticTokenizer(512), "gpu-warp-cuda", "--target=cuda");
    cpuPath = compileArtifact(model, syntheticTokenizer(512), "gpu-warp-cpu", "--batch-rows 0");
  }
  expectGpuMatchesCpu(gpuPath, cpuPath, /*prefillChunks=*/2, /*steps=*/64);
}

class CudaQuantizedOnGpu : public ::testing::TestWithParam<const char *> {};

TEST_P(CudaQuantizedOnGpu, WeightsDecodedInRegistersMatchTheCpu) {
  // quill-compile --quantize of a model whose rows are whole K-quant
  // super-blocks (256 wide), for CUDA and for an x86-64-v3 CPU (no VNNI:
  // both round the products' inputs to Q8_0 blocks and multiply in f32).
  // Carried as gpu-quant-SCHEME-{cuda,cpu}.qm, or compiled here. An input
  // that the two devices' last bits put on either side of a rounding
  // boundary moves the logits, hence kQ8InputTolerance (relative to the
  // largest logit), as the CPU's own quantized tests allow against the
  // oracle, over one prefill chunk and 16 steps: such moves land in the KV
  // cache and add up with the positions (on an H200: 1.1% of the largest
  // logit after 64 steps for q8_0 and q4_0, 2.4% after 44 for q4_k_m).
  REQUIRE_GPU();
  const std::string scheme = GetParam();
  std::string gpuPath = carried("gpu-quant-" + scheme + "-cuda.qm");
  std::string cpuPath = carried("gpu-quant-" + scheme + "-cpu.qm");
  if (gpuPath.empty()) {
    ModelConfig c;
    c.dim = 256, c.hiddenDim = 768, c.nLayers = 2, c.nHeads = 4, c.nKvHeads = 2;
    c.vocabSize = 512, c.seqLen = 256, c.sharedClassifier = false;
    std::string model = synthesizeModel(c, "gpu-quant", 0, 7, /*queryKeyGain=*/3.0f);
    gpuPath = compileArtifact(model, syntheticTokenizer(512), "gpu-quant-" + scheme + "-cuda",
                              "--target=cuda --quantize " + scheme);
    cpuPath = compileArtifact(model, syntheticTokenizer(512), "gpu-quant-" + scheme + "-cpu",
                              "--cpu x86-64-v3 --batch-rows 0 --quantize " + scheme);
  }
  expectGpuMatchesCpu(gpuPath, cpuPath, /*prefillChunks=*/1, /*steps=*/16,
                      static_cast<float>(kQ8InputTolerance), /*relative=*/true);
}

INSTANTIATE_TEST_SUITE_P(Schemes, CudaQuantizedOnGpu, ::testing::Values("q8_0", "q4_0", "q4_k_m"),
                         [](const auto &info) { return std::string(info.param); });

} // namespace
} // namespace quill::test
