// Checking an OpenAI completion request field by field (nlohmann::json, a
// maintained parser, reads the body from the network).
#include "CompletionRequest.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <random>

namespace quill::serve {

using json = nlohmann::json;

namespace {

bool present(const json &body, const char *key) {
  auto it = body.find(key);
  return it != body.end() && !it->is_null();
}

/// The named field as a number within [low, high] into `out`; absent or
/// null leaves `out` alone.
std::optional<ApiError> readNumber(const json &body, const char *key, double low, double high,
                                   float &out) {
  if (!present(body, key))
    return std::nullopt;
  const json &v = body[key];
  if (!v.is_number())
    return badRequest(std::string("'") + key + "' must be a number", key);
  double x = v.get<double>();
  if (!std::isfinite(x) || x < low || x > high)
    return badRequest(std::string("'") + key + "' must be from " + formatParam(float(low)) +
                          " to " + formatParam(float(high)),
                      key);
  out = static_cast<float>(x);
  return std::nullopt;
}

std::optional<ApiError> readInteger(const json &body, const char *key, int64_t low, int64_t high,
                                    int64_t &out) {
  if (!present(body, key))
    return std::nullopt;
  const json &v = body[key];
  if (!v.is_number_integer() &&
      !(v.is_number_float() && v.get<double>() == std::floor(v.get<double>())))
    return badRequest(std::string("'") + key + "' must be an integer", key);
  double x = v.get<double>();
  if (x < double(low) || x > double(high))
    return badRequest(std::string("'") + key + "' must be from " + std::to_string(low) + " to " +
                          std::to_string(high),
                      key);
  out = v.is_number_integer() ? v.get<int64_t>() : static_cast<int64_t>(x);
  return std::nullopt;
}

std::optional<ApiError> readBool(const json &body, const char *key, bool &out) {
  if (!present(body, key))
    return std::nullopt;
  if (!body[key].is_boolean())
    return badRequest(std::string("'") + key + "' must be true or false", key);
  out = body[key].get<bool>();
  return std::nullopt;
}

/// A prompt given as token ids: each within the vocabulary.
std::variant<std::vector<int32_t>, ApiError> tokenIds(const json &list, const ModelContext &model) {
  std::vector<int32_t> ids;
  for (const json &t : list) {
    if (!t.is_number_integer() || t.get<int64_t>() < 0 ||
        t.get<int64_t>() >= model.config.vocabSize)
      return badRequest("'prompt' token ids must be integers from 0 to " +
                            std::to_string(model.config.vocabSize - 1),
                        "prompt");
    ids.push_back(t.get<int32_t>());
  }
  if (ids.empty())
    return badRequest("'prompt' has an empty list of token ids", "prompt");
  return ids;
}

/// /v1/completions' prompt: a string, a list of strings, a list of token
/// ids, or a list of such lists.
std::optional<ApiError> readPrompts(const json &body, const ModelContext &model,
                                    CompletionSpec &spec) {
  if (!present(body, "prompt"))
    return badRequest("'prompt' is required", "prompt");
  const json &p = body["prompt"];
  auto text = [&](const std::string &s) {
    spec.prompts.push_back(model.tokenizer.encode(s, model.config.addBos, /*addEos=*/false));
  };
  if (p.is_string()) {
    text(p.get<std::string>());
    return std::nullopt;
  }
  if (!p.is_array() || p.empty())
    return badRequest("'prompt' must be a string, a list of strings or a list of token ids",
                      "prompt");
  if (p[0].is_number()) {
    auto ids = tokenIds(p, model);
    if (auto *e = std::get_if<ApiError>(&ids))
      return *e;
    spec.prompts.push_back(std::get<std::vector<int32_t>>(std::move(ids)));
    return std::nullopt;
  }
  if (p.size() > size_t(kMaxPrompts))
    return badRequest("'prompt' has more than " + std::to_string(kMaxPrompts) + " prompts",
                      "prompt");
  for (const json &item : p) {
    if (item.is_string()) {
      text(item.get<std::string>());
    } else if (item.is_array()) {
      auto ids = tokenIds(item, model);
      if (auto *e = std::get_if<ApiError>(&ids))
        return *e;
      spec.prompts.push_back(std::get<std::vector<int32_t>>(std::move(ids)));
    } else {
      return badRequest("'prompt' must be a string, a list of strings or a list of token ids",
                        "prompt");
    }
  }
  return std::nullopt;
}

/// A message's content for the template: a string, or its text parts joined.
std::optional<ApiError> flattenContent(json &message) {
  auto it = message.find("content");
  if (it == message.end() || it->is_null() || it->is_string())
    return std::nullopt;
  if (!it->is_array())
    return badRequest("a message's 'content' must be a string or a list of parts", "messages");
  std::string text;
  for (const json &part : *it) {
    if (!part.is_object() || part.value("type", "") != "text" || !part.contains("text") ||
        !part["text"].is_string())
      return badRequest("only text content parts ({\"type\":\"text\",\"text\":...}) are supported",
                        "messages");
    text += part["text"].get<std::string>();
  }
  *it = text;
  return std::nullopt;
}

/// /v1/chat/completions' messages, rendered with the chat template.
std::optional<ApiError> readMessages(const json &body, const ModelContext &model,
                                     CompletionSpec &spec) {
  if (!present(body, "messages") || !body["messages"].is_array())
    return badRequest("'messages' must be a list of messages", "messages");
  if (body["messages"].empty())
    return badRequest("'messages' must not be empty", "messages");
  json input = json::object();
  input["messages"] = body["messages"];
  for (json &m : input["messages"]) {
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string())
      return badRequest("each message must be an object with a string 'role'", "messages");
    if (auto e = flattenContent(m))
      return e;
  }
  if (present(body, "tools"))
    input["tools"] = body["tools"];
  if (present(body, "chat_template_kwargs")) {
    if (!body["chat_template_kwargs"].is_object())
      return badRequest("'chat_template_kwargs' must be an object", "chat_template_kwargs");
    for (auto &[key, value] : body["chat_template_kwargs"].items())
      if (key != "messages" && key != "tools")
        input[key] = value;
  }
  if (!model.prompter)
    return badRequest(model.chatError, "messages", "no_chat_template");
  auto parsed = parseChatRequest(input.dump());
  if (!parsed)
    return badRequest(parsed.message(), "messages");
  auto text = model.prompter->render(parsed.take());
  if (!text)
    return badRequest("the chat template failed: " + text.message(), "messages");
  spec.prompts.push_back(model.tokenizer.encodeChat(*text));
  return std::nullopt;
}

std::optional<ApiError> readStops(const json &body, CompletionSpec &spec) {
  if (!present(body, "stop"))
    return std::nullopt;
  const json &s = body["stop"];
  auto add = [&](const json &item) -> std::optional<ApiError> {
    if (!item.is_string() || item.get<std::string>().empty())
      return badRequest("'stop' must be a non-empty string or a list of them", "stop");
    spec.stop.push_back(item.get<std::string>());
    return std::nullopt;
  };
  if (!s.is_array())
    return add(s);
  if (s.size() > size_t(kMaxStops))
    return badRequest("'stop' has more than " + std::to_string(kMaxStops) + " strings", "stop");
  for (const json &item : s)
    if (auto e = add(item))
      return e;
  return std::nullopt;
}

std::optional<ApiError> readLogitBias(const json &body, const ModelContext &model,
                                      SamplingParams &params) {
  if (!present(body, "logit_bias"))
    return std::nullopt;
  const json &b = body["logit_bias"];
  if (!b.is_object())
    return badRequest("'logit_bias' must be an object of token id -> bias", "logit_bias");
  for (auto &[key, value] : b.items()) {
    char *end = nullptr;
    long id = std::strtol(key.c_str(), &end, 10);
    if (key.empty() || *end != '\0' || id < 0 || id >= model.config.vocabSize)
      return badRequest("'logit_bias' key '" + key + "' is not a token id from 0 to " +
                            std::to_string(model.config.vocabSize - 1),
                        "logit_bias");
    if (!value.is_number() || !std::isfinite(value.get<double>()) ||
        std::fabs(value.get<double>()) > 100)
      return badRequest("'logit_bias' values must be numbers from -100 to 100", "logit_bias");
    params.logitBias.push_back({int32_t(id), value.get<float>()});
  }
  return std::nullopt;
}

std::optional<ApiError> readLogprobs(const json &body, CompletionSpec &spec) {
  int64_t top = 0;
  if (spec.chat) {
    if (auto e = readBool(body, "logprobs", spec.logprobs))
      return e;
    if (auto e = readInteger(body, "top_logprobs", 0, kMaxTopLogprobs, top))
      return e;
    if (top > 0 && !spec.logprobs)
      return badRequest("'top_logprobs' needs 'logprobs': true", "top_logprobs");
  } else if (present(body, "logprobs")) {
    // The legacy API: an integer, the alternatives to list.
    if (auto e = readInteger(body, "logprobs", 0, kMaxTopLogprobs, top))
      return e;
    spec.logprobs = true;
  }
  spec.topLogprobs = static_cast<int32_t>(top);
  spec.sampling.logprobs = spec.logprobs;
  spec.sampling.topLogprobs = spec.topLogprobs;
  return std::nullopt;
}

std::optional<ApiError> readSampling(const json &body, const ModelContext &model,
                                     CompletionSpec &spec) {
  SamplingParams &p = spec.sampling;
  p.temperature = 1.0f;
  p.topP = 1.0f;
  if (auto e = readNumber(body, "temperature", 0, 100, p.temperature))
    return e;
  if (auto e = readNumber(body, "top_p", 0, 1, p.topP))
    return e;
  if (p.topP <= 0)
    return badRequest("'top_p' must be in (0, 1]", "top_p");
  if (auto e = readNumber(body, "min_p", 0, 1, p.minP))
    return e;
  int64_t topK = 0;
  if (auto e = readInteger(body, "top_k", -1, model.config.vocabSize, topK))
    return e;
  p.topK = topK < 0 ? 0 : int32_t(topK); // -1: off, as vLLM spells it.
  if (auto e = readNumber(body, "presence_penalty", -2, 2, p.presencePenalty))
    return e;
  if (auto e = readNumber(body, "frequency_penalty", -2, 2, p.frequencyPenalty))
    return e;
  if (auto e = readNumber(body, "repetition_penalty", 1e-3, 100, p.repeatPenalty))
    return e;
  int64_t lastN = p.repeatLastN;
  if (auto e = readInteger(body, "repeat_last_n", 0, model.config.seqLen, lastN))
    return e;
  p.repeatLastN = int32_t(lastN);
  if (auto e = readLogitBias(body, model, p))
    return e;
  if (present(body, "seed")) {
    if (!body["seed"].is_number_integer())
      return badRequest("'seed' must be an integer", "seed");
    p.seed = body["seed"].is_number_unsigned() ? body["seed"].get<uint64_t>()
                                               : uint64_t(body["seed"].get<int64_t>());
  } else {
    static thread_local std::mt19937_64 random{std::random_device{}()};
    p.seed = random();
  }
  if (Status s = validate(p); !s)
    return badRequest(s.message());
  return std::nullopt;
}

} // namespace

bool nestsTooDeep(const std::string &body, int maxDepth) {
  int depth = 0;
  bool inString = false;
  for (size_t i = 0; i < body.size(); ++i) {
    char c = body[i];
    if (inString) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        inString = false;
    } else if (c == '"') {
      inString = true;
    } else if (c == '[' || c == '{') {
      if (++depth > maxDepth)
        return true;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return false;
}

std::variant<CompletionSpec, ApiError> parseCompletionRequest(const std::string &body, bool chat,
                                                              const ModelContext &model) {
  if (nestsTooDeep(body, 64))
    return badRequest("the request body nests deeper than 64 levels");
  json parsed = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded())
    return badRequest("the request body is not valid JSON (or not valid UTF-8)");
  if (!parsed.is_object())
    return badRequest("the request body must be a JSON object");
  CompletionSpec spec;
  spec.chat = chat;
  if (present(parsed, "model") && !parsed["model"].is_string())
    return badRequest("'model' must be a string", "model");
  if (auto e = readBool(parsed, "stream", spec.stream))
    return *e;
  if (present(parsed, "stream_options")) {
    if (!parsed["stream_options"].is_object())
      return badRequest("'stream_options' must be an object", "stream_options");
    if (auto e = readBool(parsed["stream_options"], "include_usage", spec.includeUsage))
      return *e;
  }
  int64_t n = 1;
  if (auto e = readInteger(parsed, "n", 1, kMaxChoices, n))
    return *e;
  spec.n = int32_t(n);
  for (const char *key : {"max_tokens", "max_completion_tokens"}) {
    int64_t value = 0;
    if (!present(parsed, key))
      continue;
    if (auto e = readInteger(parsed, key, 0, int64_t(1) << 30, value))
      return *e;
    spec.maxTokens = int32_t(std::min<int64_t>(value, model.config.seqLen));
  }
  if (auto e = readBool(parsed, "ignore_eos", spec.ignoreEos))
    return *e;
  if (auto e = readStops(parsed, spec))
    return *e;
  if (auto e = readSampling(parsed, model, spec))
    return *e;
  if (auto e = readLogprobs(parsed, spec))
    return *e;
  if (auto e = chat ? readMessages(parsed, model, spec) : readPrompts(parsed, model, spec))
    return *e;
  for (const auto &prompt : spec.prompts)
    if (int32_t(prompt.size()) > model.config.seqLen)
      return badRequest("the prompt has " + std::to_string(prompt.size()) +
                            " tokens but the model's context holds " +
                            std::to_string(model.config.seqLen),
                        chat ? "messages" : "prompt", "context_length_exceeded");
  return spec;
}

} // namespace quill::serve
