// NexusScheduler: the `nexus` policy (Nexus §6). Every epoch the planner
// packs sessions (model, SLO, rate) onto GPUs with squishy bin packing; the
// frontend side routes each request to one of the GPUs holding its session,
// by smooth weighted round robin over the planned rates; each GPU runs its
// sessions round robin, work-conserving, each turn at most the session's
// planned batch (gathered with Nexus's early drop, whatever
// SchedulerOptions::drop says), so that no request waits more than a duty
// cycle (Σ ℓ(b_i)) plus its batch.
//
// Rates for the first epoch come from SchedulerOptions::nexus_initial_rates
// (else 1 request/s per model); later epochs use the rates observed in the
// epoch before. An epoch ends early, at one of its checks about every
// second, once the observed rates have moved from the planned ones
// (NexusRatesMoved). The cluster has a fixed number of GPUs, so by default
// (nexus_fill_cluster) the plan is made for the largest multiple of those
// rates that fits them: headroom for bursts when there is room,
// proportionally less for everyone when there is not. Requests of a model the plan could not place
// are dropped at once, as DropReason::kDeadline.
//
// Sub-clusters are ignored: Nexus places sessions itself.
#ifndef TUTTI_SCHEDULER_NEXUS_SCHEDULER_H_
#define TUTTI_SCHEDULER_NEXUS_SCHEDULER_H_

#include <vector>

#include "tutti/planner/squishy_bin_packing.h"
#include "tutti/scheduler/batch_policy.h"
#include "tutti/scheduler/scheduler.h"

namespace tutti {

// Squishy bin packing of the largest multiple of `rates` (one per model)
// that fits into `gpus` GPUs; at most `gpus` nodes. Pure.
// With fill_cluster false, plans for `rates` exactly (scaled down only if
// they do not fit).
std::vector<GpuNode> PlanNexus(const ClusterSpec& spec, const std::vector<double>& rates, int gpus,
                               bool fill_cluster = true);

// Whether `arrivals` per model over `window` are too far from the `planned`
// rates (requests/s) to be Poisson noise. Pure.
bool NexusRatesMoved(const std::vector<double>& planned, const std::vector<int64_t>& arrivals, Duration window);

class NexusScheduler final : public Scheduler {
 public:
  // REQUIRES: ValidateClusterSpec(spec).ok(); clock and listener outlive this.
  NexusScheduler(const ClusterSpec& spec, const SchedulerOptions& options, Clock* clock,
                 SchedulerListener* listener);
  ~NexusScheduler() override;

  void Submit(const Request& request) override;
  int64_t queued() const override { return queued_; }
  // The network delays and compute plans steer its batches; the duty cycles
  // stay planned from the profiles (the next epoch's packing does not see
  // measured delays yet).
  void SetDelayPlan(const DelayPlan& plan) override { delays_ = plan; }

  // The plan in force (for tests and reports).
  const std::vector<GpuNode>& plan() const { return plan_; }

 private:
  struct Slot {  // one session on one GPU
    ModelId model;
    int batch;  // at most this many per turn
    RequestQueue queue;
  };
  struct Gpu {
    std::vector<Slot> slots;  // in the order of the duty cycle
    size_t cursor = 0;        // the next session's turn
    Time busy_until = 0;
    TimerId timer = kNoTimer;
  };
  struct RouteEntry {
    GpuId gpu;
    int slot;
    double weight;
    double current = 0;  // smooth weighted round-robin state
  };

  void ApplyPlan(std::vector<GpuNode> plan);
  void Replan(const std::vector<double>& rates);
  void OnCheck();
  void Route(const Request& r);
  void Kick(GpuId g);

  const ClusterSpec spec_;
  const SchedulerOptions options_;
  Clock* const clock_;
  SchedulerListener* const listener_;
  DelayPlan delays_;
  std::vector<GpuNode> plan_;
  std::vector<Gpu> gpus_;
  std::vector<std::vector<RouteEntry>> routes_;  // per model
  std::vector<int64_t> epoch_arrivals_;  // since planned_at_
  std::vector<double> planned_rates_;
  Time planned_at_ = 0;
  Duration check_every_ = kSecond;
  TimerId epoch_timer_ = kNoTimer;
  int64_t queued_ = 0;
};

}  // namespace tutti

#endif  // TUTTI_SCHEDULER_NEXUS_SCHEDULER_H_
