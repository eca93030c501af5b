#include "tutti/executors/emulated_executor.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace tutti {

EmulatedExecutor::EmulatedExecutor(Clock* clock, std::vector<Model> models)
    : clock_(clock), models_(std::move(models)) {}

void EmulatedExecutor::Run(ExecBatch batch, DoneFn done) {
  const Model& m = models_[batch.model];
  if (batch.size < 1 || batch.size > m.profile.max_batch()) {
    ExecResult bad;
    bad.received = bad.ready = bad.started = bad.finished = clock_->Now();
    bad.status = absl::InvalidArgumentError(
        absl::StrCat("batch of ", batch.size, " outside the profile's 1..", m.profile.max_batch()));
    done(std::move(bad));
    return;
  }
  ExecResult result;
  result.emulated = true;
  {
    std::lock_guard<std::mutex> lock(mu_);
    result.received = clock_->Now();
    const EmulatedGpu::Slot slot =
        gpu_.Book(result.received, batch.start_at, EmulatedGpu::RunTime(m.profile, batch.size));
    result.ready = result.started = slot.start;
    result.finished = slot.end;
  }
  result.output.assign(static_cast<size_t>(batch.size * m.output_elements), 0.0f);
  const Time finished = result.finished;
  clock_->ScheduleAt(finished, [result = std::move(result), done = std::move(done)]() mutable {
    done(std::move(result));
  });
}

}  // namespace tutti
