// The HTTP endpoints over cpp-httplib (Debian's libcpp-httplib-dev).
#include "Service.h"

#include "ApiJson.h"
#include "PeerWatch.h"

#include "runtime/support/Utf8.h"

#include <httplib.h>

#include <random>

namespace quill::serve {

namespace {

constexpr auto kPoll = std::chrono::milliseconds(200);
/// An idle stream gets an SSE comment this often: clients ignore it, and a
/// write to a closed connection fails.
constexpr auto kKeepAlive = std::chrono::seconds(5);

void reply(httplib::Response &res, const ApiError &error) {
  res.status = error.status;
  if (error.status == 429 || error.status == 503)
    res.set_header("Retry-After", "1");
  res.set_content(errorJson(error), "application/json");
}

void replyJson(httplib::Response &res, const json &body) {
  res.status = 200;
  res.set_content(dumpJson(body), "application/json");
}

std::optional<ApiError> notReady(const Service &s) {
  if (s.stopping)
    return ApiError{503, "the server is shutting down", "server_error", "", "shutting_down"};
  if (!s.ready)
    return ApiError{503, "the model is loading", "server_error", "", "loading"};
  return std::nullopt;
}

std::optional<ApiError> unauthorized(const Service &s, const httplib::Request &req) {
  if (s.options.apiKey.empty())
    return std::nullopt;
  std::string header = req.get_header_value("Authorization");
  const std::string expected = "Bearer " + s.options.apiKey;
  // Compared in full whatever the first difference, to leak no timing.
  bool same = header.size() == expected.size();
  unsigned char diff = 0;
  for (size_t i = 0; i < header.size() && i < expected.size(); ++i)
    diff |= static_cast<unsigned char>(header[i] ^ expected[i]);
  if (same && diff == 0)
    return std::nullopt;
  return ApiError{401,
                  header.empty() ? "missing API key: send 'Authorization: Bearer KEY'"
                                 : "incorrect API key provided",
                  "invalid_request_error", "", "invalid_api_key"};
}

/// A guard for routes that need the model (and the key).
std::optional<ApiError> gate(const Service &s, const httplib::Request &req) {
  if (auto e = unauthorized(s, req))
    return e;
  return notReady(s);
}

std::string responseId(bool chat) {
  static thread_local std::mt19937_64 random{std::random_device{}()};
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%016llx", static_cast<unsigned long long>(random()));
  return std::string(chat ? "chatcmpl-" : "cmpl-") + buffer;
}

int64_t secondsSinceEpoch() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

/// Every choice's deltas joined: its whole text, tokens and logprobs.
std::vector<ChoiceDelta> mergeChoices(const std::vector<ChoiceDelta> &deltas, size_t choices) {
  std::vector<ChoiceDelta> whole(choices);
  for (size_t c = 0; c < choices; ++c)
    whole[c].choice = int32_t(c);
  for (const ChoiceDelta &d : deltas) {
    ChoiceDelta &w = whole[size_t(d.choice)];
    if (w.tokens.empty() && !d.tokens.empty())
      w.previousToken = d.previousToken;
    w.text += d.text;
    w.tokens.insert(w.tokens.end(), d.tokens.begin(), d.tokens.end());
    w.logprobs.insert(w.logprobs.end(), d.logprobs.begin(), d.logprobs.end());
    if (!d.finishReason.empty())
      w.finishReason = d.finishReason;
  }
  return whole;
}

/// Waits for the exchange to have news (or end); false (after cancelling it)
/// when the client left first.
bool waitOrCancel(Service &s, Exchange &x, PeerWatch &watch) {
  x.waitUntil(Clock::now() + kPoll);
  if (!watch.closed())
    return true;
  x.requestCancel();
  s.engine->wake();
  return false;
}

/// What a stream's writer keeps between chunks.
struct StreamState {
  std::shared_ptr<Exchange> exchange;
  std::vector<ChoiceDelta> early; ///< Deltas read before the headers went out.
  PeerWatch watch;
  ResponseHeader header;
  bool logprobs = false, includeUsage = false;
  std::vector<char> started;        ///< Per choice: its first chunk went out.
  std::vector<int64_t> textOffsets; ///< Per choice: bytes of text sent.
};

bool writeEvent(httplib::DataSink &sink, const std::string &data) {
  std::string event = "data: " + data + "\n\n";
  return sink.write(event.data(), event.size());
}

/// The SSE body: chunks as deltas arrive, the usage, then [DONE].
bool streamChunks(Service &s, StreamState &st, httplib::DataSink &sink) {
  Exchange &x = *st.exchange;
  auto lastWrite = Clock::now();
  auto send = [&](const std::vector<ChoiceDelta> &deltas) {
    for (const ChoiceDelta &d : deltas) {
      size_t c = size_t(d.choice);
      json chunk =
          chunkJson(st.header, d, st.logprobs, !st.started[c], *s.tokenizer, st.textOffsets[c]);
      st.started[c] = 1;
      st.textOffsets[c] += int64_t(d.text.size());
      if (!writeEvent(sink, dumpJson(chunk)))
        return false;
    }
    if (!deltas.empty())
      lastWrite = Clock::now();
    return true;
  };
  auto leave = [&] {
    x.requestCancel();
    s.engine->wake();
    return false;
  };
  if (!send(std::exchange(st.early, {})))
    return leave();
  for (;;) {
    bool finished = x.finished();
    if (!send(x.drain()))
      return leave();
    if (finished) {
      std::optional<ApiError> error = x.error();
      if (error && error->status != 499 && !writeEvent(sink, errorJson(*error)))
        return false;
      if (st.includeUsage && !writeEvent(sink, dumpJson(usageChunkJson(st.header, x.usage()))))
        return false;
      if (!writeEvent(sink, "[DONE]"))
        return false;
      sink.done();
      return true;
    }
    if (Clock::now() - lastWrite > kKeepAlive) {
      static const std::string comment = ": keep-alive\n\n";
      if (!sink.write(comment.data(), comment.size()))
        return leave();
      lastWrite = Clock::now();
    }
    if (!waitOrCancel(s, x, st.watch))
      return false;
  }
}

void handleCompletion(Service &s, const httplib::Request &req, httplib::Response &res, bool chat) {
  if (auto e = gate(s, req))
    return reply(res, *e);
  auto parsed = parseCompletionRequest(req.body, chat, s.model());
  if (auto *e = std::get_if<ApiError>(&parsed))
    return reply(res, *e);
  CompletionSpec spec = std::get<CompletionSpec>(std::move(parsed));
  if (auto e = s.engine->check(spec))
    return reply(res, *e);
  const size_t choices = spec.prompts.size() * size_t(spec.n);
  const bool stream = spec.stream, logprobs = spec.logprobs, includeUsage = spec.includeUsage;
  auto started = s.engine->start(std::move(spec));
  if (auto *e = std::get_if<ApiError>(&started))
    return reply(res, *e);
  std::shared_ptr<Exchange> x = std::get<std::shared_ptr<Exchange>>(started);
  PeerWatch watch(req.remote_addr, req.remote_port, req.local_port);
  ResponseHeader header{chat, responseId(chat), secondsSinceEpoch(), s.options.modelName};
  if (!stream) {
    std::vector<ChoiceDelta> deltas;
    while (!x->finished()) {
      if (!waitOrCancel(s, *x, watch)) {
        res.status = 499; // nginx's "client closed request", for the log and metrics.
        return;
      }
      for (ChoiceDelta &d : x->drain())
        deltas.push_back(std::move(d));
    }
    for (ChoiceDelta &d : x->drain())
      deltas.push_back(std::move(d));
    if (auto e = x->error())
      return reply(res, *e);
    return replyJson(res, completionJson(header, mergeChoices(deltas, choices), logprobs,
                                         x->usage(), *s.tokenizer));
  }
  // The status goes out with the headers: wait for the first token, or the
  // error that comes instead.
  std::vector<ChoiceDelta> early;
  while (early.empty() && !x->finished()) {
    if (!waitOrCancel(s, *x, watch)) {
      res.status = 499;
      return;
    }
    early = x->drain();
  }
  if (early.empty()) {
    early = x->drain();
    bool anyToken = false;
    for (const ChoiceDelta &d : early)
      anyToken = anyToken || !d.tokens.empty();
    if (auto e = x->error(); e && !anyToken)
      return reply(res, *e);
  }
  auto state = std::make_shared<StreamState>(
      StreamState{x, std::move(early), watch, header, logprobs, includeUsage,
                  std::vector<char>(choices, 0), std::vector<int64_t>(choices, 0)});
  res.status = 200;
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no"); // nginx: pass the events on at once.
  res.set_chunked_content_provider(
      "text/event-stream",
      [&s, state](size_t, httplib::DataSink &sink) { return streamChunks(s, *state, sink); });
}

/// A JSON object body, or the 400 to answer.
std::variant<json, ApiError> objectBody(const httplib::Request &req) {
  if (nestsTooDeep(req.body, 64))
    return badRequest("the request body nests deeper than 64 levels");
  json body = json::parse(req.body, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded() || !body.is_object())
    return badRequest("the request body must be a JSON object (valid UTF-8)");
  return body;
}

void handleTokenize(Service &s, const httplib::Request &req, httplib::Response &res) {
  if (auto e = gate(s, req))
    return reply(res, *e);
  auto parsed = objectBody(req);
  if (auto *e = std::get_if<ApiError>(&parsed))
    return reply(res, *e);
  json &body = std::get<json>(parsed);
  if (!body.contains("content") || !body["content"].is_string())
    return reply(res, badRequest("'content' must be a string", "content"));
  for (const char *key : {"add_special", "with_pieces"})
    if (body.contains(key) && !body[key].is_boolean())
      return reply(res, badRequest(std::string("'") + key + "' must be true or false", key));
  const ModelConfig &config = s.artifact->config();
  bool addSpecial = body.value("add_special", false);
  bool withPieces = body.value("with_pieces", false);
  std::vector<int32_t> ids = s.tokenizer->encode(body["content"].get<std::string>(),
                                                 addSpecial && config.addBos, /*addEos=*/false);
  json tokens = json::array();
  int32_t previous = config.bosId;
  for (int32_t id : ids) {
    if (!withPieces) {
      tokens.push_back(id);
      continue;
    }
    std::string piece = s.tokenizer->decode(previous, id);
    json p = json::array();
    if (firstIllFormedUtf8(piece) == std::string::npos)
      p = piece;
    else
      for (unsigned char b : piece)
        p.push_back(int(b));
    tokens.push_back({{"id", id}, {"piece", p}});
    previous = id;
  }
  replyJson(res, {{"tokens", tokens}});
}

void handleDetokenize(Service &s, const httplib::Request &req, httplib::Response &res) {
  if (auto e = gate(s, req))
    return reply(res, *e);
  auto parsed = objectBody(req);
  if (auto *e = std::get_if<ApiError>(&parsed))
    return reply(res, *e);
  json &body = std::get<json>(parsed);
  if (!body.contains("tokens") || !body["tokens"].is_array())
    return reply(res, badRequest("'tokens' must be a list of token ids", "tokens"));
  const ModelConfig &config = s.artifact->config();
  Utf8Stream text;
  std::string content;
  int32_t previous = config.bosId;
  for (const json &t : body["tokens"]) {
    if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() >= config.vocabSize)
      return reply(res, badRequest("'tokens' must be token ids from 0 to " +
                                       std::to_string(config.vocabSize - 1),
                                   "tokens"));
    int32_t id = t.get<int32_t>();
    content += text.push(s.tokenizer->decode(previous, id));
    previous = id;
  }
  content += text.finish();
  replyJson(res, {{"content", content}});
}

} // namespace

void installRoutes(httplib::Server &server, Service &s) {
  server.Get("/health", [&s](const httplib::Request &, httplib::Response &res) {
    if (s.ready && !s.stopping)
      return replyJson(res, {{"status", "ok"}});
    res.status = 503;
    res.set_header("Retry-After", "1");
    res.set_content(dumpJson({{"status", s.stopping ? "stopping" : "loading"}}),
                    "application/json");
  });
  server.Get("/metrics", [&s](const httplib::Request &req, httplib::Response &res) {
    if (auto e = unauthorized(s, req))
      return reply(res, *e);
    res.set_content(s.metrics.text(), "text/plain; version=0.0.4");
  });
  server.Get("/v1/models", [&s](const httplib::Request &req, httplib::Response &res) {
    if (auto e = gate(s, req))
      return reply(res, *e);
    json model = {{"id", s.options.modelName},
                  {"object", "model"},
                  {"created", s.created},
                  {"owned_by", "quill"}};
    replyJson(res, {{"object", "list"}, {"data", json::array({model})}});
  });
  server.Post("/v1/completions", [&s](const httplib::Request &req, httplib::Response &res) {
    handleCompletion(s, req, res, /*chat=*/false);
  });
  server.Post("/v1/chat/completions", [&s](const httplib::Request &req, httplib::Response &res) {
    handleCompletion(s, req, res, /*chat=*/true);
  });
  server.Post("/tokenize", [&s](const httplib::Request &req, httplib::Response &res) {
    handleTokenize(s, req, res);
  });
  server.Post("/detokenize", [&s](const httplib::Request &req, httplib::Response &res) {
    handleDetokenize(s, req, res);
  });
  // Statuses the library sets itself (404, 413, 400 on a broken request)
  // get an OpenAI error object too.
  server.set_error_handler(
      httplib::Server::HandlerWithResponse([](const httplib::Request &req, httplib::Response &res) {
        if (!res.body.empty())
          return httplib::Server::HandlerResponse::Handled;
        ApiError error{res.status, "", "invalid_request_error", "", ""};
        if (res.status == 404)
          error.message = "no route " + req.method + " " + req.path;
        else if (res.status == 413)
          error.message = "the request body is too large";
        else
          error.message = "the request could not be read (HTTP " + std::to_string(res.status) + ")";
        res.set_content(errorJson(error), "application/json");
        return httplib::Server::HandlerResponse::Handled;
      }));
  server.set_exception_handler(
      [](const httplib::Request &, httplib::Response &res, std::exception_ptr ep) {
        std::string what = "internal error";
        try {
          std::rethrow_exception(ep);
        } catch (const std::exception &e) {
          what = std::string("internal error: ") + e.what();
        } catch (...) {
        }
        reply(res, ApiError{500, what, "server_error", "", ""});
      });
  server.set_logger([&s](const httplib::Request &req, const httplib::Response &res) {
    s.metrics.countRequest(res.status);
    if (s.options.verbose)
      std::fprintf(stderr, "quill-serve: %s %s -> %d\n", req.method.c_str(), req.path.c_str(),
                   res.status);
  });
}

} // namespace quill::serve
