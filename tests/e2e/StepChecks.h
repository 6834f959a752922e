// Checks end-to-end tests share: an artifact's decode, prefill and batch
// steps against the reference forward pass (ReferenceForward.h).
#pragma once

#include "ReferenceForward.h"
#include "runtime/artifact/ModelConfig.h"

#include <functional>
#include <set>
#include <string>
#include <vector>

namespace quill::test {

/// A fresh oracle for one check (each keeps its own KV cache).
using OracleFactory = std::function<ErrorOr<ReferenceModel>()>;
/// The oracle of a llama2.c checkpoint file; the products over the
/// weights `q8Inputs` names take Q8_0-rounded inputs
/// (ReferenceModel::roundInputsToQ8_0), those `bf16Inputs` names
/// bf16-rounded ones.
OracleFactory oracleFile(const std::string &path, std::set<std::string> q8Inputs = {},
                         std::set<std::string> bf16Inputs = {});

/// The canonical names of `c`'s weight matrices: every layer's wq, wk, wv,
/// wo, w1, w2, w3, the embedding and the classifier.
std::set<std::string> matrixNames(const ModelConfig &c);
/// Those of them whose type under `typeOf` (an encodeTensor type) takes
/// Q8_0 inputs in Quill: the block types (Q8_0, Q4_0, Q4_K, Q6_K).
std::set<std::string>
q8InputMatrices(const ModelConfig &c,
                const std::function<std::string(const std::string &)> &typeOf);

/// Those whose type is BF16: they take bf16-rounded inputs in Quill.
std::set<std::string>
bf16InputMatrices(const ModelConfig &c,
                  const std::function<std::string(const std::string &)> &typeOf);

/// max |a - b| / max |b|.
double relativeDifference(const float *got, const std::vector<float> &expected);

/// The test prompts' token at `pos`: BOS (1), then a fixed spread.
int tokenAt(int pos, int vocab);

/// The logits' tolerance where products take Q8_0-rounded inputs. The
/// kernels' activations differ from the oracle's in their last bits, so an
/// input that lands next to a rounding boundary (x / d within about 1e-4 of
/// k + 1/2: a few per step) may round the other way, moving the logits by
/// up to about 2e-3 of their largest each time; expectFollowsTheRounding
/// checks that the rounding itself is the oracle's.
constexpr double kQ8InputTolerance = 2e-2;
/// Likewise where products take bf16-rounded inputs, which amplify more:
/// bf16 keeps 8 bits, so differences of about 1e-5 in the activations
/// (the kernels' softmax against the oracle's, from the third position on)
/// already flip roundings, each moving an input by a bf16 step (measured:
/// the oracle perturbed by 2^-17 of every product moves its logits by
/// 2-3e-3 of the largest, by 2^-22 not at all).
/// expectRoundsAsTheOracleAtPositionZero checks the rounding exactly.
constexpr double kBf16InputTolerance = 2e-2;
/// The tolerance for products that round the inputs `q8` and `bf16` name.
inline double roundedInputTolerance(const std::set<std::string> &q8,
                                    const std::set<std::string> &bf16) {
  if (!q8.empty())
    return kQ8InputTolerance;
  return bf16.empty() ? 1e-4 : kBf16InputTolerance;
}

/// The prefill step over one chunk, then 12 decode steps, against the
/// oracle within `tolerance` (max |a - b| / max |b|); one and two threads
/// bitwise equal.
void checkDecodeAndPrefill(const std::string &artifact, const OracleFactory &makeOracle,
                           const ModelConfig &c, const std::string &what, double tolerance = 1e-4);

/// The batch step: one sequence alone, then beside a second one, against
/// the oracle; the first sequence's logits are the same bits either way.
void checkBatch(const std::string &artifact, const OracleFactory &makeOracle, const ModelConfig &c,
                const std::string &what, double tolerance = 1e-4);

/// Over a prefill chunk and 12 decode steps, the artifact's logits are far
/// closer to the oracle `rounded` (Q8_0-rounded inputs) than to `plain`
/// (f32 inputs): the summed |differences| at most a third.
void expectFollowsTheRounding(const std::string &artifact, const OracleFactory &rounded,
                              const OracleFactory &plain, const ModelConfig &c,
                              const std::string &what);

/// Rounded activations checked where no softmax can amplify a last-bit
/// difference: every token at position 0 (attention over one position, a
/// softmax of 1), through the decode step and as rows of the batch step.
/// Each row is more than 1e-3 from the `plain` oracle, and the rows of each
/// step together are within a fifth of that distance from the `rounded`
/// one (without the rounding they would be as far from both). Not each row
/// within a tenth: a product summed in another order than the oracle's
/// (vdpbf16ps sums pairs) can still put one activation on the other side
/// of a bf16 rounding boundary, moving that row by about 1e-3 (seen on Zen
/// 5: 8e-4 against 3.8e-3 from the plain oracle).
void expectRoundsAsTheOracleAtPositionZero(const std::string &artifact,
                                           const OracleFactory &rounded, const OracleFactory &plain,
                                           const ModelConfig &c, const std::string &what);

} // namespace quill::test
