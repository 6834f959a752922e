// Runs a sequence of known tokens (a prompt) through a device.
#pragma once

#include "runtime/device/Device.h"

#include <cstdint>

namespace quill {

/// Feeds `count` tokens at the KV cache's next positions: in prefill chunks
/// (one pass over the weights per chunk) while a whole chunk remains, then
/// one step per token. Afterwards logits() are those after the last token.
Status feedTokens(Device &device, const int32_t *tokens, int32_t count);

} // namespace quill
