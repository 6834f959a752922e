// The batch scheduler's public face: the paged cache it runs over, and run(),
// which hands the requests to one scheduler::Run (SchedulerRun.h). Each
// concern of a run lives in its own file: Admission (the KV budget),
// PrefixRetention, RowAssembly, BeamGroups and SampleFanOut.
#include "runtime/scheduler/BatchScheduler.h"

#include "runtime/scheduler/SchedulerRun.h"

#include <algorithm>

namespace quill {

ErrorOr<std::unique_ptr<PagedKVCache>> createPagedCache(Device &device, const ModelConfig &config,
                                                        uint64_t budgetBytes, int32_t sequences) {
  const BatchLayout *batch = device.batchLayout();
  if (!batch)
    return Status::error("the artifact has no batch step");
  PagedKVLayout layout = pagedLayoutFor(*batch, config);
  int64_t blocks;
  if (budgetBytes > 0) {
    blocks = PagedKVCache::blocksForBudget(layout, budgetBytes);
    if (blocks < 2)
      return Status::error("a KV budget of " + std::to_string(budgetBytes >> 20) +
                           " MB does not hold one block (" +
                           std::to_string(layout.bytesPerBlock()) + " bytes)");
  } else {
    // Every sequence in flight can reach the full context, within 1 GiB.
    int64_t full = int64_t(sequences) * scheduler::ceilDiv(config.seqLen, batch->blockSize) + 1;
    blocks = std::min<int64_t>(full, PagedKVCache::blocksForBudget(layout, uint64_t(1) << 30));
    blocks = std::max<int64_t>(blocks, 2);
  }
  if (blocks > batch->maxBlocks)
    return Status::error("a KV budget of " + std::to_string(blocks) + " blocks exceeds the " +
                         std::to_string(batch->maxBlocks) + " the compiled kernels address");
  auto cache = PagedKVCache::create(layout, static_cast<int32_t>(blocks));
  if (!cache)
    return cache.status();
  if (Status s = device.attachPagedCache(**cache); !s)
    return s;
  return cache;
}

PagedKVLayout pagedLayoutFor(const BatchLayout &batch, const ModelConfig &config) {
  PagedKVLayout layout;
  layout.blockSize = batch.blockSize;
  layout.sections = batch.sections;
  layout.rowBytes = config.kvRowBytes();
  layout.maxPositions = config.seqLen;
  return layout;
}

BatchScheduler::BatchScheduler(Device &device, PagedKVCache &cache, const Tokenizer &tokenizer,
                               const ModelConfig &config, SamplerFactory samplers,
                               BatchOptions options)
    : device_(device), cache_(cache), tokenizer_(tokenizer), config_(config),
      samplers_(std::move(samplers)), options_(options) {}

std::vector<ErrorOr<GenerationResult>>
BatchScheduler::run(const std::vector<GenerationRequest> &requests, BatchStats *stats) {
  BatchStats local;
  BatchStats &counters = stats ? *stats : local;
  counters = BatchStats{};
  if (!device_.batchLayout())
    return std::vector<ErrorOr<GenerationResult>>(requests.size(),
                                                  Status::error("the artifact has no batch step"));
  scheduler::Run run(device_, cache_, tokenizer_, config_, samplers_, options_, counters,
                     /*online=*/false);
  return run.execute(requests);
}

} // namespace quill
