// Scheduler: the data-plane batch scheduler. One object, written against the
// injected Clock, runs in the server (real clock), in tests (manual clock)
// and in the simulator (virtual time).
//
// Policies, chosen by name (see CreateScheduler):
//   deferred  Symphony's deferred batch scheduling (Algorithm 1, appendix D)
//   adaptive  per sub-cluster, whichever of prompt (deferred while waiting
//             pays), scarce, eager+early and eager would have served its
//             recent arrivals best
//             (adaptive_scheduler.h)
//   eager     dispatch the largest feasible batch as soon as a GPU is idle
//   timeout   the Triton / TF-Serving dynamic batcher (max batch or delay)
//   nexus     Nexus's squishy bin packing into per-GPU duty cycles
//   loads     more models than GPU memory: loads and evictions planned
//             with batches (Clockwork; load_scheduler.h)
//
// Thread-safety: not thread-safe. Submit() and the clock's timer callbacks
// must be serialized by the owner (the simulator is single-threaded; the
// server drives it from one strand).
#ifndef TUTTI_SCHEDULER_SCHEDULER_H_
#define TUTTI_SCHEDULER_SCHEDULER_H_

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tutti/core/clock.h"
#include "tutti/scheduler/cluster_spec.h"
#include "tutti/scheduler/delay_plan.h"
#include "tutti/scheduler/request.h"

namespace tutti {

class Scheduler {
 public:
  virtual ~Scheduler() = default;

  // Takes a request; the listener later receives it exactly once, in a
  // batch or as a drop (possibly inside this call). REQUIRES: request.model
  // is a model of the cluster; request ids are unique.
  virtual void Submit(const Request& request) = 0;

  // The owner no longer wants request `id` of `model` run (its client
  // cancelled). If the scheduler still holds it, it leaves the queue and the
  // listener receives it as a drop (DropReason::kWithdrawn), possibly inside
  // this call; else nothing changes. Default: nothing changes.
  virtual void Withdraw(RequestId id, ModelId model) {}

  // Requests still held (queued, not yet dispatched or dropped).
  virtual int64_t queued() const = 0;

  // The owner reports that a batch dispatched to `gpu` has finished running.
  // Policies plan with profiled latencies; with
  // SchedulerOptions::await_completion they also wait for this report before
  // giving a GPU new work. Default: ignored.
  virtual void OnBatchDone(GpuId gpu) {}

  // The owner reports that of the batch it was given for `gpu` to start at
  // `exec_at`, only `remaining` requests run: the others were withdrawn
  // (cancelled) before it started. With none remaining it counts as
  // OnBatchDone. A policy that planned the GPU busy for the whole batch may
  // give it new work sooner. Default: OnBatchDone when none remain.
  virtual void OnRequestsWithdrawn(GpuId gpu, Time exec_at, int remaining) {
    if (remaining == 0) OnBatchDone(gpu);
  }

  // Membership, for distributed mode: a GPU that is down is given no new
  // work; a GPU that comes up takes work from `free_at` on (when the work its
  // backend already holds will be done). Every GPU starts up. Batches
  // dispatched to a GPU before it went down are the owner's to re-submit or
  // answer. Unimplemented for policies that plan GPUs ahead (`nexus`).
  virtual absl::Status SetGpuUp(GpuId gpu, bool up, Time free_at);

  // Plans with `plan` from now on (delay_plan.h): the network delays, the
  // frontrun slack, and how each model runs on each GPU. Until the first
  // call a scheduler plans with the spec's delays, the options' frontrun
  // slack and the profiles as they are. Candidates already computed follow
  // the new plan at their next event. REQUIRES: plan.compute is empty or
  // has num_gpus × models entries.
  virtual void SetDelayPlan(const DelayPlan& plan) = 0;

  // How each sub-cluster makes its candidates now, by name, for policies
  // that choose as they go (`adaptive`); empty for the others.
  virtual std::vector<std::string> Choices() const { return {}; }
};

enum class DropPolicy {
  kLazy,   // drop a request only when it can no longer meet its deadline
  kEarly,  // Nexus early drop: slide a window of the target batch size
};

// What a deferred batch's waiting is for, when holding it could still grow
// it (candidate_scheduler.h, "Waiting only while it pays"):
enum class Deferral {
  kLatency,      // a fixed pool: a GPU's idle time costs nothing, so answer sooner with it
  kConsolidate,  // autoscaling: GPU time is what is saved, at SchedulerOptions::gpu_ms_price
};

struct SchedulerOptions {
  DropPolicy drop = DropPolicy::kLazy;
  // `deferred` only: dispatch this much before frontrun. At frontrun a batch
  // of b has only ℓ(b+1) − ℓ(b) of slack left, less than a real clock's timer
  // latency; the server sets a margin, the simulator (exact timers) needs none.
  // The initial plan's; SetDelayPlan replaces it.
  Duration frontrun_slack = 0;
  // `deferred` only: a batch is dispatched early enough for its head alone
  // to finish this share of its objective before its deadline (or the delay
  // plan's head guard, if more). Holding a lone request to the last moment
  // gains no batch and stakes it on every late timer, machine stall and
  // slow client; the share costs batch size only where batches are small.
  double head_guard_share = 0;
  // `deferred`, `eager`, `timeout`: a GPU takes new work only once every batch
  // it was given has been reported done (OnBatchDone), as in a pull-based
  // single queue, so that an instance running slower than its profile is not
  // handed work it cannot start. Off: GPUs are freed by prediction alone.
  bool await_completion = false;
  // `deferred`, `eager`, `timeout`, without await_completion: a GPU takes a
  // new batch only while fewer than this many it was given are not reported
  // done (0: no limit, prediction alone). A few let the next batches wait
  // at the executor while one runs (the hand-off hidden behind the run)
  // yet bound what queues there: an executor slower than predicted by its
  // per-call costs (a CPU model's batch of one) otherwise receives each
  // request as its own batch the moment it comes, and they queue inside
  // it, one at a time, where the scheduler cannot batch them. The server's
  // default is 3 (ServerConfig): with 2, a graph of CPU executors at light
  // load, where two batches in flight are common, made a third wait for a
  // report instead of at the executor.
  int max_in_flight = 0;
  // By sub-cluster: its GPUs await completion whatever await_completion
  // says (missing: no). For an executor whose batches queue behind one
  // another anyway — a compute-then-update model's pass their update stage
  // one at a time — a batch handed over early only waits there, and the
  // wait reads as dispatch delay to the delay model, which then plans
  // every batch with it.
  std::vector<bool> await_sub_clusters;
  // Whether these options hold a GPU until its batches are reported done
  // (Scheduler::OnBatchDone): whoever runs the batches must then report
  // each one's end.
  bool HoldsGpusUntilReported() const {
    return await_completion || max_in_flight > 0 ||
           std::find(await_sub_clusters.begin(), await_sub_clusters.end(), true) != await_sub_clusters.end();
  }
  // `adaptive` only: how often each sub-cluster chooses how it makes
  // candidates, and over how much of its latest arrivals
  // (adaptive_scheduler.h).
  Duration adaptive_epoch = 1 * kSecond;
  Duration adaptive_window = 2 * kSecond;
  int adaptive_memory = 5;  // epochs whose replays the choice sums
  double adaptive_stress = 1.25;  // ties are broken at this many times the load (≤ 1: not)
  // `adaptive` only: replay on a thread of its own, so that a real clock's
  // scheduling never waits for it (the server); off, inline and
  // deterministic (the simulator, tests).
  bool adaptive_replay_thread = false;
  // `adaptive`: what its deferred ways wait for (Deferral), and how many
  // milliseconds of one request's latency a millisecond of GPU time that
  // waiting saves is worth. Serve configs and experiments consolidate when
  // they autoscale.
  Deferral deferral = Deferral::kLatency;
  double gpu_ms_price = 100;
  // `nexus` only: how often the planner re-packs sessions from observed rates.
  Duration nexus_epoch = 10 * kSecond;
  // `nexus` only: expected request rate per model (requests/s) for the first
  // epoch's plan; models absent or 0 are planned from observed rates later.
  std::vector<double> nexus_initial_rates;
  // `nexus` only: plan for the largest multiple of the rates that fits the
  // cluster (headroom for bursts); false plans for the rates exactly.
  bool nexus_fill_cluster = true;
  // `loads` only (load_scheduler.h): how loads are decided and which
  // model a load evicts.
  enum class LoadMode {
    kPlanned,       // a load only where load + compute meet the request's deadline
    kOnDemand,      // a request for a model not loaded loads it, whatever its deadline
    kFirstRequest,  // the same, and the GPU computes nothing while it loads (Triton's load on first request)
  };
  LoadMode load_mode = LoadMode::kPlanned;
  enum class Eviction {
    kCostAware,  // the loaded model whose expected arrivals cost least to reload
    kLru,        // the least recently used
  };
  Eviction eviction = Eviction::kCostAware;
};

// The policy names CreateScheduler accepts, in a stable order.
const std::vector<std::string>& SchedulerPolicyNames();

// Builds a scheduler. `clock` and `listener` must outlive it. InvalidArgument
// for an unknown policy (naming the known ones) or an invalid spec.
absl::StatusOr<std::unique_ptr<Scheduler>> CreateScheduler(const std::string& policy,
                                                          const ClusterSpec& spec,
                                                          const SchedulerOptions& options,
                                                          Clock* clock,
                                                          SchedulerListener* listener);

}  // namespace tutti

#endif  // TUTTI_SCHEDULER_SCHEDULER_H_
