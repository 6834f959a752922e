// Validation and parsing of SamplingParams.
#include "runtime/sampling/SamplingParams.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

namespace quill {

const char *processorName(ProcessorKind kind) {
  switch (kind) {
  case ProcessorKind::Penalties:
    return "penalties";
  case ProcessorKind::TopK:
    return "top-k";
  case ProcessorKind::TopP:
    return "top-p";
  case ProcessorKind::MinP:
    return "min-p";
  case ProcessorKind::Temperature:
    return "temperature";
  }
  return "?";
}

std::vector<ProcessorKind> defaultProcessorOrder() {
  return {ProcessorKind::Penalties, ProcessorKind::TopK, ProcessorKind::TopP, ProcessorKind::MinP,
          ProcessorKind::Temperature};
}

const char *logprobsModeName(LogprobsMode mode) {
  return mode == LogprobsMode::Raw ? "raw" : "processed";
}

std::string formatParam(float value) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%g", static_cast<double>(value));
  return buffer;
}

Status validate(const SamplingParams &params) {
  if (!std::isfinite(params.temperature) || params.temperature < 0.0f)
    return Status::error("invalid --temp " + formatParam(params.temperature) +
                         ": must be a finite number >= 0 (0 = greedy)");
  if (params.topK < 0)
    return Status::error("invalid --top-k " + std::to_string(params.topK) +
                         ": must be >= 0 (0 = off)");
  // Written so that NaN fails too.
  if (!(params.topP > 0.0f && params.topP <= 1.0f))
    return Status::error("invalid --top-p " + formatParam(params.topP) + ": must be in (0, 1]");
  if (!(params.minP >= 0.0f && params.minP <= 1.0f))
    return Status::error("invalid --min-p " + formatParam(params.minP) +
                         ": must be in [0, 1] (0 = off)");
  // 0 would erase every seen logit and a negative value flip its sign.
  if (!std::isfinite(params.repeatPenalty) || !(params.repeatPenalty > 0.0f))
    return Status::error("invalid --repeat-penalty " + formatParam(params.repeatPenalty) +
                         ": must be a finite number > 0 (1 = off)");
  if (params.repeatLastN < 0)
    return Status::error("invalid --repeat-last-n " + std::to_string(params.repeatLastN) +
                         ": must be >= 0 (0 = penalties off)");
  if (!std::isfinite(params.frequencyPenalty))
    return Status::error("invalid --frequency-penalty " + formatParam(params.frequencyPenalty) +
                         ": must be a finite number (0 = off)");
  if (!std::isfinite(params.presencePenalty))
    return Status::error("invalid --presence-penalty " + formatParam(params.presencePenalty) +
                         ": must be a finite number (0 = off)");
  for (const LogitBias &entry : params.logitBias) {
    std::string spec = std::to_string(entry.id) + "=" + formatParam(entry.bias);
    if (entry.id < 0)
      return Status::error("invalid --logit-bias " + spec + ": the token id must be >= 0");
    // +inf would meet -inf (or another +inf minus a penalty) in NaN.
    if (std::isnan(entry.bias) || entry.bias == HUGE_VALF)
      return Status::error("invalid --logit-bias " + spec +
                           ": the bias must be a finite number or -inf");
  }
  if (params.logprobs && params.topLogprobs < 0)
    return Status::error("invalid --logprobs " + std::to_string(params.topLogprobs) +
                         ": must be >= 0 (the number of alternatives)");
  return Status::ok();
}

Status validateForVocabulary(const SamplingParams &params, int32_t vocabSize) {
  for (const LogitBias &entry : params.logitBias)
    if (entry.id < 0 || entry.id >= vocabSize)
      return Status::error("invalid --logit-bias " + std::to_string(entry.id) + "=" +
                           formatParam(entry.bias) + ": token id " + std::to_string(entry.id) +
                           " is outside the vocabulary [0, " + std::to_string(vocabSize) + ")");
  return Status::ok();
}

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t'))
    s.remove_suffix(1);
  return s;
}

} // namespace

ErrorOr<std::vector<ProcessorKind>> parseProcessorOrder(std::string_view list) {
  std::vector<ProcessorKind> order;
  auto fail = [&](const std::string &why) {
    return Status::error("invalid --samplers '" + std::string(list) + "': " + why);
  };
  size_t at = 0;
  while (at <= list.size()) {
    size_t end = list.find_first_of(",;", at);
    if (end == std::string_view::npos)
      end = list.size();
    std::string name(trim(list.substr(at, end - at)));
    at = end + 1;
    if (name.empty())
      continue;
    std::replace(name.begin(), name.end(), '_', '-');
    if (name == "temp")
      name = "temperature";
    bool known = false;
    for (ProcessorKind kind : defaultProcessorOrder()) {
      if (name != processorName(kind))
        continue;
      known = true;
      if (std::find(order.begin(), order.end(), kind) != order.end())
        return fail("'" + name + "' is listed twice");
      order.push_back(kind);
    }
    if (!known)
      return fail("unknown sampler '" + name +
                  "' (known: penalties, top-k, top-p, min-p, temperature; "
                  "the selector always runs last)");
  }
  return order;
}

ErrorOr<LogitBias> parseLogitBias(std::string_view spec) {
  auto fail = [&](const std::string &why) {
    return Status::error("invalid --logit-bias '" + std::string(spec) + "': " + why);
  };
  size_t equals = spec.find('=');
  if (equals == std::string_view::npos || equals == 0 || equals + 1 == spec.size())
    return fail("expected ID=VALUE, e.g. 13=-inf or 13=2.5");
  std::string idText(trim(spec.substr(0, equals)));
  std::string valueText(trim(spec.substr(equals + 1)));

  errno = 0;
  char *end = nullptr;
  long long id = std::strtoll(idText.c_str(), &end, 10);
  if (idText.empty() || errno != 0 || *end != '\0')
    return fail("the token id '" + idText + "' is not an integer");
  if (id < 0 || id > std::numeric_limits<int32_t>::max())
    return fail("the token id must be in [0, 2^31)");

  // Range errors need no check of their own: an overflow comes back as
  // +-inf (+inf is refused, "-1e99" banning the token is what was asked),
  // an underflow as a bias too small to matter.
  float bias = std::strtof(valueText.c_str(), &end);
  if (valueText.empty() || end == valueText.c_str() || *end != '\0' || std::isnan(bias) ||
      bias == HUGE_VALF)
    return fail("the bias must be a finite number or -inf");
  return LogitBias{static_cast<int32_t>(id), bias};
}

} // namespace quill
