// The paged KV cache: block pool, free list, reference counts and copy-on-write.
#include "runtime/kv_cache/PagedKVCache.h"

#include "runtime/support/LargeBuffer.h"
#include "runtime/support/Trace.h"

#include <algorithm>
#include <cassert>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>

namespace quill {

namespace {

/// Why `layout` cannot describe a pool, or an empty string when it can.
std::string layoutProblem(const PagedKVLayout &layout) {
  if (layout.blockSize < 1)
    return "block size " + std::to_string(layout.blockSize) + " is not positive";
  if (layout.sections < 1)
    return std::to_string(layout.sections) + " sections is not positive";
  if (layout.rowBytes < 1)
    return "row bytes is 0";
  if (layout.maxPositions < 1)
    return "max positions " + std::to_string(layout.maxPositions) + " is not positive";
  uint64_t max = std::numeric_limits<uint64_t>::max();
  if (layout.rowBytes > max / uint64_t(layout.blockSize) / uint64_t(layout.sections))
    return "a block of " + std::to_string(layout.sections) + " sections x " +
           std::to_string(layout.blockSize) + " rows x " + std::to_string(layout.rowBytes) +
           " bytes overflows 64 bits";
  return "";
}

/// ceil(positions / blockSize): the block-table entries that hold `positions`.
int32_t blocksFor(int64_t positions, int32_t blockSize) {
  return int32_t((positions + blockSize - 1) / blockSize);
}

} // namespace

ErrorOr<std::unique_ptr<PagedKVCache>> PagedKVCache::create(const PagedKVLayout &layout,
                                                            int32_t numBlocks) {
  std::string problem = layoutProblem(layout);
  if (!problem.empty())
    return Status::error("paged KV cache: invalid layout: " + problem);
  if (numBlocks < 2)
    return Status::error("paged KV cache: " + std::to_string(numBlocks) +
                         " blocks is too few (block 0 is reserved, so at least 2 are needed)");
  uint64_t perBlock = layout.bytesPerBlock();
  if (perBlock > std::numeric_limits<uint64_t>::max() / uint64_t(numBlocks))
    return Status::error("paged KV cache: " + std::to_string(numBlocks) + " blocks of " +
                         std::to_string(perBlock) + " bytes overflow 64 bits");
  uint64_t bytes = uint64_t(numBlocks) * perBlock;
  // LargeBuffer rounds the pool up to whole pages.
  if (bytes > std::numeric_limits<size_t>::max())
    return Status::error("paged KV cache: " + std::to_string(bytes) +
                         " bytes do not fit in this address space");
  LargeBuffer memory = LargeBuffer::allocate(size_t(bytes));
  if (!memory)
    return Status::error("paged KV cache: cannot allocate " + std::to_string(bytes) +
                         " bytes for " + std::to_string(numBlocks) + " blocks");
  return std::unique_ptr<PagedKVCache>(new PagedKVCache(layout, numBlocks, std::move(memory)));
}

int32_t PagedKVCache::blocksForBudget(const PagedKVLayout &layout, uint64_t bytes) {
  if (!layoutProblem(layout).empty())
    return 0;
  uint64_t blocks = bytes / layout.bytesPerBlock();
  return int32_t(std::min<uint64_t>(blocks, uint64_t(std::numeric_limits<int32_t>::max())));
}

PagedKVCache::PagedKVCache(const PagedKVLayout &layout, int32_t numBlocks, LargeBuffer memory)
    : layout_(layout), numBlocks_(numBlocks), memory_(std::move(memory)), refCounts_(numBlocks, 0) {
  // Pushed highest first so that a fresh pool hands out 1, 2, 3, ...
  freeList_.reserve(numBlocks - 1);
  for (int32_t block = numBlocks - 1; block >= 1; --block)
    freeList_.push_back(block);
}

void *PagedKVCache::sectionBase(int32_t section) {
  return const_cast<void *>(static_cast<const PagedKVCache *>(this)->sectionBase(section));
}

const void *PagedKVCache::sectionBase(int32_t section) const {
  assert(section >= 0 && section < layout_.sections && "section out of range");
  return memory_.data() + uint64_t(section) * uint64_t(numBlocks_) * layout_.blockBytes();
}

void *PagedKVCache::blockData(int32_t section, int32_t block) {
  return const_cast<void *>(static_cast<const PagedKVCache *>(this)->blockData(section, block));
}

const void *PagedKVCache::blockData(int32_t section, int32_t block) const {
  assert(block >= 0 && block < numBlocks_ && "block out of range");
  return static_cast<const uint8_t *>(sectionBase(section)) +
         uint64_t(block) * layout_.blockBytes();
}

PagedKVCache::SequenceId PagedKVCache::createSequence() {
  SequenceId id;
  if (!freeSlots_.empty()) {
    id = freeSlots_.back();
    freeSlots_.pop_back();
  } else {
    id = SequenceId(sequences_.size());
    sequences_.emplace_back();
  }
  Sequence &seq = sequences_[id];
  seq.live = true;
  seq.length = 0;
  seq.table.clear();
  ++liveSequences_;
  return id;
}

PagedKVCache::SequenceId PagedKVCache::fork(SequenceId parent) {
  (void)sequence(parent); // Checks the id before createSequence may grow sequences_.
  SequenceId child = createSequence();
  const Sequence &from = sequences_[parent];
  Sequence &to = sequences_[child];
  to.length = from.length;
  to.table = from.table;
  for (int32_t block : to.table)
    if (block != kTrashBlock) // Dropped by a sliding window.
      ++refCounts_[block];
  if (trace::enabled())
    trace::instant("kv", "fork",
                   trace::Args()
                       .add("parent", parent)
                       .add("child", child)
                       .add("positions", to.length)
                       .add("shared_blocks", int64_t(to.table.size())));
  return child;
}

int32_t PagedKVCache::blocksNeeded(SequenceId seq, int32_t count) const {
  const Sequence &s = sequence(seq);
  if (count < 1)
    return 0;
  int64_t newLength = int64_t(s.length) + count;
  int32_t newBlocks = blocksFor(newLength, layout_.blockSize) - int32_t(s.table.size());
  // Positions land in the last block only when it is partially filled.
  bool copyLast = s.length % layout_.blockSize != 0 && refCounts_[s.table.back()] > 1;
  return newBlocks + (copyLast ? 1 : 0);
}

ErrorOr<int32_t> PagedKVCache::append(SequenceId seq, int32_t count) {
  Sequence &s = sequence(seq);
  if (count < 1)
    return Status::error("paged KV cache: cannot append " + std::to_string(count) +
                         " positions to sequence " + std::to_string(seq));
  if (int64_t(s.length) + count > layout_.maxPositions)
    return Status::error("paged KV cache: sequence " + std::to_string(seq) + " holds " +
                         std::to_string(s.length) + " positions; " + std::to_string(count) +
                         " more exceed the context length of " +
                         std::to_string(layout_.maxPositions));
  int32_t needed = blocksNeeded(seq, count);
  if (needed > freeBlocks())
    return Status::error("paged KV cache: appending " + std::to_string(count) +
                         " positions to sequence " + std::to_string(seq) + " needs " +
                         std::to_string(needed) + " blocks, " + std::to_string(freeBlocks()) +
                         " are free");

  int32_t filledRows = s.length % layout_.blockSize;
  if (filledRows != 0 && refCounts_[s.table.back()] > 1) {
    // Copy-on-write: the other holders keep the old block untouched.
    int32_t shared = s.table.back();
    int32_t copy = takeBlock();
    uint64_t bytes = uint64_t(filledRows) * layout_.rowBytes;
    for (int32_t section = 0; section < layout_.sections; ++section)
      std::memcpy(blockData(section, copy), blockData(section, shared), size_t(bytes));
    releaseBlock(shared);
    s.table.back() = copy;
  }
  int32_t first = s.length;
  s.length += count;
  int32_t wanted = blocksFor(s.length, layout_.blockSize);
  while (int32_t(s.table.size()) < wanted)
    s.table.push_back(takeBlock());
  peakUsedBlocks_ = std::max(peakUsedBlocks_, usedBlocks());
  return first;
}

void PagedKVCache::truncate(SequenceId seq, int32_t n) {
  Sequence &s = sequence(seq);
  s.length = std::clamp(n, 0, s.length);
  size_t keep = size_t(blocksFor(s.length, layout_.blockSize));
  // Released last block first, so the LIFO free list hands them back in table order.
  while (s.table.size() > keep) {
    if (s.table.back() != kTrashBlock)
      releaseBlock(s.table.back());
    s.table.pop_back();
  }
}

int32_t PagedKVCache::dropBefore(SequenceId seq, int32_t position) {
  Sequence &s = sequence(seq);
  int32_t released = 0;
  const size_t whole = size_t(std::max(position, 0) / layout_.blockSize);
  for (size_t j = 0; j < std::min(whole, s.table.size()); ++j)
    if (s.table[j] != kTrashBlock) {
      releaseBlock(s.table[j]);
      s.table[j] = kTrashBlock;
      ++released;
    }
  if (released && trace::enabled())
    trace::instant("kv", "free blocks",
                   trace::Args()
                       .add("sequence", seq)
                       .add("blocks", released)
                       .add("reason", "outside the window")
                       .add("free_blocks", freeBlocks()));
  return released;
}

bool PagedKVCache::holdsPositions(SequenceId seq, int32_t n) const {
  const Sequence &s = sequence(seq);
  const size_t blocks = std::min(size_t(blocksFor(n, layout_.blockSize)), s.table.size());
  for (size_t j = 0; j < blocks; ++j)
    if (s.table[j] == kTrashBlock)
      return false;
  return true;
}

void PagedKVCache::free(SequenceId seq) {
  const int32_t before = freeBlocks();
  truncate(seq, 0);
  if (trace::enabled())
    trace::instant("kv", "free blocks",
                   trace::Args()
                       .add("sequence", seq)
                       .add("blocks", freeBlocks() - before)
                       .add("reason", "sequence done")
                       .add("free_blocks", freeBlocks()));
  sequences_[seq].live = false;
  freeSlots_.push_back(seq);
  --liveSequences_;
}

int32_t PagedKVCache::length(SequenceId seq) const { return sequence(seq).length; }

const std::vector<int32_t> &PagedKVCache::blockTable(SequenceId seq) const {
  return sequence(seq).table;
}

bool PagedKVCache::isLive(SequenceId seq) const {
  return seq >= 0 && seq < SequenceId(sequences_.size()) && sequences_[seq].live;
}

int32_t PagedKVCache::refCount(int32_t block) const {
  assert(block >= 0 && block < numBlocks_ && "block out of range");
  return refCounts_[block];
}

PagedKVCache::Sequence &PagedKVCache::sequence(SequenceId seq) {
  assert(isLive(seq) && "not a live sequence id");
  return sequences_[seq];
}

const PagedKVCache::Sequence &PagedKVCache::sequence(SequenceId seq) const {
  assert(isLive(seq) && "not a live sequence id");
  return sequences_[seq];
}

int32_t PagedKVCache::takeBlock() {
  assert(!freeList_.empty() && "callers check blocksNeeded first");
  int32_t block = freeList_.back();
  freeList_.pop_back();
  refCounts_[block] = 1;
  return block;
}

void PagedKVCache::releaseBlock(int32_t block) {
  assert(block != kTrashBlock && refCounts_[block] > 0 && "releasing an unheld block");
  if (--refCounts_[block] == 0)
    freeList_.push_back(block);
}

} // namespace quill
