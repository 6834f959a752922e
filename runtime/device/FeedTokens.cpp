// Prompt processing: chunks through the prefill step, the rest one by one.
#include "runtime/device/FeedTokens.h"

namespace quill {

Status feedTokens(Device &device, const int32_t *tokens, int32_t count) {
  KVCache &cache = device.kvCache();
  const int32_t chunk = device.prefillChunk();
  int32_t done = 0;
  while (chunk > 0 && count - done >= chunk) {
    auto pos = cache.append(chunk);
    if (!pos)
      return pos.status();
    device.prefill(tokens + done, *pos);
    if (Status s = device.error(); !s)
      return s;
    done += chunk;
  }
  for (; done < count; ++done) {
    auto pos = cache.append();
    if (!pos)
      return pos.status();
    device.step(tokens[done], *pos);
    if (Status s = device.error(); !s)
      return s;
  }
  return Status::ok();
}

} // namespace quill
