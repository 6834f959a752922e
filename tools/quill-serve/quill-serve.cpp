// quill-serve: an OpenAI-compatible HTTP server over the continuous-batching
// runtime. It binds its socket first (so /health answers 503 while the
// artifact loads), then loads the model and starts the engine thread, and
// stops cleanly on SIGTERM or SIGINT: no new requests, those in flight
// finish (or, after a grace period, end with finish_reason "length").
// Links the runtime only: no LLVM, no MLIR.
#include "Service.h"

#include "runtime/device/CpuDevice.h"
#include "runtime/scheduler/BatchScheduler.h"

#include <httplib.h>
#include <tbb/info.h>
#include <tbb/task_arena.h>

#include <csignal>
#include <cstdio>
#include <cstring>
#include <thread>

using namespace quill;
using namespace quill::serve;

namespace {

int fail(const std::string &message) {
  std::fprintf(stderr, "quill-serve: %s\n", message.c_str());
  return 1;
}

/// Seconds in-flight requests get to finish after SIGTERM.
constexpr double kStopGraceSeconds = 10;

/// The model, its device, cache and engine into `s`.
Status loadModel(Service &s, tbb::task_arena &arena) {
  auto artifact = Artifact::open(s.options.artifactPath, /*verifyWeights=*/true,
                                 s.options.mmapWeights ? WeightPages::Mapped : WeightPages::Copied);
  if (!artifact)
    return artifact.status();
  s.artifact.emplace(artifact.take());
  const ModelConfig &config = s.artifact->config();
  auto tokenizer = Tokenizer::fromBytes(s.artifact->tokenizerData(), s.artifact->tokenizerSize(),
                                        config.vocabSize, s.options.artifactPath + " (tokenizer)");
  if (!tokenizer)
    return tokenizer.status();
  s.tokenizer.emplace(tokenizer.take());
  auto prompter = ChatPrompter::load(s.options.chatTemplateFile, *s.artifact, *s.tokenizer);
  if (prompter)
    s.prompter.emplace(prompter.take());
  else if (!s.options.chatTemplateFile.empty())
    return prompter.status();
  else
    s.chatError = prompter.message();
  auto device = CpuDevice::create(*s.artifact, arena);
  if (!device)
    return device.status();
  s.device = device.take();
  const BatchLayout *layout = s.device->batchLayout();
  if (!layout)
    return Status::error(
        s.options.artifactPath +
        ": the artifact has no batch step (compile it with --batch-rows N, N > 0)");
  if (s.options.batch > layout->rows)
    return Status::error("--batch " + std::to_string(s.options.batch) + " exceeds the artifact's " +
                         std::to_string(layout->rows) + " batch rows");
  int32_t sequences = s.options.batch > 0 ? s.options.batch : layout->rows;
  auto cache =
      createPagedCache(*s.device, config, uint64_t(s.options.kvBudgetMiB) << 20, sequences);
  if (!cache)
    return cache.status();
  s.cache = cache.take();
  BatchOptions options;
  options.maxSequences = sequences;
  options.arena = &arena;
  s.engine = std::make_unique<Engine>(*s.device, *s.cache, *s.tokenizer, config, options, s.metrics,
                                      s.options.maxQueue, s.options.timeoutSeconds);
  s.created = std::chrono::duration_cast<std::chrono::seconds>(
                  std::chrono::system_clock::now().time_since_epoch())
                  .count();
  return Status::ok();
}

int runServer(int argc, char **argv) {
  auto parsed = parseServeOptions(argc, argv);
  if (!parsed)
    return fail(parsed.message());
  if (parsed->help) {
    std::fputs(serveUsage(), stdout);
    return 0;
  }
  // Signals reach only sigwait() below: every thread started from here on
  // inherits the mask. A write to a closed connection is an error, not a
  // SIGPIPE.
  std::signal(SIGPIPE, SIG_IGN);
  sigset_t stopSignals;
  sigemptyset(&stopSignals);
  sigaddset(&stopSignals, SIGTERM);
  sigaddset(&stopSignals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stopSignals, nullptr);

  Service s;
  s.options = parsed.take();
  httplib::Server server;
  // A thread per connection in flight: every queued request holds one.
  const size_t threads = size_t(s.options.maxQueue) + 96;
  server.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  server.set_payload_max_length(size_t(s.options.maxBodyBytes));
  server.set_tcp_nodelay(true);
  server.set_read_timeout(30);
  // A client that stops reading fails its writes after this; its request is
  // then cancelled.
  server.set_write_timeout(30);
  installRoutes(server, s);
  int port = s.options.port;
  bool bound = port == 0 ? (port = server.bind_to_any_port(s.options.host)) > 0
                         : server.bind_to_port(s.options.host, port);
  if (!bound)
    return fail("cannot listen on " + s.options.host + ":" + std::to_string(s.options.port) + ": " +
                std::strerror(errno));
  std::fprintf(stderr, "quill-serve: listening on http://%s:%d\n", s.options.host.c_str(), port);
  std::thread http([&] { server.listen_after_bind(); });

  int threadsForKernels =
      s.options.threads > 0 ? s.options.threads : tbb::info::default_concurrency();
  tbb::task_arena arena(threadsForKernels);
  if (Status loaded = loadModel(s, arena); !loaded) {
    server.stop();
    http.join();
    return fail(loaded.message());
  }
  std::thread engine([&] { s.engine->run(); });
  s.ready = true;
  std::fprintf(stderr, "quill-serve: ready (model %s, %d sequences at once, %d KV blocks)\n",
               s.options.modelName.c_str(),
               s.options.batch > 0 ? s.options.batch : s.device->batchLayout()->rows,
               s.cache->totalBlocks());

  int signal = 0;
  sigwait(&stopSignals, &signal);
  std::fprintf(stderr, "quill-serve: %s: finishing the requests in flight\n",
               signal == SIGTERM ? "SIGTERM" : "SIGINT");
  s.stopping = true;
  s.engine->stop(kStopGraceSeconds);
  engine.join();
  server.stop();
  http.join();
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  try {
    return runServer(argc, argv);
  } catch (const std::bad_alloc &) {
    return fail("out of memory");
  } catch (const std::exception &e) {
    return fail(e.what());
  }
}
