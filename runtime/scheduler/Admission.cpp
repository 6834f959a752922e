// Admission against the KV budget: request checks, block and slot
// reservations, and the verdicts on the request at the head of the queue.
#include "runtime/scheduler/Admission.h"

#include <algorithm>

namespace quill::scheduler {

int32_t requestWidth(const GenerationRequest &request) {
  return request.beamSearch ? request.beamSearch->beams : request.samples;
}

Status checkRequest(size_t index, const GenerationRequest &request) {
  if (request.maxNewTokens < 0)
    return Status::error("request " + std::to_string(index) +
                         ": the number of new tokens must not be negative");
  int32_t width = requestWidth(request);
  if (width < 1 || width > kMaxBeams || (request.beamSearch && request.samples != 1))
    return Status::error("request " + std::to_string(index) + ": samples and beams must be 1 to " +
                         std::to_string(kMaxBeams) + ", and not both");
  return Status::ok();
}

Status checkPromptLength(size_t index, int32_t promptLength, int32_t seqLen) {
  if (promptLength > seqLen)
    return Status::error("request " + std::to_string(index) + ": the prompt has " +
                         std::to_string(promptLength) + " tokens but the model's context holds " +
                         std::to_string(seqLen));
  return Status::ok();
}

int32_t maxPositionsFor(int32_t promptLength, int32_t maxNewTokens, int32_t seqLen) {
  return std::min<int32_t>(promptLength + std::max(0, maxNewTokens - 1), seqLen);
}

bool reservesWholeGroup(const Group &group) {
  return group.width > 1 && (!group.forked || group.beams);
}

int32_t futureBlocks(const PagedKVCache &cache, const Sequence &q) {
  const int32_t blockSize = cache.layout().blockSize;
  const std::vector<int32_t> &table = cache.blockTable(q.kv);
  const int32_t length = cache.length(q.kv);
  const int32_t lastBlock = ceilDiv(q.maxPositions, blockSize);
  if (reservesWholeGroup(*q.group))
    return q.group->width * std::max(0, lastBlock - length / blockSize);
  int32_t blocks = std::max(0, lastBlock - int32_t(table.size()));
  if (length % blockSize != 0 && length < q.maxPositions && cache.refCount(table.back()) > 1)
    ++blocks; // Copy-on-write of the shared last block.
  return blocks;
}

bool fitsBudget(const PagedKVCache &cache, const SequenceList &live, const Sequence &candidate) {
  int64_t committed = cache.usedBlocks() + futureBlocks(cache, candidate);
  std::vector<const Group *> counted; // Groups reserved for as a whole, once.
  for (const auto &other : live) {
    const Group *group = other->group.get();
    bool whole = reservesWholeGroup(*group);
    if (whole && std::find(counted.begin(), counted.end(), group) != counted.end())
      continue;
    if (whole)
      counted.push_back(group);
    committed += futureBlocks(cache, *other);
  }
  return committed <= cache.totalBlocks();
}

int32_t slotsInUse(const SequenceList &live) {
  int32_t slots = 0;
  std::vector<const Group *> counted;
  for (const auto &q : live) {
    const Group *group = q->group.get();
    if (std::find(counted.begin(), counted.end(), group) != counted.end())
      continue;
    counted.push_back(group);
    slots += group->beams || !group->forked ? group->width : group->live;
  }
  return slots;
}

int32_t blocksAlone(int32_t width, int32_t maxPositions, int32_t blockSize) {
  return width * ceilDiv(maxPositions, blockSize);
}

Verdict judgeSlots(size_t index, int32_t width, int32_t slotsInUse, int32_t maxSequences) {
  if (width > maxSequences)
    return {Verdict::Reject,
            Status::error("request " + std::to_string(index) + " needs " + std::to_string(width) +
                          " sequences at once but at most " + std::to_string(maxSequences) +
                          " run together (--batch, --batch-rows)")};
  if (slotsInUse + width > maxSequences)
    return {Verdict::Wait, Status::ok()};
  return {Verdict::Admit, Status::ok()};
}

/// The error of a request that needs `alone` blocks, more than the cache has.
static Status neverFits(const PagedKVCache &cache, const Sequence &candidate, int32_t alone) {
  const size_t index = candidate.group->index;
  const int32_t width = candidate.group->width;
  // Sizes with the reserved block, as the budget (--kv-budget) counts them.
  double mib = double(alone + 1) * cache.bytesPerBlock() / (1024.0 * 1024.0);
  double have = double(cache.totalBlocks() + 1) * cache.bytesPerBlock() / (1024.0 * 1024.0);
  return Status::error("request " + std::to_string(index) + " needs " + std::to_string(alone) +
                       " KV blocks (" + std::to_string(candidate.maxPositions) + " positions" +
                       (width > 1 ? " for each of " + std::to_string(width) + " sequences" : "") +
                       ", " + std::to_string(mib) + " MiB) but the KV budget holds " +
                       std::to_string(cache.totalBlocks()) + " (" + std::to_string(have) +
                       " MiB): raise --kv-budget or lower -n");
}

Verdict judgeBudget(const PagedKVCache &cache, const SequenceList &live, const Sequence &candidate,
                    bool prefixesHeld) {
  if (fitsBudget(cache, live, candidate))
    return {Verdict::Admit, Status::ok()};
  int32_t alone =
      blocksAlone(candidate.group->width, candidate.maxPositions, cache.layout().blockSize);
  if (alone > cache.totalBlocks())
    return {Verdict::Reject, neverFits(cache, candidate, alone)};
  if (live.empty() && prefixesHeld)
    return {Verdict::FreeHeldPrefixes, Status::ok()};
  return {Verdict::Wait, Status::ok()};
}

} // namespace quill::scheduler
