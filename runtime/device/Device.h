// The kernel-launch interface between the decode loop and a device. The CPU
// implements it with oneTBB; a GPU implementation can be added beside it
// without touching the decode loop.
#pragma once

#include "runtime/artifact/ArtifactFormat.h"
#include "runtime/kv_cache/KVCache.h"
#include "runtime/kv_cache/PagedKVCache.h"

#include <cstdint>
#include <string>

namespace quill {

class KernelProfile;

class Device {
public:
  virtual ~Device() = default;
  /// "cpu" or "cuda".
  virtual const char *name() const = 0;
  /// Runs the compiled step for `token` at position `pos`: writes that
  /// position's keys and values into the cache and computes the logits.
  virtual void step(int32_t token, int32_t pos) = 0;
  /// Tokens one prefill() call processes; 0 when the artifact has no
  /// prefill step (prompts then go through step() one token at a time).
  virtual int32_t prefillChunk() const { return 0; }
  /// Runs prefillChunk() tokens at positions pos .. pos + chunk - 1 in one
  /// pass over the weights; the logits are then those of the last token.
  virtual void prefill(const int32_t *tokens, int32_t pos) { (void)tokens, (void)pos; }
  /// The logits of the last step: one float per vocabulary entry, valid until
  /// the next step.
  virtual const float *logits() const = 0;
  virtual KVCache &kvCache() = 0;

  /// The batch step's shape, or nullptr when the artifact has none.
  virtual const BatchLayout *batchLayout() const { return nullptr; }
  /// Binds the paged cache the batch step reads and writes; its geometry
  /// must be batchLayout()'s (see pagedLayout()).
  virtual Status attachPagedCache(PagedKVCache &cache) {
    (void)cache;
    return Status::error("this artifact has no batch step");
  }
  /// Where the caller writes the batch step's rows before batchStep():
  /// token ids, positions and block tables (tableWidth entries per row),
  /// one entry or table row per live row.
  virtual int32_t *batchTokens() { return nullptr; }
  virtual int32_t *batchPositions() { return nullptr; }
  virtual int32_t *batchTables() { return nullptr; }
  /// Runs the batch step on the first `rows` rows; the first `logitRows` of
  /// them get logits (row i's at batchLogits() + i * vocab). Rows past
  /// `rows` are pointed at the paged cache's reserved block.
  virtual void batchStep(int32_t rows, int32_t logitRows) { (void)rows, (void)logitRows; }
  virtual const float *batchLogits() const { return nullptr; }
  /// A line or two on what runs where, for --verbose.
  virtual std::string describe() const = 0;

  /// The error that stopped a step, if one did: a GPU's launches can fail
  /// (a fault, a lost device), and every step after that does nothing. The
  /// decode loop checks it after each step; the CPU's steps cannot fail.
  virtual Status error() const { return Status::ok(); }

  /// From now on, times every kernel launch (serializing them), for
  /// finding where a step's time goes (quill-run --profile).
  virtual void enableProfiling() {}
  /// Time per kernel, most first; empty unless profiling.
  virtual std::string profileReport() const { return ""; }
  /// The profile itself (for quill-run --profile --report); null unless
  /// profiling.
  virtual const KernelProfile *profile() const { return nullptr; }

  /// A device with its own memory measures its own bandwidth (GB/s, bytes
  /// read and written) for the benchmark's fractions; 0: not measured.
  virtual double measureOwnBandwidthGBs() { return 0; }
};

} // namespace quill
