// ShardedScheduler: one scheduling policy on several cores (Symphony §4.3,
// Figure 13 left).
//
// Symphony splits its scheduler into ModelThreads (a model's queue and
// candidate) and a RankThread (matchmaking candidates with GPUs). Its
// ModelThreads scale because models share nothing; its one RankThread is
// shared by all of them and fed by messages. Here the unit of a core is a
// shard: a group of whole sub-clusters (§4.4) with the model work *and* the
// rank work of its sub-clusters — a sub-cluster's models only ever meet that
// sub-cluster's GPUs, so shards share nothing, and the model → rank
// messages of Symphony's design become calls within one core's cache
// instead of cross-core traffic. Each shard is an ordinary single-threaded
// scheduler (CandidateScheduler, or any policy) owned by one thread: the
// thread its clock fires timers on. No locks: a call for a shard made on
// its thread runs at once; a call made elsewhere is handed to the shard's
// thread through the shard's `post` (a queue per shard, e.g. an event
// loop's). The single-threaded scheduler is kept as it is for the
// simulator's determinism; a shard makes exactly the decisions the
// single-threaded scheduler makes for its sub-clusters given the same
// events in the same order (sharded_scheduler_test.cc).
//
// Throughput on N cores is the sum of the shards' single-thread rates while
// shards ≥ N, each shard's being the single-thread rate of a cluster
// 1/shards the size (the per-event cost is O(log M + log G), so it barely
// depends on the size): linear in the cores until memory bandwidth or the
// frontends' fan-in binds. Measured figures and a 32-core projection: the
// README, "Scheduling on several cores".
//
// Ids: callers use the spec's global model and GPU ids; the listener gets
// global ids too. Sub-clusters are placed on shards by PlanShards
// (shard_plan.h).
//
// Thread-safety: every method may be called from any thread, provided each
// shard without a `post` is only ever called from its own thread. The
// listener is called on the shards' threads, concurrently for different
// shards: it must be thread-safe across shards and must not call back into
// this scheduler. Destroy the scheduler once no shard thread runs its
// timers or posted calls (it cancels its timers on its shards' clocks).
#ifndef TUTTI_SCHEDULER_SHARDED_SCHEDULER_H_
#define TUTTI_SCHEDULER_SHARDED_SCHEDULER_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tutti/scheduler/scheduler.h"
#include "tutti/scheduler/shard_plan.h"

namespace tutti {

// Where a shard runs: `clock` fires its timers on the shard's thread, and
// `post`, if set, runs a function there later (calls made on other
// threads go through it, in order). Without `post`, the caller promises to
// call for this shard only on its thread.
struct SchedulerShard {
  Clock* clock = nullptr;
  std::function<void(std::function<void()>)> post;
};

class ShardedScheduler final : public Scheduler {
 public:
  // One shard per entry of `shards`; their clocks and the listener must
  // outlive this. InvalidArgument for an invalid spec, an unknown policy, a
  // shard without a clock, no shards, or more shards than the spec has
  // sub-clusters (a sub-cluster is not split: its GPUs are matched with all
  // of its models).
  static absl::StatusOr<std::unique_ptr<ShardedScheduler>> Create(const std::string& policy,
                                                                 const ClusterSpec& spec,
                                                                 const SchedulerOptions& options,
                                                                 std::vector<SchedulerShard> shards,
                                                                 SchedulerListener* listener);
  ~ShardedScheduler() override;

  int shards() const { return static_cast<int>(shards_.size()); }
  int ShardOfModel(ModelId model) const { return model_place_[model].shard; }
  int ShardOfGpu(GpuId gpu) const { return gpu_place_[gpu].shard; }
  // Requests held by one shard (queued() sums them): exact on the shard's
  // thread, a recent value elsewhere.
  int64_t queued_in(int shard) const;

  void Submit(const Request& request) override;
  int64_t queued() const override;
  void Withdraw(RequestId id, ModelId model) override;
  void OnBatchDone(GpuId gpu) override;
  void OnRequestsWithdrawn(GpuId gpu, Time exec_at, int remaining) override;
  absl::Status SetGpuUp(GpuId gpu, bool up, Time free_at) override;
  // Each shard gets the plan for its GPUs and models. It reaches every
  // shard: without posts, call it only where one thread drives all shards.
  void SetDelayPlan(const DelayPlan& plan) override;

 private:
  using Place = ShardPlan::Place;
  class Shard;

  ShardedScheduler() = default;
  // Runs `fn` on `shard`'s thread: now, or through its post.
  void Run(int shard, std::function<void(Shard&)> fn);

  int models_ = 0;
  bool membership_ = true;  // the policy implements SetGpuUp (not nexus, which plans its GPUs ahead)
  std::vector<Place> model_place_;
  std::vector<Place> gpu_place_;
  std::vector<std::unique_ptr<Shard>> shards_;
};

}  // namespace tutti

#endif  // TUTTI_SCHEDULER_SHARDED_SCHEDULER_H_
