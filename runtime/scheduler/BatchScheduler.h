// Continuous batching over the paged KV cache: many requests decode together
// through the compiled batch step, joining and leaving between steps.
#pragma once

#include "runtime/artifact/ModelConfig.h"
#include "runtime/decode/SequenceOutput.h"
#include "runtime/device/Device.h"
#include "runtime/kv_cache/PagedKVCache.h"
#include "runtime/sampling/Sampler.h"
#include "runtime/tokenizer/Tokenizer.h"

#include <tbb/task_arena.h>

#include <functional>
#include <optional>
#include <vector>

namespace quill {

/// Counters of one run, for --verbose and benchmarks.
struct BatchStats {
  int64_t promptTokens = 0;       ///< Over all requests, BOS included.
  int64_t prefilledTokens = 0;    ///< Prompt positions actually computed.
  int64_t prefixTokensReused = 0; ///< Prompt positions shared from another sequence.
  int64_t generatedTokens = 0;
  int64_t steps = 0;
  int32_t peakSequences = 0; ///< Most sequences in flight at once.
  uint64_t peakKVBytes = 0;  ///< Most KV-cache bytes in use at once.
  /// Blocks freed because a sliding window moved past them.
  int64_t windowDroppedBlocks = 0;
  double seconds = 0; ///< Wall time of the whole run.
  /// Steps whose rows were all decode rows: their time and rows (the
  /// steady-state decode throughput, without prefill mixed in).
  double decodeOnlySeconds = 0;
  int64_t decodeOnlyTokens = 0;
  /// Of those, the steps with every one of maxSequences rows decoding: the
  /// full-batch throughput.
  double fullBatchSeconds = 0;
  int64_t fullBatchSteps = 0;
};

struct BatchOptions {
  /// Most sequences in flight at once; 0: as many as the batch step has rows.
  int32_t maxSequences = 0;
  /// Prompts that start alike share the KV blocks of their common prefix.
  bool sharePrefixes = true;
  /// Decoding sequences wait while any prompt is in prefill, so that all
  /// sequences decode in lockstep (benchmarks of the steady state).
  bool prefillFirst = false;
  /// Where the sequences of a step sample in parallel (each has its own
  /// chain, so the split cannot change a token); null: one after another.
  tbb::task_arena *arena = nullptr;
};

/// The sampler of sample `sample` of request `requestIndex`: its own chain
/// and random stream. For beam search, the chain's logit processors rank
/// the beams' tokens (its selector is not used).
using SamplerFactory = std::function<SamplerChain(size_t requestIndex, int32_t sample)>;

/// Runs requests through Device::batchStep. A request with n samples or N
/// beams runs its prompt once, then forks its KV cache (no copy: blocks are
/// shared, copied on write) into n or N sequences. Every step takes token rows from
/// the sequences in flight: one per decoding sequence, then prompt tokens of
/// those still in prefill (chunked, so a long prompt never stalls the
/// others). A request is admitted only when the cache can hold every
/// position it may still write on top of what the sequences in flight may
/// write; so a sequence, once admitted, always finishes, and requests that
/// do not fit yet wait for blocks to free up. Rows of one step never see
/// each other and every kernel computes a row the same way whatever the
/// other rows are, so a request's tokens do not depend on its neighbours.
///
/// Not thread-safe: one scheduler drives one device and one cache.
class BatchScheduler {
public:
  BatchScheduler(Device &device, PagedKVCache &cache, const Tokenizer &tokenizer,
                 const ModelConfig &config, SamplerFactory samplers, BatchOptions options = {});

  /// Runs every request to its end; results in request order. A request
  /// that cannot run (a prompt longer than the context, more KV cache than
  /// the whole budget, a sampler with nothing to pick) gets its error; the
  /// others are unaffected. A broken invariant of the scheduler itself (an
  /// internal error, e.g. the cache lost blocks admission reserved) ends
  /// the run: every request without a result yet gets that error, and the
  /// run's sequences are freed. Every request gets an error when the device
  /// has no batch step.
  std::vector<ErrorOr<GenerationResult>> run(const std::vector<GenerationRequest> &requests,
                                             BatchStats *stats = nullptr);

private:
  Device &device_;
  PagedKVCache &cache_;
  const Tokenizer &tokenizer_;
  const ModelConfig &config_;
  SamplerFactory samplers_;
  BatchOptions options_;
};

/// The paged-cache geometry the device's batch step expects, for a model
/// of `config`.
PagedKVLayout pagedLayoutFor(const BatchLayout &batch, const ModelConfig &config);

/// A paged cache for the device's batch step, attached to it: `budgetBytes`
/// of blocks, or (0) enough for `sequences` sequences to reach the full
/// context, at most 1 GiB. Fails, naming the sizes, when the budget holds
/// no block or more than the kernels can address.
ErrorOr<std::unique_ptr<PagedKVCache>> createPagedCache(Device &device, const ModelConfig &config,
                                                        uint64_t budgetBytes, int32_t sequences);

} // namespace quill
