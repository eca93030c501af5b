#include "tutti/autoscale/task_router.h"

namespace tutti {

TaskRouter::TaskRouter(const ModelLessTask& task, Clock* clock, std::function<void(int)> load)
    : variants_(task.variants),
      task_(task.requirements),
      allowed_(AllowedVariants(task.options, task.variants.size())),
      clock_(clock),
      load_(std::move(load)),
      asked_(task.variants.size(), false) {}

void TaskRouter::Update(TaskRoutingState state) {
  const size_t n = variants_.size();
  if (state.up.size() != n || state.paid.size() != n || state.draining.size() != n || state.recent.size() != n) {
    return;
  }
  std::lock_guard<std::mutex> lock(mu_);
  state_ = std::move(state);
  state_at_ = clock_->Now();
  asked_.assign(n, false);
}

std::optional<VariantChoice> TaskRouter::Route(const VariantRequirements& query) {
  int load = -1;
  VariantChoice choice;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!state_) return std::nullopt;
    DecayLocked();
    const TaskRoute route = RouteTask(variants_, allowed_, *state_, query, buffers_);
    if (route.load >= 0 && !asked_[route.load]) {
      asked_[route.load] = true;
      load = route.load;
    }
    if (route.choice.index >= 0) state_->recent[route.choice.index] += 1;
    choice = route.choice;
  }
  if (load >= 0) load_(load);
  return choice;
}

std::optional<std::pair<VariantState, double>> TaskRouter::Status(int variant) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!state_) return std::nullopt;
  DecayLocked();
  return VariantStatusOf(variants_[variant], state_->up[variant], state_->recent[variant]);
}

void TaskRouter::DecayLocked() {
  const Time now = clock_->Now();
  DecayRecent(state_at_, now, &state_->recent);
  state_at_ = now;
}

}  // namespace tutti
