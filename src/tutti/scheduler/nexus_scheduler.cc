#include "tutti/scheduler/nexus_scheduler.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace tutti {
namespace {

std::vector<GpuNode> Pack(const ClusterSpec& spec, const std::vector<double>& rates, double scale) {
  std::vector<Session> sessions;
  for (ModelId m = 0; m < static_cast<ModelId>(spec.models.size()); ++m) {
    sessions.push_back({m, &spec.models[m].profile, spec.models[m].slo,
                        std::max(1e-3, rates[m] * scale)});
  }
  return SquishyBinPack(sessions);
}

}  // namespace

std::vector<GpuNode> PlanNexus(const ClusterSpec& spec, const std::vector<double>& rates, int gpus,
                               bool fill_cluster) {
  auto fits = [&](double scale) { return static_cast<int>(Pack(spec, rates, scale).size()) <= gpus; };
  // The largest multiple of the rates whose plan fits: headroom when the
  // cluster has room, proportional shrinking when it does not.
  double lo = 0, hi = 1;
  if (fits(1) && !fill_cluster) return Pack(spec, rates, 1);
  if (fits(1)) {
    while (hi < 1024 && fits(hi * 2)) hi *= 2;
    lo = hi;
    hi *= 2;
  }
  for (int i = 0; i < 30; ++i) {
    const double mid = (lo + hi) / 2;
    (fits(mid) ? lo : hi) = mid;
  }
  std::vector<GpuNode> plan = Pack(spec, rates, lo);
  if (static_cast<int>(plan.size()) > gpus) plan.resize(gpus);
  return plan;
}

bool NexusRatesMoved(const std::vector<double>& planned, const std::vector<int64_t>& arrivals, Duration window) {
  const double seconds = ToSeconds(window);
  for (size_t m = 0; m < planned.size() && m < arrivals.size(); ++m) {
    const double expected = planned[m] * seconds;
    // Poisson counts spread by √expected: three of those, or a quarter of
    // the plan, whichever is more, before a change is believed.
    const double tolerance = std::max(0.25 * expected, 3 * std::sqrt(std::max(expected, 1.0)));
    if (std::abs(static_cast<double>(arrivals[m]) - expected) > tolerance) return true;
  }
  return false;
}

NexusScheduler::NexusScheduler(const ClusterSpec& spec, const SchedulerOptions& options,
                               Clock* clock, SchedulerListener* listener)
    : spec_(spec), options_(options), clock_(clock), listener_(listener), delays_{spec.delays, 0, {}} {
  gpus_.resize(spec_.num_gpus());
  routes_.resize(spec_.models.size());
  std::vector<double> rates(spec_.models.size(), 1.0);
  for (size_t m = 0; m < rates.size() && m < options_.nexus_initial_rates.size(); ++m) {
    if (options_.nexus_initial_rates[m] > 0) rates[m] = options_.nexus_initial_rates[m];
  }
  // Checked about every second, so that a change of rates is followed well
  // before the epoch ends; the epoch stays a whole number of checks.
  check_every_ = options_.nexus_epoch / std::max<int64_t>(1, (options_.nexus_epoch + kSecond - 1) / kSecond);
  Replan(rates);
}

NexusScheduler::~NexusScheduler() {
  clock_->Cancel(epoch_timer_);
  for (Gpu& g : gpus_) clock_->Cancel(g.timer);
}

void NexusScheduler::Replan(const std::vector<double>& rates) {
  planned_rates_ = rates;
  planned_at_ = clock_->Now();
  epoch_arrivals_.assign(spec_.models.size(), 0);
  ApplyPlan(PlanNexus(spec_, rates, spec_.num_gpus(), options_.nexus_fill_cluster));
  epoch_timer_ = clock_->ScheduleAfter(check_every_, [this] { OnCheck(); });
}

void NexusScheduler::OnCheck() {
  const Duration window = clock_->Now() - planned_at_;
  if (window < options_.nexus_epoch && !NexusRatesMoved(planned_rates_, epoch_arrivals_, window)) {
    epoch_timer_ = clock_->ScheduleAfter(check_every_, [this] { OnCheck(); });
    return;
  }
  std::vector<double> rates(spec_.models.size());
  for (size_t m = 0; m < rates.size(); ++m) rates[m] = epoch_arrivals_[m] / ToSeconds(window);
  Replan(rates);
}

void NexusScheduler::ApplyPlan(std::vector<GpuNode> plan) {
  plan_ = std::move(plan);
  std::vector<Request> pending;
  for (Gpu& g : gpus_) {
    for (Slot& s : g.slots) pending.insert(pending.end(), s.queue.begin(), s.queue.end());
    g.slots.clear();
    g.cursor = 0;
  }
  for (auto& r : routes_) r.clear();
  for (GpuId g = 0; g < static_cast<GpuId>(plan_.size()); ++g) {
    const GpuNode& node = plan_[g];
    Gpu& gpu = gpus_[g];
    for (const NodeSession& s : node.sessions) {
      routes_[s.model].push_back({g, static_cast<int>(gpu.slots.size()), s.rate});
      gpu.slots.push_back({s.model, s.batch, {}});
    }
  }
  queued_ -= static_cast<int64_t>(pending.size());
  std::sort(pending.begin(), pending.end(),
            [](const Request& a, const Request& b) { return a.arrival < b.arrival; });
  for (const Request& r : pending) {
    ++queued_;
    Route(r);
  }
  for (GpuId g = 0; g < static_cast<GpuId>(gpus_.size()); ++g) Kick(g);
}

void NexusScheduler::Submit(const Request& request) {
  ++epoch_arrivals_[request.model];
  ++queued_;
  Route(request);
}

void NexusScheduler::Route(const Request& r) {
  std::vector<RouteEntry>& routes = routes_[r.model];
  if (routes.empty()) {
    --queued_;
    listener_->OnDrop(r, DropReason::kDeadline);
    return;
  }
  // Smooth weighted round robin: deterministic, proportional to the plan.
  double total = 0;
  RouteEntry* best = &routes[0];
  for (RouteEntry& route : routes) {
    route.current += route.weight;
    total += route.weight;
    if (route.current > best->current) best = &route;
  }
  best->current -= total;
  EnqueueByDeadline(&gpus_[best->gpu].slots[best->slot].queue, r);
  Kick(best->gpu);
}

// Runs GPU g's sessions round robin, as a Nexus backend does (§6.1): once
// the GPU is free it takes the next session of its cycle that has requests,
// at most the session's planned batch b_k. A request then waits at most one
// duty cycle (Σ ℓ(b_i), which the plan fits in its SLO) plus its batch —
// and less when the other sessions have less to do: the GPU never idles
// while one of its sessions has work (waiting for each session's time slot
// would leave GPUs idle). With nothing
// queued it sleeps until a request comes (Route kicks it).
void NexusScheduler::Kick(GpuId g) {
  Gpu& gpu = gpus_[g];
  const Time now = clock_->Now();
  if (gpu.busy_until > now || gpu.timer != kNoTimer || gpu.slots.empty()) return;
  for (size_t tried = 0; tried < gpu.slots.size(); ++tried) {
    Slot& slot = gpu.slots[gpu.cursor];
    gpu.cursor = (gpu.cursor + 1) % gpu.slots.size();
    if (slot.queue.empty()) continue;
    ModelSpec spec = spec_.models[slot.model];
    spec.max_batch = std::min(slot.batch, spec.EffectiveMaxBatch());
    spec.early_drop_window = spec.max_batch;
    // Nexus always gathers with early drop (§6.3): lazy drop shrinks batches
    // behind late heads until throughput collapses.
    const ComputePlan& compute = delays_.Compute(g, slot.model, static_cast<int>(spec_.models.size()));
    BatchContext ctx{now, now, &spec, delays_.network, DropPolicy::kEarly, 0, compute};
    const Candidate c = ComputeCandidate(BatchPolicyKind::kEager, &slot.queue, ctx,
                                         [this](const Request& r, DropReason why) {
                                           --queued_;
                                           listener_->OnDrop(r, why);
                                         });
    if (c.size == 0) continue;
    Batch batch =
        TakeBatch(&slot.queue, slot.model, g, c.exec_at, compute.Occupancy(spec.profile, c.size), c.size);
    queued_ -= c.size;
    gpu.busy_until = batch.exec_at + batch.latency;
    gpu.timer = clock_->ScheduleAt(gpu.busy_until, [this, g] {
      gpus_[g].timer = kNoTimer;
      Kick(g);
    });
    listener_->OnDispatch(std::move(batch));
    return;
  }
}
}  // namespace tutti
