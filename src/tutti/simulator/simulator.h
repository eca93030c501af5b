// The discrete-event cluster simulator: drives the very scheduler object the
// server uses (CreateScheduler) over emulated GPUs, in virtual time.
//
// Replaying a real cluster's delays: with SimConfig::inject, every batch
// reaches its GPU a dispatch delay after the decision, runs ℓ(b) times its
// GPU's compute scale, and each answer is written a response delay after
// the batch ends (counted good if that is by its deadline); the
// scheduler's timers fire late by the timer delay. With
// SimConfig::delay_model.measure the simulator measures those delays as the
// serving core does and hands the scheduler the plans its DelayModel makes
// — the same rule, at the same instants, as `tutti serve`.
//
// Virtual time is a ManualClock: integer nanoseconds, events in (time,
// insertion) order; arrivals come from a seeded ArrivalSource. An emulated
// GPU times batches as the server's emulated executor does
// (core/emulated_gpu.h): exactly ℓ(b) (or ℓ(b)·(1 + u), u uniform in
// [−jitter, jitter]); a batch that reaches a GPU still busy (only possible
// with jitter or injected delays) starts when it frees. The same config and seed always give
// the same result.
#ifndef TUTTI_SIMULATOR_SIMULATOR_H_
#define TUTTI_SIMULATOR_SIMULATOR_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tutti/autoscale/task_autoscaler.h"
#include "tutti/delays/delay_injection.h"
#include "tutti/delays/delay_model.h"
#include "tutti/scheduler/scheduler.h"
#include "tutti/planner/scaling.h"
#include "tutti/workload/metrics.h"
#include "tutti/workload/workload.h"

namespace tutti {

// Queries through a chain of the cluster's models (a service graph, Nexus
// §4.2): each arrival is a query that runs model 0 on its input; every item
// a step finishes gives the next model γ items (⌊γ⌋, and one more with
// probability γ − ⌊γ⌋), submitted when the item's answer is out. Step k's
// items are due at the query's arrival plus shares[0] + … + shares[k] of
// the objective (the last step's at its end); a query is good when every item it gave finished by
// arrival + objective, and its latency is that of its last item. The
// cluster's models are the steps, in order.
struct SimGraph {
  std::vector<double> gamma;   // per step; gamma[0] is ignored (1 query, 1 item)
  std::vector<double> shares;  // per step: its share of the objective
  Duration objective = 0;
};

// Model-less queries (INFaaS): every arrival is a query for one task with
// the task's requirements, routed by a TaskAutoscaler
// (autoscale/task_autoscaler.h) to one of the variants — the cluster's
// models, in order — whose instances are the GPUs of the variant's
// sub-cluster (its slots: first_gpu and max_instances are filled in from
// the cluster) and which it scales every interval. A query is due the
// task's objective after its arrival. The workload has one stream (the
// task's); results stay per variant.
struct SimModelLess {
  std::vector<TaskVariant> variants;
  VariantRequirements task;
  TaskAutoscaleOptions autoscale;
};

struct SimConfig {
  ClusterSpec cluster;
  WorkloadSpec workload;
  std::string policy = "adaptive";
  SchedulerOptions options;
  Duration duration = 10 * kSecond;  // arrivals stop here
  Duration warmup = 0;               // arrivals before this are not measured
  double jitter = 0;                 // relative execution-time jitter
  DelayInjection inject;             // delays the emulated cluster adds; none by default
  // Off by default: the scheduler plans with the spec's delays and the
  // options' slack as they are (exact GPUs need nothing else).
  DelayModelOptions delay_model{.measure = false};
  uint64_t seed = 1;
  bool record_timeline = false;      // keep every batch (small runs only)
  Duration series_interval = 0;      // > 0: keep SimResult::series at this step (requests per model, no graph)
  std::optional<SimGraph> graph;     // queries through a chain of the models; none: requests per model
  // Closed-loop autoscaling (planner/scaling.h): the cluster's GPUs are a
  // pool; initial_gpus serve at first, and every interval AutoscaleStep's
  // request or release is acted on through the scheduler's SetGpuUp — GPUs
  // requested come up provision_delay later, the highest-numbered go at
  // once. One sub-cluster, a policy with membership (not `nexus`), no graph.
  std::optional<AutoscaleOptions> autoscale;
  std::optional<SimModelLess> model_less;  // no graph, no `autoscale`, a policy with membership
};

struct TimelineEntry {
  GpuId gpu;
  ModelId model;
  Time start;
  Time end;
  int size;
  Time decided;  // when the scheduler dispatched it
  Time planned;  // the start it planned (Batch::exec_at)
};

// A run over time (Symphony Figure 15's panels), interval i covering
// [i·interval, (i+1)·interval) of virtual time, warm-up included: requests
// by when they arrived, GPUs by when they ran batches.
struct SimSeries {
  Duration interval = 0;
  std::vector<std::vector<int64_t>> good;  // [model][interval]: answered on time
  std::vector<std::vector<int64_t>> bad;   // [model][interval]: late or dropped
  std::vector<int> gpus_used;              // GPUs that ran a batch in the interval
  std::vector<Duration> busy;              // GPU time spent running batches, all GPUs
  std::vector<ScalingAdvice> advice;       // Symphony's, from the interval's bad rate and idle fraction
  std::vector<int> gpus_allocated;         // with autoscaling: the most GPUs up in the interval
  // With a memory budget (ClusterSpec::memory): loads started in the
  // interval, and the most bytes of weights the GPUs held at a load's
  // start (without one, what they held before).
  std::vector<int64_t> loads;
  std::vector<int64_t> memory_bytes;

  // Interval i over every model: requests on time, late or dropped, and
  // the share of them that were bad (0 without requests).
  int64_t Good(size_t i) const;
  int64_t Bad(size_t i) const;
  double BadRate(size_t i) const;
};

struct SimResult {
  std::string policy;
  Duration window = 0;                // measured span: duration − warmup
  std::vector<ModelMetrics> models;  // with a graph: one, its queries
  std::vector<ModelMetrics> steps;   // with a graph: per step (model), its items
  std::vector<ModelMetrics> levels;  // with workload.priority_shares: per level, its requests
  ModelMetrics total;
  std::vector<Duration> gpu_busy;     // per GPU, inside the window
  int gpus_used = 0;                  // GPUs that ran at least one batch
  int64_t delayed_starts = 0;         // batches that waited for a busy GPU
  // With a memory budget: loads started inside the window, the most bytes
  // one GPU held, and breaches of the memory contract (Load): none, when
  // the policy keeps it.
  int64_t loads = 0;
  int64_t peak_memory_bytes = 0;
  int64_t memory_violations = 0;
  std::vector<TimelineEntry> timeline;
  DelayPlan final_plan;               // what the scheduler planned with at the end
  ScalingAdvice advice;
  SimSeries series;                   // with SimConfig::series_interval
  // With autoscaling: GPU-seconds up inside the window, the most GPUs up at
  // once, and the requests and releases acted on.
  double gpu_seconds_allocated = 0;
  int peak_gpus_allocated = 0;
  int scale_ups = 0, scale_downs = 0;
  // Model-less: per variant (model), instance-seconds paid inside the
  // window; their cost (instance-seconds × cost); the accuracy of the
  // answers (each variant's, weighted by its answers); queries routed to a
  // variant that did not meet the task's requirements.
  std::vector<double> instance_seconds;
  double cost = 0;
  double accuracy = 0;
  int64_t unmet = 0;
  std::vector<std::pair<Time, std::vector<int>>> allocation;  // TaskAutoscaler::allocation()

  double OfferedRate() const;  // measured arrivals / window
  double Goodput() const;      // good / window
  double Throughput() const;   // completed (good + late) / window
  double BusyFraction(GpuId gpu) const;
  double MeanBusy() const;      // BusyFraction over every GPU, mean
  double BusySeconds() const;   // GPU-seconds spent running batches, inside the window
  double IdleFraction() const;  // 1 − MeanBusy()
};

// Runs one simulation. Errors: invalid cluster, workload or policy.
absl::StatusOr<SimResult> RunSimulation(const SimConfig& config);

// Requests per second each model is offered at the workload's starting
// rate: its share of the workload or, with a graph, the query rate times
// the items each step gets per query. The `nexus` policy's first plan.
std::vector<double> OfferedModelRates(const SimConfig& config);

}  // namespace tutti

#endif  // TUTTI_SIMULATOR_SIMULATOR_H_
