// NexusScheduler: the `nexus` policy (Nexus §6). Every epoch the planner
// packs sessions (model, SLO, rate) onto GPUs with squishy bin packing; the
// frontend side routes each request to one of the GPUs holding its session,
// by smooth weighted round robin over the planned rates; each GPU cycles
// through its sessions, running each at most its planned batch size per
// turn, and starts a new cycle no sooner than one duty cycle after the last.
//
// Rates for the first epoch come from SchedulerOptions::nexus_initial_rates
// (else 1 request/s per model); later epochs use the rates observed in the
// epoch before. When a plan needs more GPUs than the cluster has, all rates
// are scaled down until it fits. Requests of a model the plan could not place
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

// Squishy bin packing of `rates` (one per model) fitted into `gpus` GPUs by
// scaling the rates down if needed; at most `gpus` nodes. Pure.
std::vector<GpuNode> PlanNexus(const ClusterSpec& spec, const std::vector<double>& rates, int gpus);

class NexusScheduler final : public Scheduler {
 public:
  // REQUIRES: ValidateClusterSpec(spec).ok(); clock and listener outlive this.
  NexusScheduler(const ClusterSpec& spec, const SchedulerOptions& options, Clock* clock,
                 SchedulerListener* listener);
  ~NexusScheduler() override;

  void Submit(const Request& request) override;
  int64_t queued() const override { return queued_; }

  // The plan in force (for tests and reports).
  const std::vector<GpuNode>& plan() const { return plan_; }

 private:
  struct Slot {  // one session on one GPU
    ModelId model;
    int batch;
    RequestQueue queue;
  };
  struct Gpu {
    std::vector<Slot> slots;
    Duration duty_cycle = 0;
    size_t cursor = 0;
    Time cycle_start = 0;
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
  void OnEpoch();
  void Route(const Request& r);
  void Kick(GpuId g);

  const ClusterSpec spec_;
  const SchedulerOptions options_;
  Clock* const clock_;
  SchedulerListener* const listener_;
  std::vector<GpuNode> plan_;
  std::vector<Gpu> gpus_;
  std::vector<std::vector<RouteEntry>> routes_;  // per model
  std::vector<int64_t> epoch_arrivals_;
  TimerId epoch_timer_ = kNoTimer;
  int64_t queued_ = 0;
};

}  // namespace tutti

#endif  // TUTTI_SCHEDULER_NEXUS_SCHEDULER_H_
