// Validation of SamplingParams.
#include "runtime/sampling/SamplingParams.h"

#include <cmath>
#include <cstdio>

namespace quill {

std::string formatParam(float value) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%g", static_cast<double>(value));
  return buffer;
}

Status validate(const SamplingParams &params) {
  if (!std::isfinite(params.temperature) || params.temperature < 0.0f)
    return Status::error("invalid --temp " +
                         formatParam(params.temperature) +
                         ": must be a finite number >= 0 (0 = greedy)");
  if (params.topK < 0)
    return Status::error("invalid --top-k " + std::to_string(params.topK) +
                         ": must be >= 0 (0 = off)");
  // Written so that NaN fails too.
  if (!(params.topP > 0.0f && params.topP <= 1.0f))
    return Status::error("invalid --top-p " + formatParam(params.topP) +
                         ": must be in (0, 1]");
  return Status::ok();
}

} // namespace quill
