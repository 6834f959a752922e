// Checks end-to-end tests share: an artifact's decode, prefill and batch
// steps against the reference forward pass (ReferenceForward.h).
#pragma once

#include "ReferenceForward.h"
#include "runtime/artifact/ModelConfig.h"

#include <functional>
#include <string>
#include <vector>

namespace quill::test {

/// A fresh oracle for one check (each keeps its own KV cache).
using OracleFactory = std::function<ErrorOr<ReferenceModel>()>;
/// The oracle of a llama2.c checkpoint file.
OracleFactory oracleFile(const std::string &path);

/// max |a - b| / max |b|.
double relativeDifference(const float *got, const std::vector<float> &expected);

/// The test prompts' token at `pos`: BOS (1), then a fixed spread.
int tokenAt(int pos, int vocab);

/// The prefill step over one chunk, then 12 decode steps, against the
/// oracle within 1e-4; one and two threads bitwise equal.
void checkDecodeAndPrefill(const std::string &artifact, const OracleFactory &makeOracle,
                           const ModelConfig &c, const std::string &what);

/// The batch step: one sequence alone, then beside a second one, against
/// the oracle; the first sequence's logits are the same bits either way.
void checkBatch(const std::string &artifact, const OracleFactory &makeOracle, const ModelConfig &c,
                const std::string &what);

} // namespace quill::test
