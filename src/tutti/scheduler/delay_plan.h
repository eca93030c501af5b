// DelayPlan: every delay a scheduler plans with besides the profiles ℓ(b):
// Symphony's network delays (appendix D: d_ctrl + d_data·b before a batch,
// d_resp after it), the frontrun slack for late timers, and, per GPU and
// model, how real batches run against ℓ(b).
//
// A scheduler starts with the cluster spec's delays and its options' slack
// (a fixed plan: the simulator's default). Its owner may replace the plan
// at any time (Scheduler::SetDelayPlan) with one made from live
// measurements (delays/delay_model.h): the server, the distributed
// scheduler and a simulator replaying measured distributions all do, with
// the same rule.
#ifndef TUTTI_SCHEDULER_DELAY_PLAN_H_
#define TUTTI_SCHEDULER_DELAY_PLAN_H_

#include <cmath>
#include <vector>

#include "tutti/core/latency_profile.h"
#include "tutti/scheduler/cluster_spec.h"

namespace tutti {

// How one model runs on one GPU: a batch of b occupies the GPU for
// scale·ℓ(b) (its typical run), and is done, counting from when it could
// start, within tail_scale·ℓ(b) + late_start (the tail: compute jitter and
// late starts).
struct ComputePlan {
  double scale = 1;
  double tail_scale = 1;
  Duration late_start = 0;

  // What the GPU is planned to be busy with: scale·ℓ(b).
  Duration Occupancy(const LatencyProfile& profile, int b) const { return Scaled(scale, profile.Latency(b)); }
  // What a deadline must allow for: max(scale, tail_scale)·ℓ(b) + late_start.
  Duration Latency(const LatencyProfile& profile, int b) const {
    return Scaled(std::max(scale, tail_scale), profile.Latency(b)) + late_start;
  }
  // The worse of two plans in each part (a batch whose GPU is not chosen yet).
  static ComputePlan Worst(const ComputePlan& a, const ComputePlan& b) {
    return {std::max(a.scale, b.scale), std::max(a.tail_scale, b.tail_scale), std::max(a.late_start, b.late_start)};
  }
  bool operator==(const ComputePlan&) const = default;

 private:
  static Duration Scaled(double s, Duration l) {
    return s == 1 ? l : static_cast<Duration>(std::llround(s * static_cast<double>(l)));
  }
};

struct DelayPlan {
  NetworkDelays network;
  // `deferred`: dispatch this much before frontrun (see SchedulerOptions).
  Duration frontrun_slack = 0;
  // `deferred`: how late a timer may fire (the tail) and still find its
  // batch's head able to run alone in time. A late timer only shrinks a
  // batch, but a batch of one cannot shrink: its head would be dropped.
  Duration head_guard = 0;
  // [gpu · models + model]; empty: {1, 0} for every GPU and model.
  std::vector<ComputePlan> compute;

  const ComputePlan& Compute(GpuId gpu, ModelId model, int models) const {
    static const ComputePlan kExact;
    return compute.empty() ? kExact : compute[static_cast<size_t>(gpu) * models + model];
  }
  bool operator==(const DelayPlan&) const = default;
};

}  // namespace tutti

#endif  // TUTTI_SCHEDULER_DELAY_PLAN_H_
