// A paged KV cache shared by many sequences: one pool of fixed-size blocks,
// a block table per sequence, reference-counted blocks and copy-on-write fork.
#pragma once

#include "runtime/support/Error.h"
#include "runtime/support/LargeBuffer.h"

#include <cstdint>
#include <memory>
#include <vector>

namespace quill {

/// The shape of the pool, fixed by the compiled kernels that index it.
struct PagedKVLayout {
  /// Positions per block, e.g. 16.
  int32_t blockSize = 16;
  /// Sections of the pool: 2 * layers (section 2L = keys of layer L, 2L+1 = values).
  int32_t sections = 2;
  /// Bytes of one position in one section (ModelConfig::kvRowBytes()).
  uint64_t rowBytes = 4;
  /// The model's context length: no sequence ever holds more positions.
  int32_t maxPositions = 1;

  /// Bytes of one block in one section: blockSize * rowBytes.
  uint64_t blockBytes() const { return uint64_t(blockSize) * rowBytes; }
  /// Bytes of one block in all sections together: sections * blockBytes.
  uint64_t bytesPerBlock() const { return uint64_t(sections) * blockBytes(); }
};

/// Owns one zeroed, page-aligned pool of `numBlocks` blocks and hands them
/// out to sequences through per-sequence block tables.
///
/// Memory layout (the compiled kernels rely on it): the pool is split into
/// `sections` sections, each holding every block contiguously, so the bytes of
/// block b in section s start at `base + (s * numBlocks + b) * blockBytes`, and
/// position p of a sequence lives in row p % blockSize of block
/// blockTable[p / blockSize].
///
/// Block 0 is reserved: it is never handed to a sequence, and unused batch rows
/// write their keys and values into it. The usable blocks are 1..numBlocks-1.
///
/// Blocks are reference counted: fork shares the parent's blocks, and a
/// sequence that would write into a shared, partially filled last block first
/// copies it (copy-on-write). A block reused from the free list still holds
/// stale rows; only positions below a sequence's length are ever meaningful.
///
/// Allocation is deterministic: free blocks form a LIFO stack (the most
/// recently released block is handed out first; a fresh pool hands out 1, 2,
/// 3, ...), and freed sequence ids are reused the same way. The pool is never
/// reallocated after create. Not thread-safe: one owner (the scheduler) calls it.
class PagedKVCache {
public:
  using SequenceId = int32_t;
  /// The reserved block that unused batch rows write into.
  static constexpr int32_t kTrashBlock = 0;

  /// Allocates a pool of `numBlocks` blocks, including the reserved block 0.
  /// Fails when the layout is invalid, numBlocks < 2, or the memory cannot be
  /// allocated.
  static ErrorOr<std::unique_ptr<PagedKVCache>> create(const PagedKVLayout &layout,
                                                       int32_t numBlocks);
  /// The numBlocks (reserved block included) whose pool fits in `bytes`, as
  /// for --kv-budget; 0 when the layout is invalid.
  static int32_t blocksForBudget(const PagedKVLayout &layout, uint64_t bytes);

  PagedKVCache(const PagedKVCache &) = delete;
  PagedKVCache &operator=(const PagedKVCache &) = delete;

  const PagedKVLayout &layout() const { return layout_; }
  /// Blocks in the pool, the reserved block 0 included (the stride between sections).
  int32_t numBlocks() const { return numBlocks_; }
  /// Bytes of one block in all sections together.
  uint64_t bytesPerBlock() const { return layout_.bytesPerBlock(); }
  /// The start of the pool.
  void *data() { return memory_.data(); }
  const void *data() const { return memory_.data(); }
  /// Bytes of the pool: numBlocks * bytesPerBlock.
  uint64_t poolBytes() const { return uint64_t(numBlocks_) * bytesPerBlock(); }
  /// The first byte of `section`: base + section * numBlocks * blockBytes.
  void *sectionBase(int32_t section);
  const void *sectionBase(int32_t section) const;
  /// The first byte of `block` in `section`.
  void *blockData(int32_t section, int32_t block);
  const void *blockData(int32_t section, int32_t block) const;

  /// A new, empty sequence that holds no blocks.
  SequenceId createSequence();
  /// A new sequence with the parent's positions, sharing all of its blocks
  /// (each reference count + 1): nothing is copied until one of them writes.
  SequenceId fork(SequenceId parent);
  /// The blocks append(seq, count) would take from the free list: the new
  /// blocks, plus one if the last block is shared and partially filled (the
  /// copy-on-write copy). 0 when count < 1.
  int32_t blocksNeeded(SequenceId seq, int32_t count) const;
  /// Claims positions [length, length + count) and returns the first. Takes
  /// new blocks as needed; if the last block is shared and partially filled,
  /// first copies its filled rows (every section) into a fresh block. Fails,
  /// changing nothing, when count < 1, when length + count exceeds
  /// maxPositions, or when the free list is too short.
  ErrorOr<int32_t> append(SequenceId seq, int32_t count = 1);
  /// Keeps positions [0, n) (n is clamped to [0, length]) and releases the
  /// blocks past the last one still needed.
  void truncate(SequenceId seq, int32_t n);
  /// Releases the sequence and its block references; its id may be reused.
  void free(SequenceId seq);
  /// Releases the blocks whose positions all lie before `position` (a
  /// sliding window has moved past them); their table entries become
  /// kTrashBlock, which no kernel reads for a windowed model. Returns how
  /// many entries it released.
  int32_t dropBefore(SequenceId seq, int32_t position);
  /// Whether the sequence still holds the blocks of positions [0, n).
  bool holdsPositions(SequenceId seq, int32_t n) const;

  /// Positions the sequence holds.
  int32_t length(SequenceId seq) const;
  /// The block ids of positions [0, length): ceil(length / blockSize) entries.
  const std::vector<int32_t> &blockTable(SequenceId seq) const;
  /// Whether `seq` names a live sequence.
  bool isLive(SequenceId seq) const;

  /// Usable blocks on the free list.
  int32_t freeBlocks() const { return int32_t(freeList_.size()); }
  /// Usable blocks held by at least one sequence.
  int32_t usedBlocks() const { return totalBlocks() - freeBlocks(); }
  /// Usable blocks: numBlocks - 1.
  int32_t totalBlocks() const { return numBlocks_ - 1; }
  /// The most blocks ever in use at once.
  int32_t peakUsedBlocks() const { return peakUsedBlocks_; }
  /// Bytes of the blocks in use: usedBlocks * bytesPerBlock.
  uint64_t bytesInUse() const { return uint64_t(usedBlocks()) * bytesPerBlock(); }
  /// How many block-table entries name `block` (0 for free blocks and block 0).
  int32_t refCount(int32_t block) const;
  /// Sequences created or forked and not yet freed.
  int32_t liveSequences() const { return liveSequences_; }

private:
  struct Sequence {
    bool live = false;
    int32_t length = 0;
    std::vector<int32_t> table;
  };

  PagedKVCache(const PagedKVLayout &layout, int32_t numBlocks, LargeBuffer memory);
  Sequence &sequence(SequenceId seq);
  const Sequence &sequence(SequenceId seq) const;
  /// Pops a block off the free list with reference count 1.
  int32_t takeBlock();
  /// Drops one reference; a block nobody references returns to the free list.
  void releaseBlock(int32_t block);

  PagedKVLayout layout_;
  int32_t numBlocks_;
  LargeBuffer memory_;
  std::vector<int32_t> refCounts_;    // Indexed by block id.
  std::vector<int32_t> freeList_;     // A stack: back() is handed out next.
  std::vector<Sequence> sequences_;   // Indexed by SequenceId.
  std::vector<SequenceId> freeSlots_; // Dead ids, back() reused next.
  int32_t liveSequences_ = 0;
  int32_t peakUsedBlocks_ = 0;
};

} // namespace quill
