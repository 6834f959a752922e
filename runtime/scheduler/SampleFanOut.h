// Sampling fan-out: a group of n samples forks its prompt n ways at its first
// logits (every fork sampling from that row), each sequence with logits
// samples its next token (in parallel: every sequence has its own chain and
// output), and finished samples become the request's result. Private to
// runtime/scheduler.
#pragma once

#include "runtime/scheduler/Sequence.h"

#include <tbb/task_arena.h>

namespace quill::scheduler {

/// The prompt of `root`'s group of n samples has its logits: n - 1 forks
/// of it (members 1..n-1, sharing every block) go to `born`.
void forkSamples(Sequence &root, PagedKVCache &cache, const SequenceFactory &sequences,
                 SequenceList &born);

/// `q` (not a beam) has logits `row`: it samples from them, and so do its
/// forks when this is the first row of a group of n samples (forked here,
/// into `born`). Appends each of them with `row` to `toSample`.
void fanOut(Sequence &q, const float *row, PagedKVCache &cache, const SequenceFactory &sequences,
            SequenceList &born, std::vector<LogitRow> &toSample);

/// Samples `q`'s next token from `logits` (of `vocab` entries) and returns
/// whether it goes on: false once its output has ended it (end token, stop
/// string, budget) or its cache holds the context (`seqLen`). Touches only
/// `q` (sequences sample in parallel): a failure (nothing to pick) is left
/// in q.failure.
bool sampleNext(Sequence &q, const float *logits, const PagedKVCache &cache, int32_t vocab,
                int32_t seqLen);

/// Samples every row of `toSample` (in `arena`, in parallel, when given and
/// there are several); whether each goes on, in the same order.
std::vector<char> sampleAll(const std::vector<LogitRow> &toSample, const PagedKVCache &cache,
                            const ModelConfig &config, tbb::task_arena *arena);

/// A sample (not a beam) retires at `now`: its output finished, its timings
/// set, its result moved into its group's slot. Returns its tokens.
int64_t recordSample(Sequence &q, Clock::time_point now);

/// The result of a finished group of samples: the first sample, with all of
/// them in `sequences` when there are several.
GenerationResult samplesResult(const Group &group);

} // namespace quill::scheduler
