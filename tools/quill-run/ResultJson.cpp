// A generation result as JSON.
#include "ResultJson.h"

#include "runtime/support/Json.h"

#include <cmath>
#include <cstdio>
#include <sstream>

namespace quill {

namespace {

std::string jsonIds(const std::vector<int32_t> &ids) {
  std::string out = "[";
  for (size_t i = 0; i < ids.size(); ++i)
    out += (i ? "," : "") + std::to_string(ids[i]);
  return out + "]";
}

/// A log-probability as a JSON number; JSON has no -inf, so an impossible
/// token (which the sampler never picks) would read null.
std::string jsonLogprob(float value) {
  if (!std::isfinite(value))
    return "null";
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.7g", static_cast<double>(value));
  return buffer;
}

/// "bytes":[B,...]: what `token` decodes to after `previous`.
std::string jsonBytes(const Tokenizer &tokenizer, int32_t previous, int32_t token) {
  std::string out = ",\"bytes\":[";
  std::string piece = tokenizer.decode(previous, token);
  for (size_t i = 0; i < piece.size(); ++i)
    out += (i ? "," : "") + std::to_string(static_cast<unsigned char>(piece[i]));
  return out + "]";
}

/// [{"token":ID,"bytes":[...],"logprob":X,"top":[{"token":ID,"bytes":[...],
/// "logprob":X},...]},...]; step i follows tokens[i - 1] (the prompt's last
/// token for the first).
std::string jsonLogprobs(const std::vector<StepLogprobs> &steps, const std::vector<int32_t> &tokens,
                         int32_t first, const Tokenizer *tokenizer) {
  std::string out = "[";
  for (size_t i = 0; i < steps.size(); ++i) {
    const StepLogprobs &step = steps[i];
    const int32_t previous = i == 0 || i > tokens.size() ? first : tokens[i - 1];
    auto entry = [&](int32_t token, float logprob) {
      return "{\"token\":" + std::to_string(token) +
             (tokenizer ? jsonBytes(*tokenizer, previous, token) : "") +
             ",\"logprob\":" + jsonLogprob(logprob);
    };
    out += (i ? "," : "") + entry(step.token, step.logprob) + ",\"top\":[";
    for (size_t k = 0; k < step.top.size(); ++k)
      out += (k ? "," : "") + entry(step.top[k].token, step.top[k].logprob) + "}";
    out += "]}";
  }
  return out + "]";
}

} // namespace

ResultJsonFields singleSequenceFields(const SamplingParams &sampling, const Tokenizer &tokenizer) {
  ResultJsonFields fields;
  fields.logprobs = sampling.logprobs;
  fields.seed = sampling.seed;
  fields.tokenizer = &tokenizer;
  return fields;
}

double perSecond(double count, double seconds) { return seconds > 0 ? count / seconds : 0.0; }

std::string resultJson(const GenerationResult &result, const ResultJsonFields &fields) {
  std::ostringstream out;
  out.precision(6);
  out << "{";
  if (fields.promptIndex)
    out << "\"prompt_index\":" << *fields.promptIndex << ",";
  out << "\"prompt_tokens\":" << jsonIds(result.promptTokens)
      << ",\"tokens\":" << jsonIds(result.tokens) << ",\"text\":" << jsonQuote(result.text)
      << ",\"stop_reason\":\"" << stopReasonName(result.stop) << "\"";
  // What the first generated token follows (llama2.c's decode drops a
  // leading space after BOS).
  const int32_t first = result.promptTokens.empty() ? -1 : result.promptTokens.back();
  if (fields.logprobs)
    out << ",\"logprobs\":"
        << jsonLogprobs(result.logprobs, result.tokens, first, fields.tokenizer);
  if (fields.beams)
    out << ",\"logprob\":" << result.logprob << ",\"score\":" << result.score;
  if (!result.sequences.empty()) {
    out << ",\"sequences\":[";
    for (size_t i = 0; i < result.sequences.size(); ++i) {
      const GenerationResult &r = result.sequences[i];
      out << (i ? "," : "") << "{\"tokens\":" << jsonIds(r.tokens)
          << ",\"text\":" << jsonQuote(r.text) << ",\"stop_reason\":\"" << stopReasonName(r.stop)
          << "\"";
      if (fields.beams)
        out << ",\"logprob\":" << r.logprob << ",\"score\":" << r.score;
      if (fields.logprobs)
        out << ",\"logprobs\":" << jsonLogprobs(r.logprobs, r.tokens, first, fields.tokenizer);
      out << "}";
    }
    out << "]";
  }
  out << ",\"seed\":" << fields.seed << ",\"timings\":{\"prefill_tokens_per_s\":"
      << perSecond(result.promptTokens.size(), result.prefillSeconds)
      << ",\"decode_tokens_per_s\":" << perSecond(result.tokens.size(), result.decodeSeconds)
      << ",\"prefill_ms\":" << result.prefillSeconds * 1e3
      << ",\"decode_ms\":" << result.decodeSeconds * 1e3 << "}}";
  return out.str();
}

void printResult(const GenerationResult &result, bool json, const ResultJsonFields &fields) {
  if (json) {
    std::fputs((resultJson(result, fields) + "\n").c_str(), stdout);
    return;
  }
  std::fputc('\n', stdout);
  std::fflush(stdout);
  std::fprintf(stderr, "[stop: %s after %zu tokens; prefill %.1f tok/s, decode %.1f tok/s]\n",
               stopReasonName(result.stop), result.tokens.size(),
               perSecond(result.promptTokens.size(), result.prefillSeconds),
               perSecond(result.tokens.size(), result.decodeSeconds));
}

} // namespace quill
