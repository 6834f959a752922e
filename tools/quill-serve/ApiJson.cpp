// Building the OpenAI response objects.
#include "ApiJson.h"

#include "ApiError.h"

#include "runtime/support/Utf8.h"

#include <cmath>

namespace quill::serve {

std::string dumpJson(const json &value) {
  return value.dump(-1, ' ', /*ensure_ascii=*/false, json::error_handler_t::replace);
}

std::string errorJson(const ApiError &error) {
  json body = {{"error",
                {{"message", error.message},
                 {"type", error.type},
                 {"param", error.param.empty() ? json(nullptr) : json(error.param)},
                 {"code", error.code.empty() ? json(nullptr) : json(error.code)}}}};
  return dumpJson(body);
}

namespace {

/// JSON has no -inf: an impossible token's logprob reads -9999, as OpenAI's.
double finiteLogprob(float logprob) { return std::isfinite(logprob) ? logprob : -9999.0; }

std::string wellFormed(const std::string &bytes) {
  Utf8Stream stream;
  return stream.push(bytes) + stream.finish();
}

json byteList(const std::string &bytes) {
  json list = json::array();
  for (unsigned char b : bytes)
    list.push_back(int(b));
  return list;
}

json chatLogprobs(const ChoiceDelta &delta, const Tokenizer &tokenizer) {
  json content = json::array();
  for (size_t i = 0; i < delta.logprobs.size(); ++i) {
    const StepLogprobs &step = delta.logprobs[i];
    int32_t previous = i == 0 ? delta.previousToken : delta.tokens[i - 1];
    auto entry = [&](int32_t token, float logprob) {
      std::string bytes = tokenizer.decode(previous, token);
      return json{{"token", wellFormed(bytes)},
                  {"logprob", finiteLogprob(logprob)},
                  {"bytes", byteList(bytes)}};
    };
    json item = entry(step.token, step.logprob);
    json top = json::array();
    for (const TokenLogprob &alt : step.top)
      top.push_back(entry(alt.token, alt.logprob));
    item["top_logprobs"] = std::move(top);
    content.push_back(std::move(item));
  }
  return {{"content", std::move(content)}};
}

json legacyLogprobs(const ChoiceDelta &delta, const Tokenizer &tokenizer, int64_t textOffset) {
  json tokens = json::array(), values = json::array(), tops = json::array(),
       offsets = json::array();
  for (size_t i = 0; i < delta.logprobs.size(); ++i) {
    const StepLogprobs &step = delta.logprobs[i];
    int32_t previous = i == 0 ? delta.previousToken : delta.tokens[i - 1];
    std::string bytes = tokenizer.decode(previous, step.token);
    tokens.push_back(wellFormed(bytes));
    values.push_back(finiteLogprob(step.logprob));
    json top = json::object();
    for (const TokenLogprob &alt : step.top)
      top[wellFormed(tokenizer.decode(previous, alt.token))] = finiteLogprob(alt.logprob);
    tops.push_back(std::move(top));
    offsets.push_back(textOffset);
    textOffset += int64_t(bytes.size());
  }
  return {{"tokens", std::move(tokens)},
          {"token_logprobs", std::move(values)},
          {"top_logprobs", std::move(tops)},
          {"text_offset", std::move(offsets)}};
}

json finishJson(const ChoiceDelta &delta) {
  return delta.finishReason.empty() ? json(nullptr) : json(delta.finishReason);
}

json headerJson(const ResponseHeader &header, bool chunk) {
  const char *object =
      header.chat ? (chunk ? "chat.completion.chunk" : "chat.completion") : "text_completion";
  return {{"id", header.id},
          {"object", object},
          {"created", header.created},
          {"model", header.model},
          {"system_fingerprint", "quill"}};
}

} // namespace

json logprobsJson(bool chat, const ChoiceDelta &delta, const Tokenizer &tokenizer,
                  int64_t textOffset) {
  return chat ? chatLogprobs(delta, tokenizer) : legacyLogprobs(delta, tokenizer, textOffset);
}

json usageJson(const Usage &usage) {
  return {{"prompt_tokens", usage.promptTokens},
          {"completion_tokens", usage.completionTokens},
          {"total_tokens", usage.promptTokens + usage.completionTokens}};
}

json chunkJson(const ResponseHeader &header, const ChoiceDelta &delta, bool withLogprobs,
               bool firstOfChoice, const Tokenizer &tokenizer, int64_t textOffset) {
  json choice = {{"index", delta.choice}, {"finish_reason", finishJson(delta)}};
  if (header.chat) {
    json d = json::object();
    if (firstOfChoice)
      d["role"] = "assistant";
    if (!delta.text.empty() || delta.finishReason.empty())
      d["content"] = delta.text;
    choice["delta"] = std::move(d);
  } else {
    choice["text"] = delta.text;
  }
  choice["logprobs"] = withLogprobs && !delta.logprobs.empty()
                           ? logprobsJson(header.chat, delta, tokenizer, textOffset)
                           : json(nullptr);
  json out = headerJson(header, /*chunk=*/true);
  out["choices"] = json::array({std::move(choice)});
  return out;
}

json usageChunkJson(const ResponseHeader &header, const Usage &usage) {
  json out = headerJson(header, /*chunk=*/true);
  out["choices"] = json::array();
  out["usage"] = usageJson(usage);
  return out;
}

json completionJson(const ResponseHeader &header, const std::vector<ChoiceDelta> &choices,
                    bool withLogprobs, const Usage &usage, const Tokenizer &tokenizer) {
  json list = json::array();
  for (const ChoiceDelta &c : choices) {
    json choice = {{"index", c.choice}, {"finish_reason", finishJson(c)}};
    if (header.chat)
      choice["message"] = {{"role", "assistant"}, {"content", c.text}};
    else
      choice["text"] = c.text;
    choice["logprobs"] = withLogprobs ? logprobsJson(header.chat, c, tokenizer, 0) : json(nullptr);
    list.push_back(std::move(choice));
  }
  json out = headerJson(header, /*chunk=*/false);
  out["choices"] = std::move(list);
  out["usage"] = usageJson(usage);
  return out;
}

} // namespace quill::serve
