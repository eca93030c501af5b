// AdaptiveScheduler: the `adaptive` policy — each sub-cluster makes its
// candidates whichever way would have served its own recent arrivals best,
// of four (candidate_scheduler.h, RankPolicy):
//   prompt       Symphony's deferred batching, holding a batch only while
//                that pays (candidate_scheduler.h, "Waiting only while it
//                pays"; the way it starts)
//   scarce       deferred, but free GPUs take waiting candidates while models
//                with queued work outnumber them; early drop only where
//                batching pays (with GPUs to spare: plain deferral, holding
//                a batch while any batch-mate is expected)
//   eager+early  the largest feasible batch as soon as a GPU is free; early
//                drop only where batching pays (without it, eager on strong
//                batching models can collapse past its capacity into small
//                batches of the oldest requests)
//   eager        the same with lazy drop (a little better short of that)
// No one of them wins everywhere: waiting for frontrun pays near capacity
// with strong batching; it spends the slack when models outnumber GPUs or
// arrivals come in bursts, where eager wins; below capacity holding a batch
// only delays answers, unless the GPU time it saves is wanted
// (bench/policy_suite.sh).
//
// Every `adaptive_epoch`, at the first arrival for one of a sub-cluster's
// models after it, the sub-cluster's arrivals of the last
// `adaptive_window` are replayed under each of the four — the same
// CandidateScheduler on a ManualClock, from empty queues, against exact
// GPUs (each batch runs its planned occupancy from its planned start, and
// its answers take the delay plan's response delay), with the delay plan
// and the GPUs up as they are now — and once more with the arrivals
// compressed in time by `adaptive_stress` (1.25: a quarter more load).
// Summed over the last `adaptive_memory` epochs, the one that served best
// (BestChoice) makes the sub-cluster's candidates from then on: the fewest
// bad requests beyond each model's 1% allowance (p99 within the SLO); then,
// when consolidating (Deferral::kConsolidate), the least GPU time; then the
// fewest beyond the allowance under stress (headroom); then the fewest bad,
// plain and under stress; then the soonest answers. One
// window alone is too short: near capacity, a way that fails one second in
// five often has a clean window. The stressed replays break the ties of
// quiet windows by headroom: with bursty arrivals, a quiet second in which
// every way served all says nothing of the next burst. Where even that
// ties, in a fixed pool, the sooner answers win. Replays start from empty
// queues, so they cannot see a way stuck in a state of its own making: a
// stall (a busy CPU, a slow executor) can tip eager with lazy drop into a
// collapse it does not leave at half its capacity. So the requests each
// way leaves bad live are counted too; where the current way left a larger
// share bad since the last choice than its replay of the window says
// (Stuck), that way sits out kStuckEpochs epochs (twice as many each time
// it is found stuck again). Closed-loop clients do not
// mislead the replays: no way holds them for batch-mates, so the arrivals
// replayed are the ones they send when answered at once. Switching
// recomputes the sub-cluster's candidates at once; queued requests keep
// their places.
//
// Cost: the replays redo the scheduler's own work for the window eight
// times an epoch (four ways, plain and stressed: 16× the scheduler's own
// work with the defaults, a window of 2 s every 1 s). Inline
// (the default) the choice is made within the arrival's call, so the same
// events give the same decisions (the simulator, tests, and each shard of a
// ShardedScheduler); with `adaptive_replay_thread` (the server) the replays
// run on a thread of their own, on CPU time nothing else wants, and the
// choice takes effect at the first arrival after they finish, so they never
// hold up scheduling or serving.
//
// Thread-safety: as Scheduler (the replay thread touches only its copies).
#ifndef TUTTI_SCHEDULER_ADAPTIVE_SCHEDULER_H_
#define TUTTI_SCHEDULER_ADAPTIVE_SCHEDULER_H_

#include <cstdint>
#include <deque>
#include <future>
#include <memory>
#include <string_view>
#include <vector>

#include "tutti/scheduler/candidate_scheduler.h"

namespace tutti {

// The ways AdaptiveScheduler chooses between, in its order of preference.
// Both deferred ways hold by the arrival outlook: a way that held
// closed-loop clients for batch-mates would throttle them, and the replays,
// which replay their arrivals as they came, could not see it.
struct AdaptiveChoice {
  std::string_view name;
  RankPolicy policy;
};
const std::vector<AdaptiveChoice>& AdaptiveChoices();
// The choice called `name`, or null.
const AdaptiveChoice* FindAdaptiveChoice(std::string_view name);

// Requests of each model of a spec, answered by their deadline or not
// (late or dropped).
struct ReplayCount {
  std::vector<int64_t> good;
  std::vector<int64_t> bad;
  Duration busy = 0;     // GPU time its batches took
  Duration latency = 0;  // summed over the requests that ran, to their answers
};

// Replays `arrivals` (in arrival order) from empty queues with every
// sub-cluster making candidates by `policy`, on exact GPUs as described
// above, planning with `plan` (as SetDelayPlan's); GPUs in `down` take no
// work; the models marked in `closed` come from closed-loop clients and
// are never held for batch-mates (a replay sends the arrivals when they
// came, whatever it does, so it cannot see holding throttle them).
// REQUIRES: ValidateClusterSpec(spec).ok().
ReplayCount Replay(const ClusterSpec& spec, const SchedulerOptions& options, const DelayPlan& plan,
                   const std::vector<GpuId>& down, const RankPolicy& policy, const std::vector<Request>& arrivals,
                   const std::vector<bool>& closed = {});

// How a replay served: bad requests beyond each model's 1% allowance (its
// p99 within the SLO), and bad requests.
struct ReplayScore {
  double excess = 0;
  int64_t bad = 0;
  // The same for the window's arrivals compressed in time by
  // adaptive_stress (more load: which choice has headroom).
  double stressed_excess = 0;
  int64_t stressed_bad = 0;
  // The plain replay's GPU time and summed latency (ReplayCount).
  Duration busy = 0;
  Duration latency = 0;
};
ReplayScore Score(const ReplayCount& count);

// `arrivals` (in arrival order) with the gaps between them divided by
// `factor`, each keeping its time to deadline: `factor` times the load.
std::vector<Request> Compress(const std::vector<Request>& arrivals, double factor);

// Whether a way is stuck: live, it left `live_bad` of `live_arrivals` bad
// since the last choice, a larger share than its replay of the window did
// (`replayed_bad` of `window`) by more than 5 points, over at least 100
// arrivals — a state of the queues that replays from empty ones cannot see.
bool Stuck(int64_t live_bad, int64_t live_arrivals, int64_t replayed_bad, int64_t window);

// The choice that served best: the least excess, then (kConsolidate) the
// least GPU time (within 2%), then the least excess under stress, then the
// fewest bad, plain and under stress, then the least latency, then the
// first. Bad within the allowance costs no goodput, while headroom says
// which way keeps it as load rises: near capacity the way with fewer bad
// in a window is often the one that tips over in the next.
int BestChoice(const std::vector<ReplayScore>& scores, Deferral deferral);

class AdaptiveScheduler final : public Scheduler {
 public:
  // REQUIRES: ValidateClusterSpec(spec).ok(); clock and listener outlive this.
  AdaptiveScheduler(const ClusterSpec& spec, const SchedulerOptions& options, Clock* clock,
                    SchedulerListener* listener);
  ~AdaptiveScheduler() override;  // waits for a replay in progress

  void Submit(const Request& request) override;
  int64_t queued() const override { return inner_.queued(); }
  void Withdraw(RequestId id, ModelId model) override { inner_.Withdraw(id, model); }
  void OnBatchDone(GpuId gpu) override { inner_.OnBatchDone(gpu); }
  void OnRequestsWithdrawn(GpuId gpu, Time exec_at, int remaining) override {
    inner_.OnRequestsWithdrawn(gpu, exec_at, remaining);
  }
  absl::Status SetGpuUp(GpuId gpu, bool up, Time free_at) override { return inner_.SetGpuUp(gpu, up, free_at); }
  void SetDelayPlan(const DelayPlan& plan) override { inner_.SetDelayPlan(plan); }
  std::vector<std::string> Choices() const override;

  // The name of the way sub-cluster `rank` makes its candidates now, and how
  // many times any sub-cluster has switched.
  std::string_view choice(int rank) const { return AdaptiveChoices()[ranks_[rank].choice].name; }
  int64_t switches() const { return switches_; }

  // Waits for replays in progress and acts on their choices (for tests: an
  // owner on a real clock need not).
  void AwaitReplays();

 private:
  // Forwards to the owner's listener, counting each model's requests
  // dropped or planned to be answered past their deadlines.
  class LiveCount final : public SchedulerListener {
   public:
    LiveCount(SchedulerListener* owner, size_t models) : owner_(owner), bad_(models) {}
    void set_plan(const DelayPlan* plan) { plan_ = plan; }
    void OnDispatch(Batch batch) override;
    void OnDrop(const Request& request, DropReason reason) override;
    int64_t bad(ModelId m) const { return bad_[m]; }

   private:
    SchedulerListener* const owner_;
    const DelayPlan* plan_ = nullptr;
    std::vector<int64_t> bad_;
  };
  static constexpr int kStuckEpochs = 30;

  struct RankLog {
    std::deque<Request> arrivals;  // the last window's, in arrival order
    int64_t window_size = 0;       // of the window replayed last
    int64_t live_arrivals = 0;     // since the last choice
    int64_t live_bad_before = 0;   // LiveCount's bad of the rank's models at the last choice
    int64_t live_bad = 0, live_window = 0;  // of the epoch before the last choice: bad, arrivals
    // Per choice: the times it was found stuck, and until when it sits out.
    std::vector<int> strikes = std::vector<int>(AdaptiveChoices().size());
    std::vector<Time> benched_until = std::vector<Time>(AdaptiveChoices().size());
    Time next_choice = 0;
    int choice = 0;
    std::deque<std::vector<ReplayScore>> scores;  // the last adaptive_memory epochs', per choice
    std::future<std::vector<ReplayScore>> pending;  // adaptive_replay_thread: the replays in progress
  };

  // Replays rank r's window (inline or on the replay thread) with the
  // inner scheduler's delay plan and GPUs down.
  void Choose(int r);
  // Records an epoch's scores; the choice with the best sum over the
  // remembered epochs makes r's candidates.
  void Apply(int r, std::vector<ReplayScore> scores);

  const std::shared_ptr<const ClusterSpec> spec_;
  const SchedulerOptions options_;
  Clock* const clock_;
  LiveCount live_;
  CandidateScheduler inner_;
  std::vector<RankLog> ranks_;
  int64_t switches_ = 0;
};

}  // namespace tutti

#endif  // TUTTI_SCHEDULER_ADAPTIVE_SCHEDULER_H_
