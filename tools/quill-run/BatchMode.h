// quill-run's batch modes: --batch-file (many prompts through the batch
// scheduler) and --bench --batch (batched decode throughput).
#pragma once

#include "RunOptions.h"

#include "runtime/artifact/Artifact.h"
#include "runtime/device/Device.h"
#include "runtime/tokenizer/Tokenizer.h"

#include <tbb/task_arena.h>

namespace quill {

/// Runs every line of options.batchFile as a prompt; returns the exit code.
int runBatchFile(const RunOptions &options, const Artifact &artifact, const Tokenizer &tokenizer,
                 Device &device, tbb::task_arena &arena);

/// Runs options.prompt with --n-samples or --beams through the batch
/// scheduler (one request, several sequences); returns the exit code.
int runGroup(const RunOptions &options, const Artifact &artifact, const Tokenizer &tokenizer,
             Device &device, tbb::task_arena &arena);

/// Times batched decode for each of options.batchSizes; returns the exit code.
int benchBatches(const RunOptions &options, const Artifact &artifact, const Tokenizer &tokenizer,
                 Device &device, tbb::task_arena &arena);

} // namespace quill
