// The artifact checksum.
#include "runtime/support/ByteStream.h"

namespace quill {

uint64_t checksum64(const uint8_t *data, size_t size) {
  constexpr uint64_t kMul = 0x9E3779B97F4A7C15ull;
  uint64_t lanes[4] = {size, 0x243F6A8885A308D3ull, 0x13198A2E03707344ull,
                       0xA4093822299F31D0ull};
  size_t i = 0;
  // Four independent lanes keep several multiplies in flight.
  for (; i + 32 <= size; i += 32)
    for (int lane = 0; lane < 4; ++lane) {
      uint64_t word;
      std::memcpy(&word, data + i + 8 * lane, 8);
      lanes[lane] = (lanes[lane] ^ word) * kMul;
      lanes[lane] ^= lanes[lane] >> 29;
    }
  uint64_t hash = lanes[0] ^ (lanes[1] * 3) ^ (lanes[2] * 5) ^ (lanes[3] * 7);
  for (; i < size; ++i)
    hash = (hash ^ data[i]) * kMul;
  return hash ^ (hash >> 31);
}

} // namespace quill
