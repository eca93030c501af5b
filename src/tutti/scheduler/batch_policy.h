// Batch policies: pure functions that, given a model's queue and the time,
// decide which requests are hopeless (dropped) and what the model's next
// batch candidate is. The CandidateScheduler engine (candidate_scheduler.h)
// turns candidates into dispatches; keeping the decisions here makes them
// testable without a cluster.
//
// Timing, with network delays (Symphony appendix D): a batch of b sent at t
// starts at start(b) = max(t + delay(b), gpu_free) and its responses reach
// clients at start(b) + L(b) + d_resp, which must not pass the earliest
// deadline d in the batch. L(b) is ℓ(b) as the delay plan says the batch
// runs (ComputePlan::Latency: scaled, plus its tail).
#ifndef TUTTI_SCHEDULER_BATCH_POLICY_H_
#define TUTTI_SCHEDULER_BATCH_POLICY_H_

#include <deque>
#include <functional>
#include <limits>

#include "tutti/scheduler/cluster_spec.h"
#include "tutti/scheduler/delay_plan.h"
#include "tutti/scheduler/scheduler.h"

namespace tutti {

// A model's waiting requests, ordered by priority level (Request::level,
// 0 first), then by deadline (ties: arrival order).
using RequestQueue = std::deque<Request>;

// Inserts keeping that order; O(1) when deadlines arrive in order at one
// level.
void EnqueueByDeadline(RequestQueue* queue, const Request& request);

enum class BatchPolicyKind { kDeferred, kEager, kTimeout };

// The next batch a model would like to run.
struct Candidate {
  int size = 0;                        // 0: nothing to run
  Time dispatch_at = 0;                // send it no earlier than this
  Time latest_dispatch = kInfiniteFuture;  // sending later misses its deadline
  Time priority = 0;                   // among sendable candidates, smaller first
  Time exec_at = 0;                    // when it starts if sent at dispatch_at
};

struct BatchContext {
  Time now = 0;
  Time gpu_free = 0;  // earliest a GPU can start it (<= now: a GPU is free)
  const ModelSpec* spec = nullptr;
  NetworkDelays delays;
  DropPolicy drop = DropPolicy::kLazy;
  Duration frontrun_slack = 0;  // deferred: aim this much before frontrun
  ComputePlan compute;          // how batches run against ℓ(b); exact by default
  Duration head_guard = 0;      // deferred: a timer this late still finds the head able to run alone
  double head_guard_share = 0;  // deferred: or this share of the head's objective, if more
  // The configured delays (a DelayPlan's floors). A head is dropped as
  // hopeless (lazy drop) only if it cannot make its deadline even with
  // these and the compute plan's occupancy — the typical case, not the
  // tail; null: with the plan above. See ComputeCandidate.
  const NetworkDelays* floor_delays = nullptr;
  // The GPUs this model's batches take turns on: its sub-cluster's, shared
  // with the sub-cluster's other models. Sets early drop's window when the
  // model sets none (EarlyDropWindow).
  double gpus = 1;
  // When a batch holding requests of a level below the queue's first
  // level last went to a GPU (never: the earliest Time). While that is
  // within the head's objective, the lower level takes GPU time the head's
  // level can have back, so the head is not dropped early.
  Time lower_level_ran = std::numeric_limits<Time>::min();
};

// Early drop's window for a head whose objective is `objective`: the
// model's early_drop_window if it sets one, else the batch its GPUs can
// sustain while busy — Symphony's staggered bound (§3.3): N GPUs taking
// turns run batches of b within an objective when (1 + 1/N)·L(b), plus the
// planned delays and slack, fits in it (N = ctx.gpus; for one GPU this is
// Nexus's 2ℓ(b) ≤ SLO). A smaller window lets a busy model settle into
// smaller batches than its GPUs could run, dropping more than it must.
// At least 1, at most the max batch.
int EarlyDropWindow(const BatchContext& ctx, Duration objective);
// That bound alone: the largest batch b (at least 1, at most the max batch)
// of `spec` that `gpus` GPUs taking turns sustain within `objective`, each
// batch running as `compute` plans it and needing `delays` and `slack`
// besides. Pure; EarlyDropWindow without a model's own window, and what the
// delay model weighs margins with (delays/delay_model.h).
int SustainedBatch(const ModelSpec& spec, double gpus, Duration objective, const ComputePlan& compute,
                   const NetworkDelays& delays, Duration slack);

using DropFn = std::function<void(const Request&, DropReason)>;

// Drops hopeless heads of `queue` through `on_drop` — those that cannot meet
// their deadline even alone in the typical case (floor_delays), plus, with
// early drop, those without budget for a full window (EarlyDropWindow, or
// the queue if shorter) — then returns the candidate:
//   deferred: B = the largest batch meeting the head's deadline d;
//             exec = max(start(B), min(d − L(B+1) − slack, d − L(1) − guard))
//             (frontrun, unless B is the max batch, but early enough for
//             the head alone after a timer `guard` late; guard at least
//             head_guard_share of the head's objective); latest = d − L(B)
//             (Symphony Algorithm 1).
//   eager:    the same B, exec = start(B): run as soon as a GPU is free.
//   timeout:  B = min(|Q|, max batch); exec = now if the queue holds a max
//             batch, else the head's arrival + max_queue_delay; no latest.
// A head that fits the typical case but not the tail (the plan grew after
// its batch was planned, or its timer fired late) is not dropped: deferred
// and eager send the largest batch that fits the typical case at once.
// With several priority levels queued, the head is the highest level's
// first, and is not dropped early while lower levels are queued (dropping
// theirs keeps batches full) or ran within its objective (lower_level_ran); each lower level's first is judged by the
// same rules counting the requests ahead of it, and dropped first; a batch
// of b is due by the earliest deadline of its b requests.
Candidate ComputeCandidate(BatchPolicyKind kind, RequestQueue* queue, const BatchContext& ctx,
                           const DropFn& on_drop);

// Whether to hold a deferred candidate until its dispatch time rather than
// send it now to a free GPU: holding pays when the arrivals expected before
// then, joining it, save more GPU time, at `price` (ms of one request's
// latency per ms of GPU time; 0: the GPU's time is free), than its `size`
// requests lose by waiting. Arrivals save a batch of their own,
// `extra_batch` = ℓ(size) + ℓ(k) − ℓ(size + k) for k of them, if at least
// one comes (probability 1 − e^−arrivals, as for Poisson arrivals).
struct HoldCase {
  int size = 0;
  Duration wait = 0;
  double arrivals = 0;
  Duration extra_batch = 0;
  double price = 0;
};
bool HoldPays(const HoldCase& c);

// Removes the first `size` requests of `queue` into a batch of `model` on
// `gpu` starting at `exec_at`, planned to take `latency`.
// REQUIRES: 1 <= size <= queue->size().
Batch TakeBatch(RequestQueue* queue, ModelId model, GpuId gpu, Time exec_at, Duration latency, int size);

}  // namespace tutti

#endif  // TUTTI_SCHEDULER_BATCH_POLICY_H_
