// Beam bookkeeping: a beam search's sequences step together once all their
// rows are in; its choices continue beams in place or in forks (sharing every
// block), the beams nobody continues end, and the finished search becomes the
// request's result. Private to runtime/scheduler.
#pragma once

#include "runtime/scheduler/Sequence.h"

namespace quill::scheduler {

/// The tokens that end a hypothesis of `request`: EOS, and BOS where it
/// differs (llama2.c models separate documents with it); none with
/// ignoreEos.
std::vector<int32_t> beamEndTokens(const GenerationRequest &request, const ModelConfig &config);

/// One step of `group`'s search from its beams' logits `rows` (one per
/// running beam, any order; a sequence's member is its beam). Each choice
/// continues its parent: the first in place, the others in forks made by
/// `sequences` (new sequences go to `born`); the parents nobody continues,
/// or every beam once the search is done, go to `ended`. Fails, changing
/// nothing, when the rows are not one per running beam (an internal error:
/// admission keeps a slot for every beam).
Status stepBeams(Group &group, const std::vector<LogitRow> &rows, const GenerationRequest &request,
                 PagedKVCache &cache, const SequenceFactory &sequences, SequenceList &born,
                 std::vector<Sequence *> &ended);

/// A beam of a finished search retires: the group keeps the prompt's
/// timings (admission to first logits, first logits to `now`).
void recordBeamTimes(Group &group, const Sequence &q, Clock::time_point now);

/// A finished search's result.
struct BeamOutcome {
  /// The best hypothesis, with every returned hypothesis in `sequences`.
  GenerationResult result;
  int64_t generatedTokens = 0; ///< The best hypothesis's, for BatchStats.
};

/// The result of `group`'s finished search for `request` (whose prompt is
/// `prompt`): its hypotheses best first, each replayed through the output
/// rules (text; a stop string cuts it). Fails when the search found none.
ErrorOr<BeamOutcome> beamGroupResult(const Group &group, const GenerationRequest &request,
                                     const std::vector<int32_t> &prompt, const Tokenizer &tokenizer,
                                     const ModelConfig &config);

} // namespace quill::scheduler
