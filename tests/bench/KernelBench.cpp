// Google Benchmark suite for Quill's compiled kernels, each measured on its
// own through the runtime's real launch path, against what bounds it:
// matrix-vector kernels (decode) in GB/s of weights streamed, matrix-matrix
// kernels (prefill) in GFLOP/s, attention at growing contexts, RMSNorm. The
// artifacts are compiled at start-up from synthetic models of real shapes
// by the quill-synth library and the quill-compile tool of this build.
#include "compiler/Import/SyntheticModel.h"
#include "runtime/artifact/Artifact.h"
#include "runtime/device/CpuDevice.h"

#include <benchmark/benchmark.h>
#include <tbb/info.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

namespace fs = std::filesystem;
using namespace quill;

namespace {

struct Fixture {
  std::unique_ptr<Artifact> artifact;
  std::unique_ptr<tbb::task_arena> arena;
  std::unique_ptr<CpuDevice> device;
};

/// Compiles a synthetic model of `config` and loads it on `threads` threads.
Fixture makeFixture(const ModelConfig &config, const std::string &name, int threads) {
  fs::path dir = fs::temp_directory_path() / "quill-kernel-bench";
  fs::create_directories(dir);
  std::string model = (dir / (name + ".bin")).string();
  std::string tokenizer = (dir / (name + ".tok")).string();
  std::string artifact = (dir / (name + ".qm")).string();
  Fixture f;
  if (!writeSyntheticModel(model, config, 0, 7) ||
      !writeSyntheticTokenizer(tokenizer, config.vocabSize))
    return f;
  std::string command = std::string(QUILL_BIN_DIR) + "/quill-compile " + model + " --tokenizer " +
                        tokenizer + " -o " + artifact + " --prefill-chunk 64";
  if (std::system(command.c_str()) != 0)
    return f;
  auto loaded = Artifact::open(artifact);
  if (!loaded)
    return f;
  f.artifact = std::make_unique<Artifact>(loaded.take());
  f.arena = std::make_unique<tbb::task_arena>(threads);
  auto device = CpuDevice::create(*f.artifact, *f.arena);
  if (device)
    f.device = device.take();
  return f;
}

ModelConfig shape(int dim, int hidden, int heads, int kvHeads, int vocab, int context) {
  ModelConfig c;
  c.dim = dim, c.hiddenDim = hidden, c.nLayers = 1, c.nHeads = heads, c.nKvHeads = kvHeads;
  c.vocabSize = vocab, c.seqLen = context;
  return c;
}

/// Index of the first dispatch whose kernel name starts with `prefix`.
long findDispatch(const Schedule &schedule, const std::string &prefix) {
  for (size_t i = 0; i < schedule.dispatches.size(); ++i)
    if (schedule.kernels[schedule.dispatches[i].kernel].rfind(prefix, 0) == 0)
      return long(i);
  return -1;
}

void runKernel(benchmark::State &state, Fixture &f, bool prefill, const std::string &prefix,
               int32_t pos, double bytes, double flops) {
  if (!f.device) {
    state.SkipWithError("could not compile or load the benchmark artifact");
    return;
  }
  const Schedule &schedule = prefill ? *f.artifact->prefillSchedule() : f.artifact->schedule();
  long index = findDispatch(schedule, prefix);
  if (index < 0) {
    state.SkipWithError(("no kernel " + prefix).c_str());
    return;
  }
  for (auto _ : state)
    f.device->runDispatch(prefill, size_t(index), 1, pos);
  state.counters["GB/s"] = benchmark::Counter(bytes, benchmark::Counter::kIsIterationInvariantRate,
                                              benchmark::Counter::OneK::kIs1000);
  if (flops > 0)
    state.counters["GFLOP/s"] = benchmark::Counter(
        flops, benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::OneK::kIs1000);
  state.counters["threads"] = f.arena->max_concurrency();
}

int threadsArg(const benchmark::State &state) { return int(state.range(0)); }

/// The 110m shape's layer (dim 768, hidden 2048) with a 2048 context, per
/// thread count.
Fixture &layer110m(int threads) {
  static Fixture fixtures[3];
  Fixture &f = fixtures[threads];
  if (!f.device)
    f = makeFixture(shape(768, 2048, 12, 12, 32000, 2048), "layer110m-t" + std::to_string(threads),
                    threads);
  return f;
}

// Decode: the fused gate/up projection with SwiGLU (4096 x 768 weights) and
// the classifier (32000 x 768), bound by memory bandwidth.
void BM_MatVecGateUp(benchmark::State &state) {
  runKernel(state, layer110m(threadsArg(state)), false, "linear_768_4096x768", 0, 4096.0 * 768 * 4,
            2.0 * 4096 * 768);
}
void BM_MatVecLogits(benchmark::State &state) {
  runKernel(state, layer110m(threadsArg(state)), false, "logits_768_32000x768", 0,
            32000.0 * 768 * 4, 2.0 * 32000 * 768);
}
// Prefill: the same weights times 64 tokens, bound by FMA throughput.
void BM_MatMulGateUp(benchmark::State &state) {
  runKernel(state, layer110m(threadsArg(state)), true, "linear_64x768_4096x768", 0,
            4096.0 * 768 * 4, 2.0 * 64 * 4096 * 768);
}
// Attention over `range(1)` cached positions (12 heads of 64).
void BM_Attention(benchmark::State &state) {
  int32_t context = int32_t(state.range(1));
  runKernel(state, layer110m(threadsArg(state)), false, "attention_768", context - 1,
            2.0 * context * 768 * 4, 4.0 * context * 768);
}
void BM_RMSNorm(benchmark::State &state) {
  runKernel(state, layer110m(threadsArg(state)), false, "rmsnorm_768", 0, 2.0 * 768 * 4, 3.0 * 768);
}

BENCHMARK(BM_MatVecGateUp)->Arg(1)->Arg(2)->UseRealTime();
BENCHMARK(BM_MatVecLogits)->Arg(1)->Arg(2)->UseRealTime();
BENCHMARK(BM_MatMulGateUp)->Arg(1)->Arg(2)->UseRealTime();
BENCHMARK(BM_Attention)->Args({1, 128})->Args({1, 1024})->Args({1, 2048})->UseRealTime();
BENCHMARK(BM_RMSNorm)->Arg(1)->UseRealTime();

} // namespace

BENCHMARK_MAIN();
