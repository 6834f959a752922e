// The artifact checksum.
#include "runtime/support/ByteStream.h"

#include "runtime/support/SplitMix64.h"

#include <algorithm>

namespace quill {

namespace {
/// The lanes' multiplier: any odd constant with well-spread bits will do.
constexpr uint64_t kMul = kSplitMix64Gamma;
} // namespace

Checksum64::Checksum64(uint64_t totalSize)
    : lanes_{totalSize, 0x243F6A8885A308D3ull, 0x13198A2E03707344ull, 0xA4093822299F31D0ull} {}

void Checksum64::block(const uint8_t *data) {
  // Four independent lanes keep several multiplies in flight.
  for (int lane = 0; lane < 4; ++lane) {
    uint64_t word;
    std::memcpy(&word, data + 8 * lane, 8);
    lanes_[lane] = (lanes_[lane] ^ word) * kMul;
    lanes_[lane] ^= lanes_[lane] >> 29;
  }
}

void Checksum64::update(const uint8_t *data, size_t size) {
  while (size > 0 && (pendingSize_ > 0 || size < 32)) {
    size_t take = std::min(size, 32 - pendingSize_);
    std::memcpy(pending_ + pendingSize_, data, take);
    pendingSize_ += take;
    data += take;
    size -= take;
    if (pendingSize_ == 32) {
      block(pending_);
      pendingSize_ = 0;
    }
  }
  for (; size >= 32; data += 32, size -= 32)
    block(data);
  if (size > 0) {
    std::memcpy(pending_, data, size);
    pendingSize_ = size;
  }
}

uint64_t Checksum64::finish() {
  uint64_t hash = lanes_[0] ^ (lanes_[1] * 3) ^ (lanes_[2] * 5) ^ (lanes_[3] * 7);
  for (size_t i = 0; i < pendingSize_; ++i)
    hash = (hash ^ pending_[i]) * kMul;
  return hash ^ (hash >> 31);
}

uint64_t checksum64(const uint8_t *data, size_t size) {
  Checksum64 checksum(size);
  checksum.update(data, size);
  return checksum.finish();
}

} // namespace quill
