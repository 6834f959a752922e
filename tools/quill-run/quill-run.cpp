// quill-run: generate text from a compiled Quill artifact.
#include "BatchMode.h"
#include "ChatMode.h"
#include "QualityMode.h"
#include "ResultJson.h"
#include "RunOptions.h"

#include "runtime/artifact/Artifact.h"
#include "runtime/bench/ModelBench.h"
#include "runtime/bench/ProfileReport.h"
#include "runtime/decode/Generator.h"
#include "runtime/device/CpuDevice.h"
#include "runtime/device/CudaDevice.h"
#include "runtime/support/Trace.h"

#include <tbb/info.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <sstream>

#include <unistd.h>

namespace {

int fail(const std::string &message) {
  std::fprintf(stderr, "quill-run: %s\n", message.c_str());
  return 1;
}

/// Set by the first SIGINT during generation, which then stops before the
/// next token; a second SIGINT ends the process as usual.
std::atomic<bool> interrupted{false};
static_assert(std::atomic<bool>::is_always_lock_free, "set from a signal handler");

extern "C" void onInterrupt(int) {
  interrupted.store(true, std::memory_order_relaxed);
  std::signal(SIGINT, SIG_DFL);
}

/// Catches SIGINT (into `interrupted`) while a generating mode runs. A mode
/// installs it before it reports anything on stderr, so whoever sees that
/// report knows a SIGINT from then on stops the run at its next token.
struct CatchInterrupt {
  CatchInterrupt() { std::signal(SIGINT, onInterrupt); }
  ~CatchInterrupt() { std::signal(SIGINT, SIG_DFL); }
  CatchInterrupt(const CatchInterrupt &) = delete;
  CatchInterrupt &operator=(const CatchInterrupt &) = delete;
};

int runQuill(int argc, char **argv) {
  using namespace quill;
  auto parsed = parseRunOptions(argc, argv);
  if (!parsed)
    return fail(parsed.message());
  RunOptions options = parsed.take();
  if (options.help) {
    std::fputs(runUsage(), stdout);
    return 0;
  }
  if (!options.seedGiven)
    options.sampling.seed =
        static_cast<uint64_t>(std::chrono::system_clock::now().time_since_epoch().count());

  auto artifact = Artifact::open(options.artifactPath, options.verifyWeights, options.weightPages);
  if (!artifact)
    return fail(artifact.message());
  const ModelConfig &config = artifact->config();
  auto tokenizer = Tokenizer::fromBytes(artifact->tokenizerData(), artifact->tokenizerSize(),
                                        config.vocabSize, options.artifactPath + " (tokenizer)");
  if (!tokenizer)
    return fail(tokenizer.message());
  if (Status s = validateForVocabulary(options.sampling, config.vocabSize); !s)
    return fail(s.message());
  // The exit code, or the error to print, of a mode run elsewhere.
  auto finish = [](const ErrorOr<int> &code) { return code ? *code : fail(code.message()); };
  if (options.renderPrompt)
    return finish(renderChatPrompt(options, *artifact, *tokenizer));

  int threads = options.threads > 0 ? options.threads : tbb::info::default_concurrency();
  tbb::task_arena arena(threads);
  if (options.cuda && (options.beamSearch || options.samples > 1 || !options.batchFile.empty() ||
                       !options.batchSizes.empty()))
    return fail("--device cuda runs one sequence (and --bench): no batch step, beams or "
                "samples on the GPU yet");
  // This run's kind of device, for the artifact and for a --kl-divergence base.
  auto makeDevice = [&](const Artifact &a) -> ErrorOr<std::unique_ptr<Device>> {
    if (options.cuda) {
      auto device = CudaDevice::create(a, options.cudaGraphs);
      if (!device)
        return Status::error("--device cuda: " + device.message());
      return std::unique_ptr<Device>(device.take());
    }
    auto device = CpuDevice::create(a, arena);
    if (!device)
      return device.status();
    return std::unique_ptr<Device>(device.take());
  };
  auto made = makeDevice(*artifact);
  if (!made)
    return fail(made.message());
  std::unique_ptr<Device> owned = made.take();
  CpuDevice *cpu = options.cuda ? nullptr : static_cast<CpuDevice *>(owned.get());
  Device &device = *owned;
  if (!options.reportDir.empty()) {
    // Said before the run, not after it: the directory must be writable.
    std::error_code error;
    std::filesystem::create_directories(options.reportDir, error);
    if (error || access(options.reportDir.c_str(), W_OK) != 0)
      return fail(options.reportDir + ": cannot write the report there" +
                  (error ? ": " + error.message() : std::string()));
  }
  // The kernel times, printed however main returns from here on.
  struct ProfilePrinter {
    Device *device;
    ~ProfilePrinter() {
      if (device)
        std::fputs(device->profileReport().c_str(), stderr);
    }
  } profilePrinter{options.profile ? &device : nullptr};
  if (options.profile)
    device.enableProfiling();
  if (!options.traceFile.empty()) {
    // Said before the run, not after it: the file must be writable. The
    // trace is written whichever way the run ends.
    if (std::FILE *probe = std::fopen(options.traceFile.c_str(), "w"))
      std::fclose(probe);
    else
      return fail(options.traceFile + ": cannot write the trace");
    trace::start();
  }
  // The run; the trace is written whichever way it ends.
  auto runWith = [&]() -> int {
    if (options.sequentialKernels)
      cpu->setConcurrentKernels(false);
    if (options.noStepTeam)
      cpu->setStepTeam(false);
    if (!options.perplexityFile.empty())
      return runQuality(options, *artifact, *tokenizer, device, makeDevice);
    if (options.beamSearch || options.samples > 1 || !options.batchFile.empty()) {
      CatchInterrupt catching;
      return options.batchFile.empty()
                 ? runGroup(options, *artifact, *tokenizer, device, arena, &interrupted)
                 : runBatchFile(options, *artifact, *tokenizer, device, arena, &interrupted);
    }
    if (options.bench && !options.batchSizes.empty())
      return benchBatches(options, *artifact, *tokenizer, device, arena);
    if (options.bench) {
      auto lengths = benchLengths(options, config.seqLen);
      if (!lengths)
        return fail(lengths.message());
      auto report = benchmarkModel(device, config, artifact->schedule(), arena, lengths->first,
                                   lengths->second);
      if (!report)
        return fail(report.message());
      report->setWeights(artifact->weightTable());
      if (!artifact->isCuda())
        report->setWeightPages(*artifact);
      std::fputs(options.json ? report->toJson().c_str() : report->toText().c_str(), stdout);
      return 0;
    }
    CatchInterrupt catching;
    SamplerChain sampler = SamplerChain::fromParams(options.sampling, &arena);
    sampler.reserve(config.vocabSize);
    if (options.verbose) {
      std::fprintf(stderr,
                   "model: dim %d, hidden %d, %d layers, %d heads, %d kv heads, vocab %d, "
                   "context %d\n",
                   config.dim, config.hiddenDim, config.nLayers, config.nHeads, config.nKvHeads,
                   config.vocabSize, config.seqLen);
      std::fprintf(stderr, "%s\n", device.describe().c_str());
      if (!artifact->weightTable().empty())
        std::fprintf(stderr, "weights: %s\n", describeWeights(artifact->weightTable()).c_str());
      if (!artifact->isCuda())
        std::fprintf(stderr, "weights read from: %s\n", describeWeightPlacement(*artifact).c_str());
      std::fprintf(stderr, "kv cache: %s, %llu bytes per token, %llu bytes (%d positions)\n",
                   std::string(kvTypeName(config.kvType)).c_str(),
                   static_cast<unsigned long long>(config.kvBytesPerToken()),
                   static_cast<unsigned long long>(device.kvCache().bytes()),
                   device.kvCache().capacity());
      std::fprintf(stderr, "sampler: %s, seed %llu\n", sampler.describe().c_str(),
                   static_cast<unsigned long long>(options.sampling.seed));
    }

    if (isChatMode(options))
      return finish(runChat(options, *artifact, *tokenizer, device, sampler, &interrupted));

    Generator generator(device, *tokenizer, sampler, config);
    GenerationRequest request{options.prompt, options.maxNewTokens, options.stopStrings};
    request.ignoreEos = options.ignoreEos;
    request.interrupt = &interrupted;
    auto stream = [&](std::string_view piece) {
      std::fwrite(piece.data(), 1, piece.size(), stdout);
      std::fflush(stdout);
    };
    auto result = options.json ? generator.generate(request) : generator.generate(request, stream);
    if (!result)
      return fail(result.message());

    printResult(*result, options.json, singleSequenceFields(options.sampling, *tokenizer));
    return result->stop == StopReason::Interrupted ? kInterruptedExitCode : 0;
  };
  const int code = runWith();
  // The trace first: it is written whichever way the rest ends.
  if (!options.traceFile.empty())
    if (Status s = trace::stopAndWrite(options.traceFile); !s)
      return fail(s.message());
  // The measured roofline, under ceilings probed now that the run is over.
  if (!options.reportDir.empty() && device.profile() &&
      (code == 0 || code == kInterruptedExitCode)) {
    std::string command;
    for (int i = 0; i < argc; ++i)
      command += (i ? " " : "") + std::string(argv[i]);
    ProfileRun run{std::filesystem::path(options.artifactPath).filename().string(), command,
                   device.describe(), probeCeilings(device, arena)};
    if (Status s = writeProfileReport(options.reportDir, run, *device.profile()); !s)
      return fail(s.message());
  }
  return code;
}

} // namespace

int main(int argc, char **argv) {
  // Memory runs out as exceptions (an allocation, a worker thread's stack
  // under ulimit -v): one line, never an abort.
  try {
    return runQuill(argc, argv);
  } catch (const std::bad_alloc &) {
    return fail("out of memory: the address space (ulimit -v) or the machine's memory is too "
                "small for the artifact's weights, KV cache and scratch");
  } catch (const std::exception &e) {
    return fail(std::string(e.what()) +
                ": not enough memory (ulimit -v?) for the weights, the KV cache and the worker "
                "threads' stacks (fewer --threads need less)");
  }
}
