// Making the sequences of a batch run: admission candidates and forks.
#include "runtime/scheduler/Sequence.h"

namespace quill::scheduler {

std::unique_ptr<Sequence> SequenceFactory::candidate(size_t index, int32_t width,
                                                     const std::vector<int32_t> &prompt,
                                                     int32_t maxPositions,
                                                     PagedKVCache::SequenceId kv) {
  auto q = std::make_unique<Sequence>();
  q->group = std::make_shared<Group>();
  q->group->index = index;
  q->group->width = width;
  q->tokens = prompt;
  q->promptLength = static_cast<int32_t>(prompt.size());
  q->maxPositions = maxPositions;
  q->kv = kv;
  return q;
}

void SequenceFactory::start(Sequence &q) const {
  q.group->live = 1;
  q.result.promptTokens = q.tokens;
  q.sampler.emplace(samplers_(q.group->index, 0));
  q.sampler->reserve(config_.vocabSize);
  for (int32_t token : q.tokens)
    q.sampler->accept(token);
  q.output.emplace(tokenizer_, config_, requests_[q.group->index], q.result);
  q.admitted = Clock::now();
}

std::unique_ptr<Sequence> forkState(PagedKVCache &cache, const Sequence &q, int32_t member) {
  auto child = std::make_unique<Sequence>();
  child->group = q.group;
  child->member = member;
  child->tokens = q.tokens;
  child->promptLength = q.promptLength;
  child->maxPositions = q.maxPositions;
  child->kv = cache.fork(q.kv);
  return child;
}

std::unique_ptr<Sequence> SequenceFactory::fork(PagedKVCache &cache, const Sequence &q,
                                                int32_t member) const {
  std::unique_ptr<Sequence> child = forkState(cache, q, member);
  child->result.promptTokens = q.result.promptTokens;
  child->sampler.emplace(samplers_(q.group->index, member));
  child->sampler->reserve(config_.vocabSize);
  for (int32_t token : q.tokens)
    child->sampler->accept(token);
  child->output.emplace(tokenizer_, config_, requests_[q.group->index], child->result);
  child->admitted = q.admitted;
  child->firstToken = q.firstToken;
  ++q.group->live;
  return child;
}

} // namespace quill::scheduler
