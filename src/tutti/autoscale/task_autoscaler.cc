#include "tutti/autoscale/task_autoscaler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "tutti/planner/variant_scaling.h"

namespace tutti {
namespace {

// Queries routed to a variant are counted with this memory (an
// exponentially decayed count: at a steady r per second it approaches r).
constexpr double kRecentSeconds = 1.0;

}  // namespace

std::vector<bool> AllowedVariants(const TaskAutoscaleOptions& o, size_t variants) {
  std::vector<bool> allowed(variants, o.allowed.empty());
  for (int j : o.allowed) {
    if (j >= 0 && j < static_cast<int>(variants)) allowed[j] = true;
  }
  return allowed;
}

absl::Status TaskAutoscaler::Validate(const std::vector<TaskVariant>& variants, const VariantRequirements& task,
                                      const TaskAutoscaleOptions& o) {
  const auto bad = [](auto... why) { return absl::InvalidArgumentError(absl::StrCat("model-less task: ", why...)); };
  if (variants.empty()) return bad("no variants");
  if (o.interval <= 0 || o.slack < 1 || o.lambda < 0) return bad("needs interval > 0, slack >= 1, lambda >= 0");
  for (const TaskVariant& v : variants) {
    if (!(v.saturation_qps > 0) || v.cost < 0 || v.max_instances < 1 || v.latency <= 0 || v.load_latency < 0) {
      return bad("variant '", v.name, "' needs a positive saturation and latency, cost >= 0, load latency >= 0 "
                 "and at least one slot");
    }
  }
  for (int j : o.allowed) {
    if (j < 0 || j >= static_cast<int>(variants.size())) return bad("allowed variant ", j, " does not exist");
  }
  if (!o.initial.empty()) {
    if (o.initial.size() != variants.size()) return bad("initial instances: one count per variant");
    for (size_t j = 0; j < variants.size(); ++j) {
      if (o.initial[j] < 0 || o.initial[j] > variants[j].max_instances) {
        return bad("variant '", variants[j].name, "': initial instances beyond its ", variants[j].max_instances,
                   " slots");
      }
    }
  }
  const std::vector<bool> allowed = AllowedVariants(o, variants.size());
  for (size_t j = 0; j < variants.size(); ++j) {
    if (allowed[j] && variants[j].accuracy >= task.min_accuracy) return absl::OkStatus();
  }
  return bad("no allowed variant is accurate enough (", task.min_accuracy, ")");
}

TaskAutoscaler::TaskAutoscaler(std::vector<TaskVariant> variants, VariantRequirements task,
                               TaskAutoscaleOptions options, Clock* clock, SetUpFn set_up, Time end)
    : variants_(std::move(variants)),
      task_(task),
      o_(std::move(options)),
      clock_(clock),
      set_up_(std::move(set_up)),
      end_(end) {
  const int n = static_cast<int>(variants_.size());
  allowed_ = AllowedVariants(o_, variants_.size());
  for (int j = 0; j < n; ++j) {
    if (allowed_[j] && variants_[j].accuracy >= task_.min_accuracy) eligible_.push_back(j);
  }
  for (int j : eligible_) horizon_ = std::max(horizon_, variants_[j].load_latency);
  up_.assign(n, 0);
  down_since_.assign(n, kInfiniteFuture);
  draining_.assign(n, false);
  recent_.assign(n, 0);
  paid_ = up_;
  if (!o_.initial.empty()) {
    up_ = o_.initial;
  } else {
    up_[KeepOne()] = 1;
  }
  paid_ = taken_ = up_;
  if (o_.await_up) {  // the initial instances are on their way too
    for (int j = 0; j < n; ++j) {
      for (int k = 0; k < up_[j]; ++k) awaited_.push_back(variants_[j].first_gpu + k);
      on_the_way_ += up_[j];
      up_[j] = 0;
    }
  }
}

TaskAutoscaler::~TaskAutoscaler() { Stop(); }

void TaskAutoscaler::Start() {
  for (size_t j = 0; j < variants_.size(); ++j) {
    for (int s = taken_[j]; s < variants_[j].max_instances; ++s) set_up_(variants_[j].first_gpu + s, false);
  }
  std::lock_guard<std::mutex> lock(mu_);
  recent_at_ = clock_->Now();
  Record(recent_at_);
  tick_ = clock_->ScheduleAfter(o_.interval, [this] { Tick(); });
}

void TaskAutoscaler::Stop() {
  std::vector<TimerId> timers;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopped_ = true;
    timers.swap(arrivals_);
    timers.push_back(tick_);
  }
  for (TimerId t : timers) clock_->Cancel(t);
}

void TaskAutoscaler::Record(Time now) {
  if (!allocation_.empty() && allocation_.back().second == paid_) return;
  if (!allocation_.empty() && allocation_.back().first == now) {
    allocation_.back().second = paid_;
  } else {
    allocation_.emplace_back(now, paid_);
  }
}

std::vector<int> TaskAutoscaler::Plan(double load) const {
  // One resource per pool that has a limit, and one per variant (its slots).
  std::vector<std::string> pools;
  for (const auto& [kind, limit] : o_.pools) pools.push_back(kind);
  VariantScalingProblem p;
  p.load_qps = load;
  p.slo = task_.latency_objective;
  p.slack = o_.slack;
  p.lambda = o_.lambda;
  for (const auto& [kind, limit] : o_.pools) p.capacity.push_back(limit);
  for (int j : eligible_) p.capacity.push_back(variants_[j].max_instances);
  for (size_t k = 0; k < eligible_.size(); ++k) {
    const TaskVariant& v = variants_[eligible_[k]];
    ScalingVariant s{v.name, v.saturation_qps, v.latency, v.cost, v.load_latency, paid_[eligible_[k]], {}};
    s.resources.assign(p.capacity.size(), 0);
    for (size_t t = 0; t < pools.size(); ++t) s.resources[t] = pools[t] == v.hardware ? 1 : 0;
    s.resources[pools.size() + k] = 1;
    p.variants.push_back(std::move(s));
  }
  const auto solve = [&]() -> absl::StatusOr<VariantScalingPlan> {
    return o_.ilp ? SolveVariantScaling(p, o_.solver_limit) : GreedyVariantScaling(p);
  };
  absl::StatusOr<VariantScalingPlan> plan = solve();
  if (!plan.ok()) {
    // More load than the pools carry: the plan for the most they carry
    // (the fastest variants first, each pool and variant to its limit).
    std::vector<int> order(eligible_.size());
    for (size_t k = 0; k < order.size(); ++k) order[k] = static_cast<int>(k);
    std::sort(order.begin(), order.end(), [&](int a, int b) {
      return p.variants[a].saturation_qps > p.variants[b].saturation_qps;
    });
    std::vector<double> left = p.capacity;
    double most = 0;
    for (int k : order) {
      const ScalingVariant& v = p.variants[k];
      if (v.latency > p.slo && v.running == 0) continue;
      int n = v.latency > p.slo ? v.running : std::numeric_limits<int>::max();
      for (size_t t = 0; t < left.size(); ++t) {
        if (v.resources[t] > 0) n = std::min(n, static_cast<int>(left[t] / v.resources[t]));
      }
      for (size_t t = 0; t < left.size(); ++t) left[t] -= n * v.resources[t];
      most += n * v.saturation_qps;
    }
    p.load_qps = most / p.slack * (1 - 1e-9);
    plan = solve();
  }
  std::vector<int> target(variants_.size(), 0);
  if (plan.ok()) {
    for (size_t k = 0; k < eligible_.size(); ++k) target[eligible_[k]] = plan->instances[k];
  } else {
    target = paid_;  // nothing better known: keep what runs
  }
  if (std::all_of(target.begin(), target.end(), [](int x) { return x == 0; })) target[KeepOne()] = 1;
  return target;
}

int TaskAutoscaler::KeepOne() const {
  // In time first, then running, then cheaper.
  const auto key = [&](int j) {
    return std::make_tuple(variants_[j].latency > task_.latency_objective, paid_[j] == 0, variants_[j].cost);
  };
  int keep = eligible_.front();
  for (int j : eligible_) {
    if (key(j) < key(keep)) keep = j;
  }
  return keep;
}

void TaskAutoscaler::Tick() {
  const Time now = clock_->Now();
  std::vector<std::pair<int, bool>> actions;  // (gpu, up), applied after the lock
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_) return;
    const double rate = static_cast<double>(routed_) / ToSeconds(o_.interval);
    routed_ = 0;
    // The load expected once an instance asked for now is up: the rise of
    // the last interval goes on until then.
    // (No rise at the first tick: nothing was measured before it.)
    const double rise = last_rate_ < 0 ? 0 : std::max(0.0, rate - last_rate_);
    const double load = rate + rise * ToSeconds(o_.interval + horizon_) / ToSeconds(o_.interval);
    last_rate_ = rate;
    const std::vector<int> target = Plan(load);
    bool asked = false, released = false;
    for (size_t j = 0; j < variants_.size(); ++j) {
      const TaskVariant& v = variants_[j];
      if (target[j] > paid_[j]) {
        for (int s = paid_[j]; s < target[j]; ++s) {
          arrivals_.push_back(clock_->ScheduleAt(now + v.load_latency, [this, j] { Arrive(static_cast<int>(j)); }));
          ++on_the_way_;
        }
        paid_[j] = target[j];
        down_since_[j] = kInfiniteFuture;
        draining_[j] = false;
        asked = true;
      } else if (target[j] < paid_[j]) {
        if (down_since_[j] == kInfiniteFuture) down_since_[j] = now;
        if (on_the_way_ == 0 && now - down_since_[j] >= std::max(v.load_latency, o_.min_down_wait)) {
          if (target[j] == 0 && !draining_[j]) {
            draining_[j] = true;  // routed no more: what it holds is answered by the next tick
          } else {
            for (int s = target[j]; s < paid_[j]; ++s) actions.emplace_back(v.first_gpu + s, false);
            paid_[j] = up_[j] = taken_[j] = target[j];
            down_since_[j] = kInfiniteFuture;
            draining_[j] = false;
            released = true;
          }
        }
      } else {
        down_since_[j] = kInfiniteFuture;
        draining_[j] = false;
      }
    }
    scale_ups_ += asked;
    scale_downs_ += released;
    Record(now);
    if (now + o_.interval <= end_) tick_ = clock_->ScheduleAfter(o_.interval, [this] { Tick(); });
  }
  for (const auto& [gpu, up] : actions) set_up_(gpu, up);
}

void TaskAutoscaler::Arrive(int j) {
  int gpu = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_) return;
    gpu = variants_[j].first_gpu + taken_[j]++;
    if (o_.await_up) awaited_.push_back(gpu);
  }
  set_up_(gpu, true);  // up before Route() may pick it
  if (o_.await_up) return;  // until Up(gpu)
  std::lock_guard<std::mutex> lock(mu_);
  ++up_[j];
  --on_the_way_;
}

bool TaskAutoscaler::Up(int gpu) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = std::find(awaited_.begin(), awaited_.end(), gpu);
  if (it == awaited_.end()) return false;
  awaited_.erase(it);
  for (size_t j = 0; j < variants_.size(); ++j) {
    if (gpu >= variants_[j].first_gpu && gpu < variants_[j].first_gpu + variants_[j].max_instances) ++up_[j];
  }
  --on_the_way_;
  return true;
}

void TaskAutoscaler::Decay(Time now) {
  DecayRecent(recent_at_, now, &recent_);
  recent_at_ = now;
}

std::pair<VariantState, double> TaskAutoscaler::Status(int j) {
  std::lock_guard<std::mutex> lock(mu_);
  Decay(clock_->Now());
  return VariantStatusOf(variants_[j], up_[j], recent_[j]);
}

TaskRoute RouteTask(const std::vector<TaskVariant>& variants, const std::vector<bool>& allowed,
                    const TaskRoutingState& state, const VariantRequirements& query, RouteBuffers& b) {
  // The candidates, in buffers kept between queries (assigning over their
  // names reuses their storage: no allocation per query).
  size_t n = 0;
  int loading = -1;  // the allowed variant with the most instances on their way
  for (int j = 0; j < static_cast<int>(variants.size()); ++j) {
    if (!allowed[j] || state.draining[j]) continue;
    const TaskVariant& v = variants[j];
    if (state.up[j] == 0 && state.paid[j] > 0 && (loading < 0 || state.paid[j] > state.paid[loading])) loading = j;
    if (state.up[j] == 0 && (state.paid[j] > 0 || v.load_latency + v.latency > query.latency_objective)) continue;
    if (n == b.candidates.size()) {
      b.candidates.emplace_back();
      b.index.push_back(0);
    }
    SelectableVariant& s = b.candidates[n];
    s.name = v.name;
    s.accuracy = v.accuracy;
    s.latency = v.latency;
    s.load_latency = v.load_latency;
    s.cost = v.cost;
    std::tie(s.state, s.utilisation) = VariantStatusOf(v, state.up[j], state.recent[j]);
    s.queued = 0;
    b.index[n++] = j;
  }
  b.candidates.resize(n);
  TaskRoute route{SelectVariant(b.candidates, query), -1};
  VariantChoice& choice = route.choice;
  int j = choice.index >= 0 ? b.index[choice.index] : loading;
  if (j < 0) return route;  // nothing up or on its way
  if (choice.index < 0) {
    choice = {j, variants[j].accuracy >= query.min_accuracy,
              absl::StrCat("no variant is up; waits for ", variants[j].name, " to load")};
    return route;
  }
  choice.index = j;
  if (state.up[j] > 0) return route;
  // INFaaS loads the Inactive variant it picked; the query itself goes to
  // the least utilised variant up (an instance that is not up takes no
  // work).
  route.load = j;
  int best = -1;
  for (size_t k = 0; k < b.candidates.size(); ++k) {
    if (state.up[b.index[k]] > 0 && (best < 0 || b.candidates[k].utilisation < b.candidates[best].utilisation)) {
      best = static_cast<int>(k);
    }
  }
  if (best >= 0) {
    j = b.index[best];
    choice = {j, variants[j].accuracy >= query.min_accuracy && variants[j].latency <= query.latency_objective,
              absl::StrCat("served by ", variants[j].name, " while ", variants[route.load].name, " loads")};
  }
  return route;
}

std::pair<VariantState, double> VariantStatusOf(const TaskVariant& v, int up, double recent) {
  if (up == 0) return {VariantState::kInactive, 0};
  const double utilisation = recent / kRecentSeconds / (v.saturation_qps * up);
  return {utilisation >= 1 ? VariantState::kOverloaded : VariantState::kActive, utilisation};
}

void DecayRecent(Time from, Time to, std::vector<double>* recent) {
  const double decay = std::exp(-ToSeconds(to - from) / kRecentSeconds);
  for (double& r : *recent) r *= decay;
}

VariantChoice TaskAutoscaler::Route(const VariantRequirements& query) {
  std::lock_guard<std::mutex> lock(mu_);
  const Time now = clock_->Now();
  Decay(now);
  const TaskRoute route = RouteTask(variants_, allowed_, {up_, paid_, draining_, recent_}, query, buffers_);
  if (route.load >= 0) LoadLocked(route.load, now);
  if (route.choice.index >= 0) CountLocked(route.choice.index);
  return route.choice;
}

void TaskAutoscaler::Count(int variant) {
  std::lock_guard<std::mutex> lock(mu_);
  Decay(clock_->Now());
  CountLocked(variant);
}

void TaskAutoscaler::CountLocked(int j) {
  recent_[j] += 1;
  ++routed_;
}

void TaskAutoscaler::Load(int variant) {
  std::lock_guard<std::mutex> lock(mu_);
  if (stopped_ || !allowed_[variant] || draining_[variant] || paid_[variant] > 0) return;
  LoadLocked(variant, clock_->Now());
}

void TaskAutoscaler::LoadLocked(int j, Time now) {
  ++paid_[j];
  ++on_the_way_;
  arrivals_.push_back(clock_->ScheduleAt(now + variants_[j].load_latency, [this, j] { Arrive(j); }));
  Record(now);
}

TaskRoutingState TaskAutoscaler::RoutingState() {
  std::lock_guard<std::mutex> lock(mu_);
  Decay(clock_->Now());
  return {up_, paid_, draining_, recent_};
}

int TaskAutoscaler::up(int variant) const {
  std::lock_guard<std::mutex> lock(mu_);
  return up_[variant];
}
int TaskAutoscaler::paid(int variant) const {
  std::lock_guard<std::mutex> lock(mu_);
  return paid_[variant];
}
int TaskAutoscaler::scale_ups() const {
  std::lock_guard<std::mutex> lock(mu_);
  return scale_ups_;
}
int TaskAutoscaler::scale_downs() const {
  std::lock_guard<std::mutex> lock(mu_);
  return scale_downs_;
}

std::vector<std::pair<Time, std::vector<int>>> TaskAutoscaler::allocation() const {
  std::lock_guard<std::mutex> lock(mu_);
  return allocation_;
}

std::vector<double> TaskAutoscaler::InstanceSeconds(Time from, Time to) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<double> seconds(variants_.size(), 0);
  for (size_t i = 0; i < allocation_.size(); ++i) {
    const Time a = std::max(from, allocation_[i].first);
    const Time b = std::min(to, i + 1 < allocation_.size() ? allocation_[i + 1].first : to);
    if (b <= a) continue;
    for (size_t j = 0; j < variants_.size(); ++j) seconds[j] += allocation_[i].second[j] * ToSeconds(b - a);
  }
  return seconds;
}

double TaskAutoscaler::Cost(Time from, Time to) const {
  const std::vector<double> seconds = InstanceSeconds(from, to);
  double cost = 0;
  for (size_t j = 0; j < variants_.size(); ++j) cost += seconds[j] * variants_[j].cost;
  return cost;
}

}  // namespace tutti
