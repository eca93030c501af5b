#include "tutti/executors/emulated_executor.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace tutti {

EmulatedExecutor::EmulatedExecutor(Clock* clock, std::vector<Model> models, bool memory_budget)
    : clock_(clock),
      models_(std::move(models)),
      memory_budget_(memory_budget),
      ready_at_(models_.size(), memory_budget ? kInfiniteFuture : 0) {}

void EmulatedExecutor::Load(const ExecLoad& load) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!memory_budget_) return;
  for (int m : load.evicted) ready_at_[m] = kInfiniteFuture;
  ready_at_[load.model] = load.start + load.duration;
}

void EmulatedExecutor::Run(ExecBatch batch, DoneFn done) {
  const Model& m = models_[batch.model];
  auto fail = [&](absl::Status status) {
    ExecResult bad;
    bad.received = bad.ready = bad.started = bad.finished = clock_->Now();
    bad.status = std::move(status);
    done(std::move(bad));
  };
  if (batch.size < 1 || batch.size > m.profile.max_batch()) {
    fail(absl::InvalidArgumentError(
        absl::StrCat("batch of ", batch.size, " outside the profile's 1..", m.profile.max_batch())));
    return;
  }
  ExecResult result;
  result.emulated = true;
  Time ready = 0;
  bool booked = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    result.received = clock_->Now();
    ready = ready_at_[batch.model];
    if (std::max(result.received, batch.start_at) >= ready) {
      const EmulatedGpu::Slot slot =
          gpu_.Book(result.received, batch.start_at, EmulatedGpu::RunTime(m.profile, batch.size));
      result.ready = result.started = slot.start;
      result.finished = slot.end;
      booked = true;
    }
  }
  if (ready == kInfiniteFuture) {
    fail(absl::FailedPreconditionError("the model's weights are not loaded on this executor"));
    return;
  }
  if (!booked) {
    fail(absl::FailedPreconditionError("the batch would start before the model's load ends"));
    return;
  }
  result.output.assign(static_cast<size_t>(batch.size * m.output_elements), 0.0f);
  const Time finished = result.finished;
  clock_->ScheduleAt(finished, [result = std::move(result), done = std::move(done)]() mutable {
    done(std::move(result));
  });
}

}  // namespace tutti
