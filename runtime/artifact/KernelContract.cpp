// Kernel contracts: written by the compiler beside each kernel, checked by the
// runtime against every dispatch before the first step.
#include "runtime/artifact/KernelContract.h"

namespace quill {

std::vector<int64_t> kernelContractWords(const Dispatch &d) {
  std::vector<int64_t> words = {kKernelContractVersion, d.work, d.liveRowUnits,
                                static_cast<int64_t>(d.writes),
                                static_cast<int64_t>(d.bindings.size())};
  for (const Binding &b : d.bindings) {
    words.push_back(static_cast<int64_t>(b.space));
    words.push_back(static_cast<int64_t>(b.bytes));
  }
  return words;
}

namespace {
const char *const kLimitNames[] = {"version",
                                   "vocabulary",
                                   "context",
                                   "prefill tokens",
                                   "batch rows",
                                   "KV block size",
                                   "block table width",
                                   "KV block limit",
                                   "batch tokens offset",
                                   "batch positions offset",
                                   "batch tables offset"};
constexpr size_t kLimitWords = kModelLimitWords;
static_assert(sizeof(kLimitNames) / sizeof(kLimitNames[0]) == kModelLimitWords);
} // namespace

std::vector<int64_t> modelLimitWords(const ModelConfig &config, const Schedule *prefill,
                                     const BatchLayout *batch) {
  std::vector<int64_t> words = {kKernelContractVersion, config.vocabSize, config.seqLen,
                                prefill ? prefill->tokens : 0};
  if (batch)
    words.insert(words.end(), {batch->rows, batch->blockSize, batch->tableWidth, batch->maxBlocks,
                               static_cast<int64_t>(batch->tokens.offset),
                               static_cast<int64_t>(batch->positions.offset),
                               static_cast<int64_t>(batch->tables.offset)});
  words.resize(kLimitWords, 0);
  return words;
}

Status checkDispatchContract(const Dispatch &d, size_t index, const std::string &name,
                             const int64_t *contract) {
  auto fail = [&](const std::string &what, int64_t got, int64_t compiled) {
    return Status::error("schedule dispatch " + std::to_string(index) + " of kernel " + name +
                         " has " + what + " " + std::to_string(got) +
                         ", the kernel was compiled for " + std::to_string(compiled));
  };
  if (contract[0] != kKernelContractVersion)
    return Status::error("kernel " + name + " has a contract of unknown version " +
                         std::to_string(contract[0]));
  if (d.work != contract[1])
    return fail("work count", d.work, contract[1]);
  if (d.liveRowUnits != contract[2])
    return fail("units per live row", d.liveRowUnits, contract[2]);
  if (static_cast<int64_t>(d.writes) != contract[3])
    return fail("writes mask", static_cast<int64_t>(d.writes), contract[3]);
  if (static_cast<int64_t>(d.bindings.size()) != contract[4])
    return fail("binding count", static_cast<int64_t>(d.bindings.size()), contract[4]);
  for (size_t i = 0; i < d.bindings.size(); ++i) {
    const Binding &b = d.bindings[i];
    const std::string which = "binding " + std::to_string(i);
    if (static_cast<int64_t>(b.space) != contract[5 + 2 * i])
      return fail(which + " memory space", static_cast<int64_t>(b.space), contract[5 + 2 * i]);
    if (static_cast<int64_t>(b.bytes) != contract[6 + 2 * i])
      return fail(which + " bytes", static_cast<int64_t>(b.bytes), contract[6 + 2 * i]);
  }
  return Status::ok();
}

bool isWholeContract(const int64_t *words, size_t count) {
  // words[4] bindings of 2 words each follow the header; an absurd count
  // fails the comparison (count is far below 2^62).
  return count >= kContractHeaderWords && words[4] >= 0 &&
         uint64_t(words[4]) < (uint64_t(1) << 62) &&
         uint64_t(words[4]) * 2 + kContractHeaderWords == count;
}

Status checkScheduleContracts(const Schedule &schedule, const std::string &what,
                              const ContractLookup &lookup) {
  for (size_t i = 0; i < schedule.dispatches.size(); ++i) {
    const Dispatch &d = schedule.dispatches[i];
    const std::string &name = schedule.kernels[d.kernel];
    const int64_t *contract = lookup(name);
    if (!contract)
      return Status::error("the kernel library states no contract for kernel " + name);
    if (Status s = checkDispatchContract(d, i, name, contract); !s)
      return Status::error(what + s.message());
  }
  return Status::ok();
}

Status checkModelLimits(const ModelConfig &config, const Schedule *prefill,
                        const BatchLayout *batch, const int64_t *limits) {
  if (limits[0] != kKernelContractVersion)
    return Status::error("the kernel library's model limits have unknown version " +
                         std::to_string(limits[0]));
  std::vector<int64_t> expected = modelLimitWords(config, prefill, batch);
  for (size_t i = 1; i < kLimitWords; ++i)
    if (expected[i] != limits[i])
      return Status::error("the artifact's " + std::string(kLimitNames[i]) + " is " +
                           std::to_string(expected[i]) + ", the kernels were compiled for " +
                           std::to_string(limits[i]));
  return Status::ok();
}

} // namespace quill
