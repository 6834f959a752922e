// What the HTTP routes serve: the model, once loaded, and the engine that
// runs it. Loading happens after the socket is bound (so /health can say
// 503 meanwhile); `ready` publishes the rest to the handler threads.
#pragma once

#include "CompletionRequest.h"
#include "Engine.h"
#include "Metrics.h"
#include "ServeOptions.h"

#include "runtime/artifact/Artifact.h"
#include "runtime/chat/ChatPrompter.h"
#include "runtime/device/Device.h"

#include <atomic>
#include <memory>
#include <optional>

namespace httplib {
class Server;
}

namespace quill::serve {

struct Service {
  ServeOptions options;
  Metrics metrics;
  std::atomic<bool> ready{false};
  std::atomic<bool> stopping{false};
  int64_t created = 0; ///< When the model loaded (seconds since the epoch).
  // Set before `ready`, constant after.
  std::optional<Artifact> artifact;
  std::optional<Tokenizer> tokenizer;
  std::optional<ChatPrompter> prompter;
  std::string chatError; ///< Why chat completions cannot run, without a template.
  std::unique_ptr<Device> device;
  std::unique_ptr<PagedKVCache> cache;
  std::unique_ptr<Engine> engine;

  ModelContext model() const {
    return {*tokenizer, artifact->config(), prompter ? &*prompter : nullptr, chatError};
  }
};

/// Every endpoint: /health, /metrics, /v1/models, /v1/completions,
/// /v1/chat/completions, /tokenize, /detokenize; errors as OpenAI's.
void installRoutes(httplib::Server &server, Service &service);

} // namespace quill::serve
