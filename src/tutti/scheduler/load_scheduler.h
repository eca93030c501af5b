// LoadScheduler: the `loads` policy — more models than GPU memory holds,
// served by planning each weights load like a batch (Clockwork, OSDI'20:
// a load is one more action of predictable duration, decided centrally).
//
// Every GPU has two timelines: its compute, which runs one batch at a
// time, and its copy engine, which runs one load at a time beside it
// (ClusterSpec::memory: overhead + bytes / bandwidth). Per GPU the
// scheduler knows which models are loaded (or loading, ready at a known
// instant) and what each occupies.
//
//   compute: when a GPU is free, the loaded model whose queued head is due
//     first runs the largest batch its head's deadline allows; requests
//     that cannot finish even alone are dropped first (lazily).
//   loads (kPlanned): when a copy engine is free, it loads the model with
//     queued work, due first, that is loaded nowhere that could serve its
//     head in time — only if the load, then its batch of one, still meets
//     that head's deadline on this GPU; a cold model's requests that no
//     GPU could load and run in time are dropped at once (early).
//     Room is made by evicting loaded models with no batch running or
//     planned and no queued work: the one whose expected arrivals cost
//     least to reload (decayed arrival rate × load time; ties: least
//     recently used), or the least recently used (Eviction::kLru).
//   kOnDemand: every model with queued work and no copy is loaded on the
//     first free copy engine, in deadline order, whether or not its
//     requests can still make it, evicting the least recently used model
//     not running; kFirstRequest also stops the GPU's compute while it
//     loads (Triton's load on first request).
//
// A request for a model being loaded waits and joins the first batch
// after the load. Without a memory budget every model is loaded
// everywhere from the start. One sub-cluster: every GPU may load any
// model. Not thread-safe (Scheduler's contract).
#ifndef TUTTI_SCHEDULER_LOAD_SCHEDULER_H_
#define TUTTI_SCHEDULER_LOAD_SCHEDULER_H_

#include <deque>
#include <set>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "tutti/scheduler/scheduler.h"

namespace tutti {

class LoadScheduler final : public Scheduler {
 public:
  // REQUIRES: ValidateClusterSpec(spec).ok(), one sub-cluster; clock and
  // listener outlive this.
  LoadScheduler(const ClusterSpec& spec, const SchedulerOptions& options, Clock* clock,
                SchedulerListener* listener);
  ~LoadScheduler() override;

  void Submit(const Request& request) override;
  void Withdraw(RequestId id, ModelId model) override;
  int64_t queued() const override { return queued_; }
  void SetDelayPlan(const DelayPlan& plan) override { plan_ = plan; }

 private:
  struct Copy {
    Time ready_at = 0;    // its load ends
    Time busy_until = 0;  // its last batch ends
    Time last_used = 0;   // its last batch started (or its load, before any)
  };
  struct Gpu {
    Time compute_free = 0;
    Time copy_free = 0;
    int64_t used = 0;
    absl::flat_hash_map<ModelId, Copy> copies;
    TimerId timer = kNoTimer;
    Time timer_at = kInfiniteFuture;
  };
  struct Model {
    std::deque<Request> queue;  // by deadline
    double rate = 0;            // arrivals/s, decaying with kRateMemory since rate_at
    Time rate_at = 0;
  };
  using Urgency = std::pair<Time, ModelId>;  // (head's deadline, model)

  void Pump(GpuId g);
  bool RunBatch(GpuId g, Time now);   // a batch if one can run now
  bool StartLoad(GpuId g, Time now);  // a load if one should start now
  // Evicts from g until `bytes` fit, as the options choose; false (nothing
  // evicted) if that cannot be done now.
  bool MakeRoom(GpuId g, int64_t bytes, Time now, std::vector<ModelId>* evicted);
  // When a load on g could start: once its copy engine is free (and, with
  // LoadMode::kFirstRequest, its compute too).
  Time LoadStart(GpuId g, Time now) const;
  // When m's head could start on g at the earliest (its copy's load, or a
  // load starting when g's copy engine frees), and its batch of one end.
  Time EarliestEnd(GpuId g, ModelId m, Time now) const;
  // Drops m's queued requests due before `end` + the response delay.
  void DropBefore(ModelId m, Time end, DropReason reason);
  void Refile(ModelId m, Time old_head);  // after m's queue head changed
  void Wake(GpuId g, Time at);
  Duration Latency(GpuId g, ModelId m, int b) const;
  double RateNow(ModelId m, Time now) const;

  static constexpr Duration kRateMemory = 10 * kSecond;

  const ClusterSpec spec_;
  const SchedulerOptions options_;
  DelayPlan plan_;
  Clock* const clock_;
  SchedulerListener* const listener_;
  std::vector<Model> models_;
  std::vector<Gpu> gpus_;
  std::set<Urgency> urgent_;  // models with queued requests
  int64_t queued_ = 0;
};

}  // namespace tutti

#endif  // TUTTI_SCHEDULER_LOAD_SCHEDULER_H_
