// The online face of scheduler::Run (SchedulerRun.h): its slots are the
// tickets.
#include "runtime/scheduler/ServingScheduler.h"

#include "runtime/scheduler/SchedulerRun.h"

namespace quill {

ServingScheduler::ServingScheduler(Device &device, PagedKVCache &cache, const Tokenizer &tokenizer,
                                   const ModelConfig &config, SamplerFactory samplers,
                                   BatchOptions options)
    : cache_(cache), samplers_(std::move(samplers)), options_(options),
      run_(std::make_unique<scheduler::Run>(device, cache, tokenizer, config, samplers_, options_,
                                            stats_, /*online=*/true)) {}

ServingScheduler::~ServingScheduler() = default;

ServingScheduler::Ticket ServingScheduler::submit(GenerationRequest request) {
  return run_->add(std::move(request));
}

Status ServingScheduler::check(const GenerationRequest &request, int32_t promptLength) const {
  return run_->check(request, promptLength);
}

void ServingScheduler::cancel(Ticket ticket, const Status &why) { run_->cancel(ticket, why); }

Status ServingScheduler::round() { return run_->round(); }

bool ServingScheduler::busy() const { return run_->busy(); }

void ServingScheduler::visitSamples(
    Ticket ticket, const std::function<void(int32_t, const GenerationResult &)> &visit) const {
  run_->visitSamples(ticket, visit);
}

bool ServingScheduler::done(Ticket ticket) const { return run_->done(ticket); }

ErrorOr<GenerationResult> ServingScheduler::take(Ticket ticket) { return run_->take(ticket); }

int32_t ServingScheduler::sequencesInFlight() const { return run_->sequencesInFlight(); }

int32_t ServingScheduler::requestsWaiting() const { return run_->requestsWaiting(); }

} // namespace quill
