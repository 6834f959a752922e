// quill-run's batch modes: --batch-file (many prompts through the batch
// scheduler) and --bench --batch (batched decode throughput).
#pragma once

#include "RunOptions.h"

#include "runtime/artifact/Artifact.h"
#include "runtime/device/Device.h"
#include "runtime/tokenizer/Tokenizer.h"

#include <tbb/task_arena.h>

#include <atomic>

namespace quill {

/// Runs every line of options.batchFile as a prompt; returns the exit code
/// (130 when `interrupt` was set: every sequence stops before its next
/// token, prompts not started yet get none, and all are printed).
int runBatchFile(const RunOptions &options, const Artifact &artifact, const Tokenizer &tokenizer,
                 Device &device, tbb::task_arena &arena, const std::atomic<bool> *interrupt);

/// Runs options.prompt with --n-samples or --beams through the batch
/// scheduler (one request, several sequences); returns the exit code, 130
/// when `interrupt` stopped it (what was generated is printed).
int runGroup(const RunOptions &options, const Artifact &artifact, const Tokenizer &tokenizer,
             Device &device, tbb::task_arena &arena, const std::atomic<bool> *interrupt);

/// Times batched decode for each of options.batchSizes; returns the exit code.
int benchBatches(const RunOptions &options, const Artifact &artifact, const Tokenizer &tokenizer,
                 Device &device, tbb::task_arena &arena);

} // namespace quill
