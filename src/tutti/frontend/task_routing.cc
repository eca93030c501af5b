// InferenceFrontend's model-less tasks (INFaaS): the variants a task can
// use, how they fare, and the one each request goes to.
#include <algorithm>
#include <mutex>

#include "tutti/frontend/frontend_state.h"
#include "tutti/planner/variant_selection.h"
#include "tutti/repository/tensor_record.h"

namespace tutti {

std::vector<int> InferenceFrontend::TaskVariants(absl::string_view task) const {
  std::vector<int> out;
  const ModelConfig* first = nullptr;
  for (int m : ListedModels()) {
    const ModelConfig& c = models_[m]->served.config;
    if (c.task != task || !c.accuracy || c.stateful() || c.parity.has_value()) continue;
    if (first == nullptr) {
      first = &c;
    } else if (c.inputs != first->inputs || RecordWords(c.outputs) != RecordWords(first->outputs)) {
      continue;
    }
    if (models_[m]->control.load() == ModelState::kReady) out.push_back(m);
  }
  return out;
}

void InferenceFrontend::ObserveVariants() const {
  const Time now = engine_->Now();
  VariantMonitor& mon = *monitor_;
  if (mon.at >= 0 && now - mon.at < kVariantWindow) return;
  const std::vector<ModelCounters> counters = engine_->Counters();
  std::vector<double> ratio(models_.size(), 0);  // 0: no batches measured in the engine's window
  for (const DelayEstimates::Compute& c : engine_->Delays().estimates.compute) {
    if (static_cast<size_t>(c.model) < ratio.size()) ratio[c.model] = std::max(ratio[c.model], c.ratio);
  }
  const double seconds = mon.at >= 0 ? ToSeconds(now - mon.at) : 0;
  for (size_t m = 0; m < models_.size(); ++m) {
    const ModelState& s = *models_[m];
    const ModelCounters& c = counters[m];
    const int64_t given = c.good + c.late + c.dropped + s.overloaded.load();
    VariantObservation seen;
    seen.loaded = s.control.load() == ModelState::kReady;
    seen.served_qps = seconds > 0 ? static_cast<double>(given - mon.given[m]) / seconds : 0;
    seen.saturation_qps = s.served.peak_rps;
    seen.profiled = s.served.latency;
    seen.latency = static_cast<Duration>(static_cast<double>(s.served.latency) * ratio[m]);
    mon.given[m] = given;
    mon.status[m] = {NextVariantState(mon.status[m].state, seen),
                     seen.saturation_qps > 0 ? seen.served_qps / seen.saturation_qps : 0};
  }
  mon.at = now;
}

std::vector<InferenceFrontend::VariantStatus> InferenceFrontend::VariantStatuses(const std::vector<int>& models) const {
  std::lock_guard<std::mutex> lock(monitor_->mu);
  ObserveVariants();
  std::vector<VariantStatus> out;
  for (int m : models) {
    if (options_.routed_status) {
      if (std::optional<Options::RoutedStatus> r = options_.routed_status(models_[m]->served.config.name)) {
        out.push_back({r->state, r->utilisation});
        continue;
      }
    }
    VariantStatus v = monitor_->status[m];
    // Loaded or unloaded since the last observation: as it is now.
    if (!model_ready(m)) {
      v.state = VariantState::kInactive;
    } else if (v.state == VariantState::kInactive) {
      v.state = VariantState::kActive;
    }
    out.push_back(v);
  }
  return out;
}

InferenceFrontend::TaskChoice InferenceFrontend::ChooseForTask(absl::string_view task, const std::vector<int>& variants,
                                                               double min_accuracy, Duration objective) const {
  if (options_.route_task) {
    if (std::optional<Options::RoutedTask> routed = options_.route_task(task, min_accuracy, objective)) {
      for (int m : variants) {
        if (models_[m]->served.config.name == routed->model) return TaskChoice{m, routed->meets, routed->note};
      }
    }
  }
  // A request's least latency: ℓ(1) and, per scheduled step, the margins
  // the scheduler plans with now (dispatch, response, slack, guard).
  const DelayPlan plan = engine_->Delays().plan;
  const Duration margins =
      plan.network.Dispatch(1) + plan.network.resp + plan.frontrun_slack + plan.head_guard;
  const std::vector<VariantStatus> status = VariantStatuses(variants);
  // Utilisation in one unit for all: the window's where every peak is
  // known, else items in flight per max batch.
  const bool peaks = std::all_of(variants.begin(), variants.end(), [&](int m) { return models_[m]->served.peak_rps > 0; });
  std::vector<SelectableVariant> selectable;
  for (size_t i = 0; i < variants.size(); ++i) {
    const ModelState& s = *models_[variants[i]];
    const ModelConfig& c = s.served.config;
    const Duration latency = s.served.latency + margins * static_cast<int64_t>(std::max<size_t>(1, c.steps.size()));
    // Items in flight per max batch also break ties (before the first
    // window every variant reads 0).
    const double in_flight = static_cast<double>(s.queued.load()) / std::max(1, c.max_batch_size);
    selectable.push_back({c.name, c.accuracy.value_or(0), latency, 0, 0, status[i].state,
                          peaks ? status[i].utilisation : in_flight, in_flight});
  }
  const VariantRequirements req{min_accuracy, objective > 0 ? objective : std::numeric_limits<Duration>::max()};
  const VariantChoice choice = SelectVariant(selectable, req);
  return TaskChoice{variants[choice.index], choice.meets, choice.note};
}

}  // namespace tutti
