// The anonymous buffers behind the KV caches, scratch and weight copies:
// alignment, zero contents, pages taken only when touched, huge pages asked.
#include "runtime/support/LargeBuffer.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>

namespace quill {
namespace {

/// The process's resident pages (statm's second field) in bytes.
uint64_t residentBytes() {
  std::ifstream statm("/proc/self/statm");
  uint64_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * uint64_t(sysconf(_SC_PAGESIZE));
}

/// The VmFlags line of the /proc/self/smaps mapping that holds `address`;
/// empty when none does.
std::string vmFlagsOf(const void *address) {
  std::ifstream smaps("/proc/self/smaps");
  const auto at = reinterpret_cast<uintptr_t>(address);
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    unsigned long long from = 0, to = 0;
    if (std::sscanf(line.c_str(), "%llx-%llx ", &from, &to) == 2)
      inside = at >= from && at < to;
    else if (inside && line.rfind("VmFlags:", 0) == 0)
      return line;
  }
  return {};
}

TEST(LargeBuffer, ASmallBufferIsPageAlignedAndZero) {
  LargeBuffer buffer = LargeBuffer::allocate(1000);
  ASSERT_TRUE(buffer);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(buffer.data()) % uintptr_t(sysconf(_SC_PAGESIZE)), 0u);
  EXPECT_GE(buffer.size(), 1000u);
  for (int i = 0; i < 1000; ++i)
    ASSERT_EQ(buffer.data()[i], 0) << i;
  EXPECT_EQ(buffer.hugePageBytes(), 0u);
}

TEST(LargeBuffer, ALargeBufferIsHugePageAlignedAndAskedForHugePages) {
  const size_t bytes = (size_t(3) << 20) + 1;
  LargeBuffer buffer = LargeBuffer::allocate(bytes);
  ASSERT_TRUE(buffer);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(buffer.data()) % (uintptr_t(2) << 20), 0u);
  EXPECT_EQ(buffer.size(), size_t(4) << 20);
  EXPECT_EQ(buffer.data()[bytes - 1], 0);
  std::ifstream thp("/sys/kernel/mm/transparent_hugepage/enabled");
  if (!thp)
    GTEST_SKIP() << "this kernel has no transparent huge pages";
  // madvise(MADV_HUGEPAGE) shows as the "hg" flag on the mapping.
  std::string flags = vmFlagsOf(buffer.data());
  ASSERT_FALSE(flags.empty()) << "no smaps entry holds the buffer";
  EXPECT_NE(flags.find(" hg"), std::string::npos) << flags;
}

TEST(LargeBuffer, PagesAreTakenWhenTouchedNotWhenAllocated) {
  // 256 MiB, untouched: the resident set must not grow by it (the old
  // allocator zeroed every byte up front, which made it all resident).
  const size_t bytes = size_t(256) << 20;
  const uint64_t before = residentBytes();
  LargeBuffer buffer = LargeBuffer::allocate(bytes);
  ASSERT_TRUE(buffer);
  EXPECT_LT(residentBytes(), before + (uint64_t(32) << 20));
  // Touching the first 64 MiB takes those pages, and they read zero.
  for (size_t i = 0; i < (size_t(64) << 20); i += 4096)
    ASSERT_EQ(buffer.data()[i]++, 0);
  EXPECT_GE(residentBytes(), before + (uint64_t(60) << 20));
  // Huge pages, where the kernel gave them, lie within what was touched.
  EXPECT_LE(buffer.hugePageBytes(), size_t(64) << 20);
  std::printf("%zu of 64 MiB touched are in huge pages\n", buffer.hugePageBytes() >> 20);
}

TEST(LargeBuffer, MovingHandsOverTheMemory) {
  LargeBuffer a = LargeBuffer::allocate(100);
  ASSERT_TRUE(a);
  a.data()[7] = 42;
  LargeBuffer b = std::move(a);
  EXPECT_FALSE(a);
  ASSERT_TRUE(b);
  EXPECT_EQ(b.data()[7], 42);
  a = std::move(b);
  EXPECT_EQ(a.data()[7], 42);
}

} // namespace
} // namespace quill
