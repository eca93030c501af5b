// TaskRouter: model-less routing away from the TaskAutoscaler that scales
// the variants — a distributed frontend's, on the routing state the leading
// scheduler sends (TaskAutoscaler::RoutingState). It decides as
// TaskAutoscaler::Route does (RouteTask), on that state plus the queries it
// routed itself since; an Inactive variant it picks is asked for through
// `load`, once per state (the leader's TaskAutoscaler::Load decides).
// Before the first state it routes nothing.
//
// Thread-safe; `load` runs outside its lock.
#ifndef TUTTI_AUTOSCALE_TASK_ROUTER_H_
#define TUTTI_AUTOSCALE_TASK_ROUTER_H_

#include <functional>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "tutti/autoscale/task_autoscaler.h"
#include "tutti/core/clock.h"

namespace tutti {

class TaskRouter {
 public:
  // Routes among `task`'s variants its options allow. `clock` outlives this.
  TaskRouter(const ModelLessTask& task, Clock* clock, std::function<void(int variant)> load);

  // The leader's state now; one not sized as the variants is ignored.
  void Update(TaskRoutingState state);
  // The variant for a query with the task's requirements (or `query`'s);
  // nullopt before the first Update.
  std::optional<VariantChoice> Route(const VariantRequirements& query);
  std::optional<VariantChoice> Route() { return Route(task_); }
  // As TaskAutoscaler::Status, on the state it routes with; nullopt before
  // the first Update.
  std::optional<std::pair<VariantState, double>> Status(int variant);

  const std::vector<TaskVariant>& variants() const { return variants_; }
  const VariantRequirements& task() const { return task_; }

 private:
  const std::vector<TaskVariant> variants_;
  const VariantRequirements task_;
  void DecayLocked();  // state_->recent, to now

  const std::vector<bool> allowed_;
  Clock* const clock_;
  const std::function<void(int)> load_;
  std::mutex mu_;
  std::optional<TaskRoutingState> state_;  // the leader's, with this router's queries since
  Time state_at_ = 0;                      // what state_.recent is decayed to
  std::vector<bool> asked_;                // per variant: asked to load since the last Update
  RouteBuffers buffers_;
};

}  // namespace tutti

#endif  // TUTTI_AUTOSCALE_TASK_ROUTER_H_
