// CandidateScheduler: the engine behind the `deferred`, `adaptive`, `eager`
// and `timeout` policies — Symphony's Algorithm 1 with its appendix D extensions,
// generalised over the batch policy that computes candidates.
//
// State is split as in Symphony's ModelThread / RankThread design, so that
// the per-model part can later move to its own cores:
//   per model (ModelState): the request queue, the current candidate and the
//     model timer (fires at the candidate's dispatch time, or just after its
//     latest valid dispatch time to shrink it);
//   per sub-cluster (RankState): the GPUs available for a grant, ordered by
//     id (the smallest id is taken, so high-numbered GPUs stay idle and can be
//     released), and the sendable candidates ordered by priority (earliest
//     `latest` first); per GPU its predicted free time and GPU timer.
// A model timer takes the smallest-id available GPU; a GPU timer takes the
// sendable candidate with the best priority. Every event costs
// O(log M + log G + log max_batch).
//
// A GPU timer is armed only when its firing can grant something: while the
// rank has sendable candidates (or with scarce_take or await_completion).
// Otherwise the release is deferred: the GPU joins the available set at the
// rank's next MakeReady if its time has come by then — the same set the
// timer would have made, without waking a real server's scheduler for it
// (a wake-up per batch at light load) — and its timer is armed as
// soon as a candidate has to wait for a GPU.
//
// Each sub-cluster makes its candidates by a RankPolicy, which the
// `adaptive` policy switches as it goes (adaptive_scheduler.h). With
// scarce_take, a deferred candidate waits for its dispatch time
// only while waiting costs no GPU time: when a GPU is free and no candidate
// is sendable, it takes the waiting candidate with the earliest `latest` at
// once if the rank's models with queued work outnumber the GPUs that are
// free or come free before the first of their dispatch times — with fewer
// GPUs than models, a GPU left idle until then is time the queues never get
// back (an O(M + G) check per such event). The options' drop (early drop
// keeps batches large) can apply to the models where batching pays
// (Symphony's strong batching, β/α > 2: ℓ(2) − ℓ(1) < ℓ(1)/3) and to the
// others separately; where it does not, requests drop lazily — early drop
// costs weak-batching models goodput (docs/benchmarks/policy_suite.md).
//
// Waiting only while it pays (RankPolicy::hold). Deferral holds a batch
// for batch-mates, which is worth it only if they come and the GPU time
// they save matters. With Hold::kWhileItPays a deferred candidate goes at
// once to a free GPU (its own refresh finding one, or a GPU's release
// finding no sendable candidate) unless holding pays (batch_policy.h's
// HoldPays): the arrivals its model's ArrivalOutlook expects before its
// dispatch time, given the requests outstanding now — none for closed-loop
// clients that all wait — save more GPU time, at
// SchedulerOptions::gpu_ms_price, than its requests lose by waiting — and
// never for clients the outlook finds in a closed loop, whose batch-mates
// come only as answers free them;
// Hold::kWhileBatchMatesCome holds while a batch-mate is likely to come
// (plain deferral, except that closed-loop clients are not held). With
// Deferral::kLatency (a fixed pool) the GPU's time
// is free when the batch would be done before the held one was to start;
// with kConsolidate (autoscaling) GPU time always has its price. Near a
// fixed pool's capacity an idle GPU is not idle for long, so its time is
// free only while the rank's load — its arrivals at the batch its GPUs
// sustain, plus what smaller batches cost beyond that — stays below
// kFreeBelowLoad of its GPUs. Waiting
// candidates of such a rank are kept by urgency; a free GPU considers them
// in that order, and its release gets a timer while any waits.
//
// GPUs are modelled by prediction: a batch started at s frees its GPU at
// s + scale·ℓ(b) (that GPU's occupancy in the delay plan); the GPU timer
// fires d_ctrl before that, so the next batch can be on its way. An executor
// that runs late simply starts the next batch late — unless await_completion
// holds the GPU until its batches are reported done, or max_in_flight until
// enough of them are. Deadlines are planned
// with the worst compute plan of the model among its sub-cluster's GPUs: a
// candidate is filed before its GPU is known, and one slow GPU must not
// make the batches it gets late.
#ifndef TUTTI_SCHEDULER_CANDIDATE_SCHEDULER_H_
#define TUTTI_SCHEDULER_CANDIDATE_SCHEDULER_H_

#include <deque>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "tutti/scheduler/arrival_outlook.h"
#include "tutti/scheduler/batch_policy.h"
#include "tutti/scheduler/scheduler.h"

namespace tutti {

// How one sub-cluster makes its candidates (see above).
struct RankPolicy {
  BatchPolicyKind kind = BatchPolicyKind::kDeferred;
  bool scarce_take = false;  // free GPUs take waiting candidates while scarce
  bool drop_strong = true;   // the options' drop applies to strong-batching models
  bool drop_weak = true;     // … and to the others (else: lazy drop)
  // Deferred: how long a batch is held for batch-mates (see above).
  enum class Hold {
    kToFrontrun,           // Symphony: to the frontrun, always
    kWhileBatchMatesCome,  // while a batch-mate is likely to come before then
    kWhileItPays,          // while the arrivals expected are worth the wait
  };
  Hold hold = Hold::kToFrontrun;
  bool operator==(const RankPolicy&) const = default;
};

class CandidateScheduler final : public Scheduler {
 public:
  // Every sub-cluster starts with `policy`.
  // REQUIRES: ValidateClusterSpec(spec).ok(); clock and listener outlive this.
  CandidateScheduler(const ClusterSpec& spec, const SchedulerOptions& options, Clock* clock,
                     SchedulerListener* listener, const RankPolicy& policy);
  ~CandidateScheduler() override;

  // Sub-cluster `rank` (an index into spec.EffectiveSubClusters()) makes its
  // candidates by `policy` from now on; its models' candidates are
  // recomputed at once.
  void SetRankPolicy(int rank, const RankPolicy& policy);
  int num_ranks() const { return static_cast<int>(ranks_.size()); }
  int rank_of(ModelId m) const { return models_[m].rank; }
  // What it plans with now (the spec's delays and the options' slack until
  // SetDelayPlan), and the GPUs down (SetGpuUp).
  const DelayPlan& plan() const { return plan_; }
  std::vector<GpuId> DownGpus() const;
  // Per model: whether its arrival outlook finds its clients in a closed
  // loop now (ArrivalOutlook::Closed); false for models without one.
  std::vector<bool> ClosedLoops();
  // Holds no batch of the models marked in `closed`, whatever their
  // outlooks say (a replay of their arrivals; see adaptive_scheduler.h).
  void AssumeClosedLoops(std::vector<bool> closed) { assumed_closed_ = std::move(closed); }

  void Submit(const Request& request) override;
  int64_t queued() const override { return queued_; }
  void Withdraw(RequestId id, ModelId model) override;
  void OnBatchDone(GpuId gpu) override;
  void OnRequestsWithdrawn(GpuId gpu, Time exec_at, int remaining) override;
  absl::Status SetGpuUp(GpuId gpu, bool up, Time free_at) override;
  void SetDelayPlan(const DelayPlan& plan) override;

 private:
  using ReadyKey = std::pair<Time, ModelId>;

  struct ModelState {
    int rank = 0;
    double gpus = 1;  // its rank's GPUs over the rank's models (BatchContext::gpus)
    Duration work = 0;  // GPU time per request in batches its GPUs sustain (Load)
    bool strong = false;  // batching pays: ℓ(2) − ℓ(1) < ℓ(1)/3
    RequestQueue queue;
    Candidate candidate;
    TimerId timer = kNoTimer;
    // In its rank's ready set (sendable), or its waiting set (a hold
    // ranks: deferred, its timer set), under `key`.
    enum class Filed { kNone, kReady, kWaiting } filed = Filed::kNone;
    ReadyKey key;
    std::optional<ArrivalOutlook> outlook;  // kept once a rank's policy holds by it
    Time recheck_at = kInfiniteFuture;      // a hold's forecast moves then (Holds)
    // When a batch last took requests of each level above 0 (by level;
    // empty while only level 0 ran): BatchContext::lower_level_ran.
    std::vector<Time> level_ran_at;
  };
  struct GpuState {
    int rank = 0;
    Time free_at = 0;
    Time release_at = 0;  // free_at − d_ctrl, as planned at its last dispatch
    TimerId timer = kNoTimer;
    int running = 0;        // batches not reported done
    // Those of models with an outlook, oldest first, while completions are
    // reported (SchedulerOptions::HoldsGpusUntilReported): (model, handle).
    std::deque<std::pair<ModelId, uint64_t>> answering;
    bool awaiting = false;  // predicted free, but Full: OnBatchDone releases it
    bool down = false;      // SetGpuUp(false): takes no work
    // The batch it was given last: what OnRequestsWithdrawn may shrink.
    struct {
      ModelId model = -1;
      Time exec_at = 0;
    } last;
  };
  struct RankState {
    RankPolicy policy;
    std::set<GpuId> available;  // GPU timer fired, not granted yet
    std::set<ReadyKey> ready;   // sendable candidates by priority
    std::set<ReadyKey> waiting;  // a hold other than kToFrontrun: deferred candidates by latest dispatch
    std::vector<GpuId> deferred;  // released at free_at − d_ctrl without a timer (see above)
    int up = 0;  // GPUs up (CountGpus)
    // The GPU time its arrivals and batches ask for (Load), decaying with
    // kLoadMemory since `demand_at`, counted from `demand_since`.
    double demand = 0;
    Time demand_at = 0;
    Time demand_since = -1;
  };

  // ModelThread side.
  Candidate Compute(ModelId m, Time now, Time gpu_free);
  void Refresh(ModelId m);
  // RankThread side.
  void MakeReady(ModelId m);
  void Unready(ModelId m);  // out of the ready or the waiting set
  // Ranks that hold by the outlook: whether m's deferred candidate should
  // wait for its dispatch time rather than go to free GPU g now (above).
  bool Holds(ModelId m, GpuId g, Time now);
  // The same ranks: the first waiting candidate (most urgent first) that
  // should not wait, given free GPU g; -1 if none.
  ModelId PromptTake(int rank, GpuId g, Time now);
  // Starts an ArrivalOutlook for every model that has none.
  void TrackArrivals();
  // The share of `rank`'s GPUs up that its recent demand needs: each
  // arrival asks for its model's `work`, each batch for what it takes
  // beyond its requests' work (a batch smaller than its GPUs sustain),
  // each weighing e^(−age / kLoadMemory); corrected for the time since the
  // first, so that a cluster that has just started does not look idle.
  double Load(int rank, Time now) const;
  void AddDemand(int rank, Time now, double demand);
  void ComputeWork(ModelId m);  // ModelState::work, from its GPUs and plan
  static constexpr Duration kLoadMemory = 20 * kMillisecond;
  // Deferral::kLatency: an idle GPU's time is free while the rank's load is
  // below this; beyond, it is kept for the bursts of a pool near its
  // capacity, as an autoscaler's headroom would be.
  static constexpr double kFreeBelowLoad = 0.8;
  // Hold::kWhileBatchMatesCome holds while at least one arrival is more
  // likely than not (1 − e^−k ≥ 1/2).
  static constexpr double kLikelyArrivals = 0.6931471805599453;
  void Grant(ModelId m, GpuId g);
  void Release(GpuId g);
  void Dispatch(ModelId m, GpuId g, int size, Time now);
  // GPU g's release at free_at − d_ctrl: a timer, or deferred (see above).
  void ScheduleRelease(GpuId g);
  // GPU g takes work only once its batches are reported done
  // (SchedulerOptions::await_completion, await_sub_clusters).
  bool Awaits(GpuId g) const {
    const int r = gpus_[g].rank;
    return options_.await_completion ||
           (r < static_cast<int>(options_.await_sub_clusters.size()) && options_.await_sub_clusters[r]);
  }
  // GPU g holds as many unreported batches as it may (Awaits: any;
  // SchedulerOptions::max_in_flight): released only by OnBatchDone.
  bool Full(GpuId g) const {
    const int limit = Awaits(g) ? 1 : options_.max_in_flight;
    return limit > 0 && gpus_[g].running >= limit;
  }
  // GPU g is Full at its release: OnBatchDone releases it — or, under
  // max_in_flight, kReportOverdue after its predicted free time, the
  // missing reports taken as lost.
  void Await(GpuId g);
  static constexpr Duration kReportOverdue = kSecond;
  void ArmRelease(GpuId g);  // its timer at release_at
  void OnReleaseTimer(GpuId g);
  // The rank's deferred releases: those due by `now` join the available
  // set; ArmDeferred gives the others their timers.
  void CatchUpDeferred(int rank, Time now);
  void ArmDeferred(int rank);
  // scarce_take: the waiting candidate a free GPU `g` of `rank` should take
  // now because GPUs are scarce (see above), or -1.
  ModelId ScarceTake(int rank, GpuId g, Time now) const;
  // Sets BatchContext::gpus of `rank`'s models: its GPUs up over its models.
  void CountGpus(int rank);
  // scarce_take: free GPUs of `rank` take waiting candidates while scarce.
  void OfferFreeGpus(int rank);

  const ClusterSpec spec_;
  const SchedulerOptions options_;
  DelayPlan plan_;
  std::vector<ComputePlan> worst_;  // per model: the worst over its sub-cluster's GPUs
  Clock* const clock_;
  SchedulerListener* const listener_;
  // Takes request `id` out of model `m`'s queue; nullopt if it is not there.
  std::optional<Request> Unqueue(ModelId m, RequestId id);
  // Moves request `id` of model `m`, if still queued, to kDelayedLevel
  // (Request::delay_at).
  void Delay(RequestId id, ModelId m);

  std::vector<ModelState> models_;
  std::vector<GpuState> gpus_;
  absl::flat_hash_map<RequestId, TimerId> delay_timers_;  // Request::delay_at's, until they fire
  std::vector<RankState> ranks_;
  int64_t queued_ = 0;
  std::vector<bool> assumed_closed_;
};

}  // namespace tutti

#endif  // TUTTI_SCHEDULER_CANDIDATE_SCHEDULER_H_
