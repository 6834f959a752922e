// Admission against the KV budget: which requests can run at all, how many
// KV blocks and batch slots the sequences in flight may still claim, and
// whether the request at the head of the queue is admitted now, waits, or
// can never run. Private to runtime/scheduler.
//
// The rule: a request is admitted only when the cache can hold every
// position it may still write on top of every position the sequences in
// flight may still write. So a sequence, once admitted, always finishes (its
// appends cannot run out of blocks), and a request that does not fit yet
// waits for blocks to free up.
#pragma once

#include "runtime/scheduler/Sequence.h"

namespace quill::scheduler {

/// Sequences `request` runs at once: its beams, or its samples.
int32_t requestWidth(const GenerationRequest &request);

/// Why request `index` can never run whatever its prompt (a negative token
/// budget; samples or beams outside 1..kMaxBeams, or both); ok otherwise.
Status checkRequest(size_t index, const GenerationRequest &request);

/// Why request `index`'s prompt of `promptLength` tokens can never run (it
/// is longer than the context of `seqLen` positions); ok otherwise.
Status checkPromptLength(size_t index, int32_t promptLength, int32_t seqLen);

/// The most positions a sequence of `promptLength` prompt tokens and at most
/// `maxNewTokens` new ones may write: the prompt, then every new token but
/// the last (which is never fed back), within the context.
int32_t maxPositionsFor(int32_t promptLength, int32_t maxNewTokens, int32_t seqLen);

/// Whether the group's reservation covers all `width` of its sequences as a
/// whole: a prompt not yet forked into its samples, or a beam search (whose
/// count of beams goes down and up again). Counted once per group.
bool reservesWholeGroup(const Group &group);

/// Blocks `q` may still take from the free list: new blocks up to its last
/// position, plus a copy of its last block when that is shared and still
/// filling. For a group reserved as a whole (reservesWholeGroup), every
/// sequence it may have may fill its own blocks from the last whole block
/// `q` holds (the partial one copied on write): that many times `width`.
int32_t futureBlocks(const PagedKVCache &cache, const Sequence &q);

/// Whether the cache can take `candidate` on top of the blocks in use and
/// those the sequences in `live` may still take.
bool fitsBudget(const PagedKVCache &cache, const SequenceList &live, const Sequence &candidate);

/// Slots (sequences at once) the groups in `live` may have: `width` for a
/// beam search or a prompt not yet forked, else its sequences still
/// running. At most maxSequences, so every decoding sequence gets a row.
int32_t slotsInUse(const SequenceList &live);

/// Blocks a group of `width` sequences of `maxPositions` positions needs
/// alone in the cache: width * ceil(maxPositions / blockSize).
int32_t blocksAlone(int32_t width, int32_t maxPositions, int32_t blockSize);

/// What admission decides for the request at the head of the queue.
struct Verdict {
  enum Kind {
    Admit,           ///< Run it now.
    Wait,            ///< Not now: slots or blocks free up as others finish.
    Reject,          ///< Never: `error` says why; the next request is judged.
    FreeHeldPrefixes ///< Only kept prefixes stand in its way: free them, judge again.
  };
  Kind kind = Wait;
  Status error;
};

/// Before any cache sequence is made for request `index` (`width`
/// sequences): Reject when its width exceeds `maxSequences`, Wait while the
/// groups in flight leave fewer than `width` slots, else Admit (so far).
Verdict judgeSlots(size_t index, int32_t width, int32_t slotsInUse, int32_t maxSequences);

/// Once `candidate` holds the prefix it shares (or nothing): Admit when it
/// fits the budget; Reject when it needs more blocks alone than the cache
/// has; FreeHeldPrefixes when nothing is in flight but kept prefixes are
/// (`prefixesHeld`); else Wait.
Verdict judgeBudget(const PagedKVCache &cache, const SequenceList &live, const Sequence &candidate,
                    bool prefixesHeld);

} // namespace quill::scheduler
