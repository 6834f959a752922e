// What a compiled kernel may be dispatched with, as the kernel library itself
// states it. The schedule in an artifact is data and is checked as if hostile;
// the kernels are native code, trusted as a shared library is (see README,
// "Trust model"), so each kernel's own statement of the units it computes and
// the bytes it touches is what every dispatch of it is held to.
#pragma once

#include "runtime/artifact/ArtifactFormat.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace quill {

/// Each kernel K of a kernel library (the CPU's shared object, or the PTX of
/// a CUDA artifact) exports `quill_contract_K`, an array of int64:
/// kKernelContractVersion, units, units per live row (0: not a batch
/// step's live-row dispatch), the writes mask, the
/// binding count n, then n pairs (memory space, bytes).
constexpr const char *kKernelContractPrefix = "quill_contract_";
/// The library also exports `quill_model_limits` (modelLimitWords): the
/// vocabulary and context its kernels were compiled for (the bounds of every
/// token and position passed to them), the prefill chunk, and the batch
/// step's geometry and where its per-row inputs lie (the kernels read token
/// ids, positions and block tables from there as indices).
constexpr const char *kModelLimitsSymbol = "quill_model_limits";
constexpr int64_t kKernelContractVersion = 1;
/// The words of the model limits, and of a contract before its bindings.
constexpr size_t kModelLimitWords = 11;
constexpr size_t kContractHeaderWords = 5;

/// The contract words of a kernel dispatched as `d` (the compiler's side).
std::vector<int64_t> kernelContractWords(const Dispatch &d);
/// The model limits' words for a configuration and its optional prefill
/// and batch steps.
std::vector<int64_t> modelLimitWords(const ModelConfig &config, const Schedule *prefill,
                                     const BatchLayout *batch);

/// Checks dispatch `index` of a schedule (of kernel `name`) against the
/// kernel's contract words, which the library holds; the error says which
/// field disagrees.
Status checkDispatchContract(const Dispatch &d, size_t index, const std::string &name,
                             const int64_t *contract);
/// Whether `count` words are a whole contract: its header and as many
/// binding pairs as it says (for libraries that say how long a symbol is).
bool isWholeContract(const int64_t *words, size_t count);

/// The contract words of kernel `name`, null when the library states none.
using ContractLookup = std::function<const int64_t *(const std::string &name)>;
/// Checks every dispatch of `schedule` against its kernel's contract; `what`
/// ("prefill ", "batch " or "") names the schedule in the error.
Status checkScheduleContracts(const Schedule &schedule, const std::string &what,
                              const ContractLookup &lookup);

/// Checks the artifact's configuration and steps against the library's
/// model limits (an array of `count` words).
Status checkModelLimits(const ModelConfig &config, const Schedule *prefill,
                        const BatchLayout *batch, const int64_t *limits);

} // namespace quill
