// The paged KV cache: block accounting, fork and copy-on-write, truncate and
// free, clean failures, and a randomized check against a simple model.
#include "runtime/kv_cache/PagedKVCache.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <random>
#include <vector>

namespace quill {
namespace {

using Seq = PagedKVCache::SequenceId;

/// 4 positions per block, 2 layers (4 sections), 8-byte rows, context 32.
PagedKVLayout smallLayout(int32_t maxPositions = 32) {
  PagedKVLayout layout;
  layout.blockSize = 4;
  layout.sections = 4;
  layout.rowBytes = 8;
  layout.maxPositions = maxPositions;
  return layout;
}

std::unique_ptr<PagedKVCache> makeCache(int32_t numBlocks, PagedKVLayout layout = smallLayout()) {
  auto cache = PagedKVCache::create(layout, numBlocks);
  EXPECT_TRUE(cache.isOk()) << cache.message();
  return cache.take();
}

/// A byte that differs per (section, block, byte-in-block).
uint8_t pattern(int32_t section, int32_t block, uint64_t byte) {
  return uint8_t(section * 61 + block * 17 + byte * 3 + 1);
}

/// Fills every section of `block` with pattern().
void fillBlock(PagedKVCache &cache, int32_t block) {
  uint64_t bytes = cache.layout().blockBytes();
  for (int32_t s = 0; s < cache.layout().sections; ++s) {
    auto *data = static_cast<uint8_t *>(cache.blockData(s, block));
    for (uint64_t i = 0; i < bytes; ++i)
      data[i] = pattern(s, block, i);
  }
}

TEST(PagedKVCache, ASlidingWindowDropsWholeBlocksBehindIt) {
  // 4 positions per block: 14 positions hold blocks 0-3. Dropping before
  // position 9 releases blocks 0 and 1 (positions 0-7) and keeps block 2,
  // which still holds position 8.
  auto cache = makeCache(10);
  Seq a = cache->createSequence();
  ASSERT_TRUE(cache->append(a, 14).isOk());
  std::vector<int32_t> before = cache->blockTable(a);
  EXPECT_EQ(cache->usedBlocks(), 4);
  EXPECT_EQ(cache->dropBefore(a, 9), 2);
  EXPECT_EQ(cache->usedBlocks(), 2);
  const std::vector<int32_t> &after = cache->blockTable(a);
  EXPECT_EQ(after[0], PagedKVCache::kTrashBlock);
  EXPECT_EQ(after[1], PagedKVCache::kTrashBlock);
  EXPECT_EQ(after[2], before[2]);
  EXPECT_EQ(after[3], before[3]);
  EXPECT_FALSE(cache->holdsPositions(a, 5));
  EXPECT_TRUE(cache->holdsPositions(a, 0));
  // Again: nothing more to drop. A fork shares only the held blocks, and
  // truncating or freeing never releases the dropped entries twice.
  EXPECT_EQ(cache->dropBefore(a, 9), 0);
  Seq b = cache->fork(a);
  EXPECT_EQ(cache->refCount(before[2]), 2);
  EXPECT_EQ(cache->refCount(PagedKVCache::kTrashBlock), 0);
  cache->truncate(b, 6);
  EXPECT_EQ(cache->blockTable(b).size(), 2u);
  cache->free(b);
  cache->free(a);
  EXPECT_EQ(cache->usedBlocks(), 0);
  EXPECT_EQ(cache->freeBlocks(), cache->totalBlocks());
}

TEST(PagedKVCache, CreateSizesAZeroedAlignedPool) {
  auto cache = makeCache(10);
  ASSERT_TRUE(cache);
  EXPECT_EQ(cache->numBlocks(), 10);
  EXPECT_EQ(cache->totalBlocks(), 9);
  EXPECT_EQ(cache->freeBlocks(), 9);
  EXPECT_EQ(cache->usedBlocks(), 0);
  EXPECT_EQ(cache->peakUsedBlocks(), 0);
  EXPECT_EQ(cache->bytesInUse(), 0u);
  EXPECT_EQ(cache->liveSequences(), 0);
  EXPECT_EQ(cache->layout().blockBytes(), 32u); // 4 rows x 8 bytes.
  EXPECT_EQ(cache->bytesPerBlock(), 128u);      // 4 sections x 32 bytes.
  EXPECT_EQ(cache->poolBytes(), 1280u);
  auto *base = static_cast<uint8_t *>(cache->data());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(base) % 64, 0u);
  for (uint64_t i = 0; i < cache->poolBytes(); ++i)
    ASSERT_EQ(base[i], 0) << i;
  // Section s, block b starts at base + (s * numBlocks + b) * blockBytes.
  EXPECT_EQ(cache->sectionBase(0), base);
  EXPECT_EQ(cache->sectionBase(3), base + 3 * 10 * 32);
  EXPECT_EQ(cache->blockData(2, 7), base + (2 * 10 + 7) * 32);
}

TEST(PagedKVCache, CreateRejectsTooFewBlocksAndBadLayouts) {
  auto one = PagedKVCache::create(smallLayout(), 1);
  ASSERT_FALSE(one.isOk());
  EXPECT_NE(one.message().find("1 blocks is too few"), std::string::npos) << one.message();
  EXPECT_FALSE(PagedKVCache::create(smallLayout(), 0).isOk());

  PagedKVLayout noRows = smallLayout();
  noRows.rowBytes = 0;
  auto bad = PagedKVCache::create(noRows, 4);
  ASSERT_FALSE(bad.isOk());
  EXPECT_NE(bad.message().find("invalid layout: row bytes is 0"), std::string::npos)
      << bad.message();

  PagedKVLayout huge = smallLayout();
  huge.rowBytes = uint64_t(1) << 58; // 4 x 4 x 2^58 = 2^62 bytes per block.
  auto overflow = PagedKVCache::create(huge, 8);
  ASSERT_FALSE(overflow.isOk());
  EXPECT_NE(overflow.message().find("overflow 64 bits"), std::string::npos) << overflow.message();
}

TEST(PagedKVCache, BlocksForBudgetCountsWholeBlocks) {
  PagedKVLayout layout = smallLayout(); // 128 bytes per block.
  EXPECT_EQ(PagedKVCache::blocksForBudget(layout, 0), 0);
  EXPECT_EQ(PagedKVCache::blocksForBudget(layout, 127), 0);
  EXPECT_EQ(PagedKVCache::blocksForBudget(layout, 128), 1);
  EXPECT_EQ(PagedKVCache::blocksForBudget(layout, 1000), 7);
  EXPECT_EQ(PagedKVCache::blocksForBudget(layout, uint64_t(1) << 60), INT32_MAX);
  // A 64 MB budget for a model with 6 layers of 288-wide keys, 16-position blocks.
  PagedKVLayout model{16, 12, 288 * 4, 256};
  EXPECT_EQ(model.bytesPerBlock(), 12u * 16 * 288 * 4);
  EXPECT_EQ(PagedKVCache::blocksForBudget(model, 64ull << 20), int32_t((64ull << 20) / 221184));
}

TEST(PagedKVCache, AppendsAcrossBlockBoundaries) {
  auto cache = makeCache(10);
  Seq a = cache->createSequence();
  EXPECT_EQ(cache->liveSequences(), 1);
  EXPECT_EQ(cache->length(a), 0);
  EXPECT_TRUE(cache->blockTable(a).empty());
  EXPECT_EQ(cache->blocksNeeded(a, 0), 0);
  EXPECT_EQ(cache->blocksNeeded(a, 1), 1);
  EXPECT_EQ(cache->blocksNeeded(a, 5), 2);

  auto first = cache->append(a, 3);
  ASSERT_TRUE(first.isOk()) << first.message();
  EXPECT_EQ(*first, 0);
  EXPECT_EQ(cache->blockTable(a), std::vector<int32_t>({1}));
  EXPECT_EQ(cache->usedBlocks(), 1);
  EXPECT_EQ(cache->blocksNeeded(a, 1), 0); // Position 3 fits in block 1.
  EXPECT_EQ(*cache->append(a, 1), 3);
  EXPECT_EQ(cache->blockTable(a), std::vector<int32_t>({1}));
  EXPECT_EQ(cache->blocksNeeded(a, 1), 1);
  EXPECT_EQ(cache->blocksNeeded(a, 9), 3);
  EXPECT_EQ(*cache->append(a, 6), 4); // Positions 4..9: blocks 2 and 3.
  EXPECT_EQ(cache->length(a), 10);
  EXPECT_EQ(cache->blockTable(a), std::vector<int32_t>({1, 2, 3}));

  Seq b = cache->createSequence();
  EXPECT_NE(b, a);
  EXPECT_EQ(*cache->append(b, 4), 0);
  EXPECT_EQ(cache->blockTable(b), std::vector<int32_t>({4}));
  EXPECT_EQ(cache->freeBlocks(), 5);
  EXPECT_EQ(cache->usedBlocks(), 4);
  EXPECT_EQ(cache->peakUsedBlocks(), 4);
  EXPECT_EQ(cache->bytesInUse(), 4u * 128);
  for (int32_t block = 1; block <= 4; ++block)
    EXPECT_EQ(cache->refCount(block), 1) << block;
  EXPECT_EQ(cache->refCount(0), 0); // The trash block is never handed out.
  EXPECT_EQ(cache->refCount(5), 0);

  cache->free(a);
  EXPECT_EQ(cache->usedBlocks(), 1);
  EXPECT_EQ(cache->peakUsedBlocks(), 4); // The peak stays.
}

TEST(PagedKVCache, ForkSharesBlocksWithoutCopying) {
  auto cache = makeCache(10);
  Seq parent = cache->createSequence();
  ASSERT_TRUE(cache->append(parent, 6).isOk()); // Blocks 1, 2 (2 half full).
  Seq child = cache->fork(parent);
  EXPECT_EQ(cache->liveSequences(), 2);
  EXPECT_EQ(cache->length(child), 6);
  EXPECT_EQ(cache->blockTable(child), cache->blockTable(parent));
  EXPECT_EQ(cache->refCount(1), 2);
  EXPECT_EQ(cache->refCount(2), 2);
  EXPECT_EQ(cache->usedBlocks(), 2);

  // Freeing the parent leaves the child's blocks alive, referenced once.
  cache->free(parent);
  EXPECT_EQ(cache->refCount(1), 1);
  EXPECT_EQ(cache->refCount(2), 1);
  EXPECT_EQ(cache->usedBlocks(), 2);
  EXPECT_EQ(cache->blockTable(child), std::vector<int32_t>({1, 2}));
}

TEST(PagedKVCache, AppendToAForkCopiesAPartiallyFilledSharedBlock) {
  auto cache = makeCache(10);
  Seq parent = cache->createSequence();
  ASSERT_TRUE(cache->append(parent, 6).isOk()); // Block 2 holds rows 0, 1.
  fillBlock(*cache, 1);
  fillBlock(*cache, 2);
  Seq child = cache->fork(parent);

  EXPECT_EQ(cache->blocksNeeded(child, 1), 1); // The copy; position 6 fits in it.
  EXPECT_EQ(cache->blocksNeeded(child, 3), 2); // The copy and one new block.
  int32_t freeBefore = cache->freeBlocks();
  auto pos = cache->append(child, 1);
  ASSERT_TRUE(pos.isOk()) << pos.message();
  EXPECT_EQ(*pos, 6);
  EXPECT_EQ(cache->freeBlocks(), freeBefore - 1);
  const std::vector<int32_t> &table = cache->blockTable(child);
  ASSERT_EQ(table.size(), 2u);
  EXPECT_EQ(table[0], 1); // The full block stays shared.
  int32_t copy = table[1];
  EXPECT_EQ(copy, 3);
  EXPECT_EQ(cache->blockTable(parent), std::vector<int32_t>({1, 2}));
  EXPECT_EQ(cache->refCount(1), 2);
  EXPECT_EQ(cache->refCount(2), 1);
  EXPECT_EQ(cache->refCount(copy), 1);

  // Every section of the copy holds the parent's two filled rows; the rows
  // past them were not copied (the fresh block was zero).
  uint64_t rowBytes = cache->layout().rowBytes, blockBytes = cache->layout().blockBytes();
  for (int32_t s = 0; s < cache->layout().sections; ++s) {
    const auto *copied = static_cast<const uint8_t *>(cache->blockData(s, copy));
    const auto *original = static_cast<const uint8_t *>(cache->blockData(s, 2));
    for (uint64_t i = 0; i < blockBytes; ++i) {
      ASSERT_EQ(original[i], pattern(s, 2, i)) << "parent changed: section " << s << " byte " << i;
      if (i < 2 * rowBytes)
        ASSERT_EQ(copied[i], pattern(s, 2, i)) << "section " << s << " byte " << i;
      else
        ASSERT_EQ(copied[i], 0) << "section " << s << " byte " << i;
    }
  }

  // The child now owns its last block: further appends into it copy nothing.
  EXPECT_EQ(cache->blocksNeeded(child, 1), 0);
  EXPECT_EQ(*cache->append(child, 1), 7);
  EXPECT_EQ(cache->blockTable(child), std::vector<int32_t>({1, copy}));
  // The parent's last block is now only its own, so it appends in place.
  EXPECT_EQ(cache->blocksNeeded(parent, 2), 0);
  EXPECT_EQ(*cache->append(parent, 2), 6);
  EXPECT_EQ(cache->blockTable(parent), std::vector<int32_t>({1, 2}));
}

TEST(PagedKVCache, ParentWritingIntoASharedBlockCopiesToo) {
  auto cache = makeCache(10);
  Seq parent = cache->createSequence();
  ASSERT_TRUE(cache->append(parent, 2).isOk());
  fillBlock(*cache, 1);
  Seq child = cache->fork(parent);
  EXPECT_EQ(cache->blocksNeeded(parent, 1), 1);
  ASSERT_TRUE(cache->append(parent, 1).isOk());
  EXPECT_EQ(cache->blockTable(parent), std::vector<int32_t>({2}));
  EXPECT_EQ(cache->blockTable(child), std::vector<int32_t>({1}));
  EXPECT_EQ(cache->refCount(1), 1);
  EXPECT_EQ(cache->refCount(2), 1);
  for (int32_t s = 0; s < cache->layout().sections; ++s)
    EXPECT_EQ(std::memcmp(cache->blockData(s, 2), cache->blockData(s, 1), 16), 0) << s;
}

TEST(PagedKVCache, AppendAfterAFullSharedBlockNeedsNoCopy) {
  auto cache = makeCache(10);
  Seq parent = cache->createSequence();
  ASSERT_TRUE(cache->append(parent, 8).isOk()); // Blocks 1, 2, both full.
  Seq child = cache->fork(parent);
  EXPECT_EQ(cache->blocksNeeded(child, 1), 1);
  int32_t freeBefore = cache->freeBlocks();
  EXPECT_EQ(*cache->append(child, 1), 8);
  EXPECT_EQ(cache->freeBlocks(), freeBefore - 1);
  EXPECT_EQ(cache->blockTable(child), std::vector<int32_t>({1, 2, 3}));
  EXPECT_EQ(cache->blockTable(parent), std::vector<int32_t>({1, 2}));
  EXPECT_EQ(cache->refCount(1), 2);
  EXPECT_EQ(cache->refCount(2), 2);
  EXPECT_EQ(cache->refCount(3), 1);
}

TEST(PagedKVCache, TruncateIntoASharedBlockCopiesOnTheNextAppend) {
  auto cache = makeCache(10);
  Seq parent = cache->createSequence();
  ASSERT_TRUE(cache->append(parent, 8).isOk());
  Seq child = cache->fork(parent);
  cache->truncate(child, 5); // Keeps block 1 and row 0 of block 2 (shared).
  EXPECT_EQ(cache->blockTable(child), std::vector<int32_t>({1, 2}));
  EXPECT_EQ(cache->blocksNeeded(child, 1), 1);
  ASSERT_TRUE(cache->append(child, 1).isOk());
  EXPECT_EQ(cache->blockTable(child), std::vector<int32_t>({1, 3}));
  EXPECT_EQ(cache->blockTable(parent), std::vector<int32_t>({1, 2}));
  EXPECT_EQ(cache->length(parent), 8);
}

TEST(PagedKVCache, TruncateReleasesBlocksThatLaterAppendsReuse) {
  auto cache = makeCache(10);
  Seq a = cache->createSequence();
  ASSERT_TRUE(cache->append(a, 14).isOk()); // Blocks 1..4.
  EXPECT_EQ(cache->freeBlocks(), 5);
  cache->truncate(a, 5); // Keeps blocks 1, 2.
  EXPECT_EQ(cache->length(a), 5);
  EXPECT_EQ(cache->blockTable(a), std::vector<int32_t>({1, 2}));
  EXPECT_EQ(cache->freeBlocks(), 7);
  EXPECT_EQ(cache->refCount(3), 0);
  EXPECT_EQ(cache->refCount(4), 0);
  cache->truncate(a, 100); // Never grows.
  EXPECT_EQ(cache->length(a), 5);
  // The released blocks come back in table order (LIFO free list).
  EXPECT_EQ(*cache->append(a, 7), 5);
  EXPECT_EQ(cache->blockTable(a), std::vector<int32_t>({1, 2, 3}));
  EXPECT_EQ(*cache->append(a, 1), 12);
  EXPECT_EQ(cache->blockTable(a), std::vector<int32_t>({1, 2, 3, 4}));
  cache->truncate(a, 0);
  EXPECT_TRUE(cache->blockTable(a).empty());
  EXPECT_EQ(cache->freeBlocks(), 9);
  EXPECT_EQ(cache->peakUsedBlocks(), 4);
}

TEST(PagedKVCache, FreeReturnsEverythingAndIdsAreReused) {
  auto cache = makeCache(10);
  Seq a = cache->createSequence();
  Seq b = cache->createSequence();
  ASSERT_TRUE(cache->append(a, 9).isOk());
  ASSERT_TRUE(cache->append(b, 3).isOk());
  Seq c = cache->fork(a);
  ASSERT_TRUE(cache->append(c, 4).isOk());
  EXPECT_EQ(cache->liveSequences(), 3);
  cache->free(a);
  cache->free(c);
  cache->free(b);
  EXPECT_EQ(cache->liveSequences(), 0);
  EXPECT_EQ(cache->freeBlocks(), 9);
  EXPECT_EQ(cache->bytesInUse(), 0u);
  for (int32_t block = 0; block < cache->numBlocks(); ++block)
    EXPECT_EQ(cache->refCount(block), 0) << block;
  EXPECT_FALSE(cache->isLive(a));

  // The most recently freed id comes back first; a reused id starts empty.
  Seq d = cache->createSequence();
  EXPECT_EQ(d, b);
  EXPECT_TRUE(cache->isLive(d));
  EXPECT_EQ(cache->length(d), 0);
  EXPECT_TRUE(cache->blockTable(d).empty());
  EXPECT_EQ(*cache->append(d, 2), 0);
  EXPECT_EQ(cache->blockTable(d).size(), 1u);
  EXPECT_EQ(cache->liveSequences(), 1);
}

TEST(PagedKVCache, AppendFailsCleanlyWhenBlocksRunOut) {
  auto cache = makeCache(4); // 3 usable blocks.
  Seq a = cache->createSequence();
  ASSERT_TRUE(cache->append(a, 6).isOk()); // Blocks 1, 2.
  Seq b = cache->fork(a);
  EXPECT_EQ(cache->blocksNeeded(b, 3), 2); // The copy of block 2 and one new block.
  auto failed = cache->append(b, 3);
  ASSERT_FALSE(failed.isOk());
  EXPECT_EQ(failed.message(), "paged KV cache: appending 3 positions to sequence 1 needs 2 "
                              "blocks, 1 are free");
  EXPECT_EQ(cache->length(b), 6);
  EXPECT_EQ(cache->blockTable(b), std::vector<int32_t>({1, 2}));
  EXPECT_EQ(cache->refCount(2), 2);
  EXPECT_EQ(cache->freeBlocks(), 1);
  EXPECT_EQ(cache->peakUsedBlocks(), 2);

  // What fits still succeeds, taking exactly blocksNeeded.
  EXPECT_EQ(cache->blocksNeeded(b, 2), 1);
  EXPECT_EQ(*cache->append(b, 2), 6);
  EXPECT_EQ(cache->freeBlocks(), 0);
  EXPECT_EQ(cache->blocksNeeded(a, 3), 1);
  EXPECT_FALSE(cache->append(a, 3).isOk());
  EXPECT_EQ(*cache->append(a, 2), 6); // Block 2 is a's alone now: no block needed.
  EXPECT_FALSE(cache->append(a, 1).isOk());
  EXPECT_EQ(cache->length(a), 8);
}

TEST(PagedKVCache, AppendFailsCleanlyPastTheContextLength) {
  auto cache = makeCache(20, smallLayout(/*maxPositions=*/10));
  Seq a = cache->createSequence();
  ASSERT_TRUE(cache->append(a, 8).isOk());
  auto failed = cache->append(a, 3);
  ASSERT_FALSE(failed.isOk());
  EXPECT_EQ(failed.message(), "paged KV cache: sequence 0 holds 8 positions; 3 more exceed the "
                              "context length of 10");
  EXPECT_EQ(cache->length(a), 8);
  EXPECT_EQ(cache->usedBlocks(), 2);
  EXPECT_EQ(*cache->append(a, 2), 8);
  EXPECT_FALSE(cache->append(a, 1).isOk());
  EXPECT_FALSE(cache->append(a, 0).isOk());
  EXPECT_FALSE(cache->append(a, -1).isOk());
  EXPECT_FALSE(cache->append(a, INT32_MAX).isOk());
  EXPECT_EQ(cache->length(a), 10);
  EXPECT_EQ(cache->usedBlocks(), 3);
}

/// Tags each position's first 4 bytes in section 0 with a unique stamp, and
/// its first 4 bytes in the last section with the stamp's complement, then
/// checks the cache against a model of what every sequence should read.
class PagedKVCacheModel {
public:
  explicit PagedKVCacheModel(PagedKVCache &cache) : cache_(cache) {}

  void create() { expected_[cache_.createSequence()] = {}; }
  void fork(Seq parent) {
    Seq child = cache_.fork(parent);
    ASSERT_EQ(expected_.count(child), 0u) << "fork returned a live id";
    expected_[child] = expected_[parent];
  }
  void append(Seq seq, int32_t count) {
    std::vector<uint32_t> &tags = expected_[seq];
    int32_t needed = cache_.blocksNeeded(seq, count);
    int32_t freeBefore = cache_.freeBlocks();
    bool tooLong = int64_t(tags.size()) + count > cache_.layout().maxPositions;
    bool fits = !tooLong && needed <= freeBefore;
    auto first = cache_.append(seq, count);
    ASSERT_EQ(first.isOk(), fits) << first.message();
    if (!fits) {
      ASSERT_FALSE(first.message().empty());
      ASSERT_EQ(cache_.freeBlocks(), freeBefore);
      ++(tooLong ? tooLongAppends : noBlockAppends);
      return;
    }
    ASSERT_EQ(*first, int32_t(tags.size()));
    ASSERT_EQ(cache_.freeBlocks(), freeBefore - needed);
    for (int32_t p = *first; p < *first + count; ++p) {
      uint32_t tag = nextTag_++;
      tags.push_back(tag);
      write(seq, p, tag);
    }
  }
  void truncate(Seq seq, int32_t n) {
    cache_.truncate(seq, n);
    expected_[seq].resize(size_t(n));
  }
  void free(Seq seq) {
    cache_.free(seq);
    expected_.erase(seq);
  }

  /// Checks every live sequence and the block accounting.
  void check() const {
    const PagedKVLayout &layout = cache_.layout();
    ASSERT_EQ(cache_.liveSequences(), int32_t(expected_.size()));
    ASSERT_EQ(cache_.freeBlocks() + cache_.usedBlocks(), cache_.totalBlocks());
    ASSERT_LE(cache_.usedBlocks(), cache_.peakUsedBlocks());
    std::vector<int32_t> references(size_t(cache_.numBlocks()), 0);
    int64_t entries = 0;
    for (const auto &[seq, tags] : expected_) {
      ASSERT_TRUE(cache_.isLive(seq));
      ASSERT_EQ(cache_.length(seq), int32_t(tags.size())) << "sequence " << seq;
      const std::vector<int32_t> &table = cache_.blockTable(seq);
      ASSERT_EQ(table.size(), (tags.size() + layout.blockSize - 1) / layout.blockSize);
      for (int32_t block : table) {
        ASSERT_GE(block, 1);
        ASSERT_LT(block, cache_.numBlocks());
        ++references[size_t(block)];
      }
      entries += int64_t(table.size());
      for (size_t p = 0; p < tags.size(); ++p) {
        ASSERT_EQ(read(seq, int32_t(p), 0), tags[p]) << "sequence " << seq << " position " << p;
        ASSERT_EQ(read(seq, int32_t(p), layout.sections - 1), ~tags[p])
            << "sequence " << seq << " position " << p;
      }
    }
    int64_t refSum = 0;
    int32_t unreferenced = 0;
    for (int32_t block = 0; block < cache_.numBlocks(); ++block) {
      ASSERT_EQ(cache_.refCount(block), references[size_t(block)]) << "block " << block;
      refSum += cache_.refCount(block);
      if (block != 0 && cache_.refCount(block) == 0)
        ++unreferenced;
    }
    ASSERT_EQ(refSum, entries);
    ASSERT_EQ(unreferenced, cache_.freeBlocks());
  }

  std::vector<Seq> live() const {
    std::vector<Seq> ids;
    for (const auto &entry : expected_)
      ids.push_back(entry.first);
    return ids;
  }
  int32_t length(Seq seq) const { return int32_t(expected_.at(seq).size()); }

  /// Appends refused for exceeding the context, and for want of blocks.
  int tooLongAppends = 0, noBlockAppends = 0;

private:
  uint8_t *row(Seq seq, int32_t position, int32_t section) const {
    int32_t blockSize = cache_.layout().blockSize;
    int32_t block = cache_.blockTable(seq)[size_t(position / blockSize)];
    return static_cast<uint8_t *>(cache_.blockData(section, block)) +
           uint64_t(position % blockSize) * cache_.layout().rowBytes;
  }
  void write(Seq seq, int32_t position, uint32_t tag) {
    uint32_t complement = ~tag;
    std::memcpy(row(seq, position, 0), &tag, 4);
    std::memcpy(row(seq, position, cache_.layout().sections - 1), &complement, 4);
  }
  uint32_t read(Seq seq, int32_t position, int32_t section) const {
    uint32_t tag;
    std::memcpy(&tag, row(seq, position, section), 4);
    return tag;
  }

  PagedKVCache &cache_;
  std::map<Seq, std::vector<uint32_t>> expected_;
  uint32_t nextTag_ = 1;
};

TEST(PagedKVCache, RandomOperationsMatchAModel) {
  // 31 usable blocks of 4 positions, context 40: both the pool and the
  // context run out often.
  auto cache = makeCache(32, smallLayout(/*maxPositions=*/40));
  PagedKVCacheModel model(*cache);
  std::mt19937 rng(20240611);
  auto below = [&](int32_t n) { return int32_t(rng() % uint32_t(n)); };
  int appends = 0, forks = 0;
  for (int step = 0; step < 10000; ++step) {
    std::vector<Seq> live = model.live();
    int32_t op = live.empty() ? 0 : below(100);
    Seq seq = live.empty() ? -1 : live[size_t(below(int32_t(live.size())))];
    if (op < 8) {
      if (live.size() < 12)
        model.create();
    } else if (op < 20) {
      if (live.size() < 12) {
        model.fork(seq);
        ++forks;
      }
    } else if (op < 70) {
      int32_t count = below(10) == 0 ? 1 + below(40) : 1 + below(6);
      model.append(seq, count);
      ++appends;
    } else if (op < 88) {
      model.truncate(seq, below(model.length(seq) + 1));
    } else {
      model.free(seq);
    }
    if (::testing::Test::HasFatalFailure())
      FAIL() << "at step " << step;
    model.check();
    if (::testing::Test::HasFatalFailure())
      FAIL() << "after step " << step;
  }
  // The run covered the paths that matter, failures included.
  EXPECT_GT(appends, 3000);
  EXPECT_GT(forks, 300);
  EXPECT_GT(model.tooLongAppends, 50);
  EXPECT_GT(model.noBlockAppends, 50);
  EXPECT_EQ(cache->peakUsedBlocks(), cache->totalBlocks()); // The pool did run dry.

  for (Seq seq : model.live())
    model.free(seq);
  model.check();
  EXPECT_EQ(cache->liveSequences(), 0);
  EXPECT_EQ(cache->freeBlocks(), cache->totalBlocks());
  EXPECT_EQ(cache->usedBlocks(), 0);
  for (int32_t block = 0; block < cache->numBlocks(); ++block)
    EXPECT_EQ(cache->refCount(block), 0) << block;
}

} // namespace
} // namespace quill
