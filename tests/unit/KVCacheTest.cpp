// The single-sequence KV cache's position accounting.
#include "runtime/kv_cache/KVCache.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace quill {
namespace {

TEST(KVCache, StartsEmptyZeroedAndAligned) {
  KVCache cache(1000, 8);
  EXPECT_EQ(cache.length(), 0);
  EXPECT_EQ(cache.capacity(), 8);
  EXPECT_EQ(cache.bytes(), 1000u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(cache.data()) % 64, 0u);
  const auto *bytes = static_cast<const uint8_t *>(cache.data());
  for (int i = 0; i < 1000; ++i)
    ASSERT_EQ(bytes[i], 0) << i;
}

TEST(KVCache, ALargeCacheIsHugePageAlignedAndZeroed) {
  // 3 MiB + 1: aligned to 2 MiB, so that huge pages can back it; zeroed
  // to its last byte.
  const uint64_t bytes = (uint64_t(3) << 20) + 1;
  KVCache cache(bytes, 16);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(cache.data()) % (uintptr_t(2) << 20), 0u);
  const auto *data = static_cast<const uint8_t *>(cache.data());
  for (uint64_t i = 0; i < bytes; i += 4093)
    ASSERT_EQ(data[i], 0) << i;
  EXPECT_EQ(data[bytes - 1], 0);
}

TEST(KVCache, AppendsPositionsInOrderUntilFull) {
  KVCache cache(64, 3);
  for (int expected = 0; expected < 3; ++expected) {
    auto pos = cache.append();
    ASSERT_TRUE(pos.isOk());
    EXPECT_EQ(*pos, expected);
  }
  auto full = cache.append();
  ASSERT_FALSE(full.isOk());
  EXPECT_NE(full.message().find("full (3 positions)"), std::string::npos);
  EXPECT_EQ(cache.length(), 3);
}

TEST(KVCache, TruncateAndClearForgetPositions) {
  KVCache cache(64, 10);
  for (int i = 0; i < 6; ++i)
    ASSERT_TRUE(cache.append().isOk());
  cache.truncate(4);
  EXPECT_EQ(cache.length(), 4);
  EXPECT_EQ(*cache.append(), 4); // The next step overwrites position 4.
  cache.truncate(100);           // Never grows.
  EXPECT_EQ(cache.length(), 5);
  cache.truncate(-1);
  EXPECT_EQ(cache.length(), 0);
  ASSERT_TRUE(cache.append().isOk());
  cache.clear();
  EXPECT_EQ(cache.length(), 0);
}

} // namespace
} // namespace quill
