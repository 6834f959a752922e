// The anonymous buffers behind the KV caches, scratch and weight copies:
// alignment, zero contents, pages taken only when touched, huge pages asked.
#include "runtime/support/LargeBuffer.h"
#include "runtime/support/ProcessMappings.h"

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

/// The VmFlags line of the mapping that holds `address`; empty when none does.
std::string vmFlagsOf(const void *address) { return mappingOf(address).field("VmFlags:"); }

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

TEST(ProcessMappings, FindsTheMappingOfAnAddressAndItsFields) {
  LargeBuffer buffer = LargeBuffer::allocate(size_t(1) << 20);
  ASSERT_TRUE(buffer);
  MappingEntry anonymous = mappingOf(buffer.data() + 12345);
  if (!anonymous.found)
    GTEST_SKIP() << "/proc/self/smaps is not readable here";
  EXPECT_EQ(anonymous.path, "");
  // smaps sizes are in kB; the mapping is at least the buffer.
  EXPECT_GE(anonymous.kibField("Size:"), buffer.size());
  EXPECT_EQ(anonymous.kibField("NoSuchField:"), 0u);
  EXPECT_NE(anonymous.field("VmFlags:").find(" rd"), std::string::npos);
  // Code of this test binary lies in a mapping of the binary's file.
  MappingEntry code = mappingOf(reinterpret_cast<const void *>(&residentBytes));
  ASSERT_TRUE(code.found);
  EXPECT_NE(code.path.find("quill-unit-tests"), std::string::npos) << code.path;
  // Page 0 is never mapped.
  EXPECT_FALSE(mappingOf(nullptr).found);
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
