// RemoteEngine: the frontend process's InferenceEngine in distributed mode.
// It keeps each request's input and hands only its metadata (id, model,
// deadline) to the leading scheduler on one stream; the scheduler answers
// with plan parts, and the engine sends each part's inputs to the backend
// it names, on one stream per backend, which answers with the outputs.
//
// Every accepted request is answered exactly once:
//   - with its output, from the backend that ran it;
//   - DeadlineExceeded, when the scheduler dropped it;
//   - Unavailable (retryable) when no scheduler leads, or the leader went
//     away (or changed, or fell silent) before planning it;
//   - DeadlineExceeded, as a last resort, if nothing came `orphan_grace`
//     after its deadline (its backend and the scheduler failed together).
//
// Batch stages (serving/batch_stage.h), per model when Options::stages
// names one: the engine hosts them as the serving core does, over this
// frontend's part of each batch — shown to the stage when it is planned and
// when its outputs come back; the stage's internal requests (ParM's parity
// queries) go to the leader like any other. A part whose outputs never come
// (its backend died, its items answered otherwise) is reported to its stage
// as failed once none of its items waits any more.
//
// Time: deadlines travel in the leader's clock, converted with the pings on
// the leader stream (clock_sync.h); a request that arrives before the first
// pong waits for it. Delays: the engine reports how long answers take to be
// written (the response delay) to the leader, whose plan it shows in
// Delays().
//
// Thread-safety: every method may be called from any thread.
#ifndef TUTTI_DISTRIBUTED_REMOTE_ENGINE_H_
#define TUTTI_DISTRIBUTED_REMOTE_ENGINE_H_

#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "tutti/autoscale/task_autoscaler.h"
#include "tutti/core/clock.h"
#include "tutti/distributed/clock_sync.h"
#include "tutti/distributed/delay_report_proto.h"
#include "tutti/distributed/links.h"
#include "tutti/scheduler/cluster_spec.h"
#include "tutti/serving/batch_stage.h"
#include "tutti/serving/inference_engine.h"
#include "tutti/serving/request_table.h"
#include "tutti/serving/staged_batches.h"

namespace tutti {

class RemoteEngine final : public InferenceEngine {
 public:
  struct Options {
    std::string name;                      // unique among the cluster's frontends
    Duration orphan_grace = 2 * kSecond;
    Duration ping_every = 100 * kMillisecond;  // pings sync the clock with the leader's
    // A leader stream that has brought nothing (not even a pong) for this
    // long is given up: its unplanned requests are answered Unavailable and
    // a new stream is opened at once. A fresh connection gets through as
    // soon as a partition heals, where the old one would wait for its
    // transport's backed-off resends. 0: never.
    Duration silent_after = 500 * kMillisecond;
    // How long a request's metadata may wait for others to share its
    // message to the leader: at most this, and at most a tenth of the time
    // it has left; none after a hold with no message (light load). 0: each
    // goes at once.
    Duration metadata_hold = 0;
    // How often requests that carry a cancel flag are looked at until their
    // batch is planned: one whose client no longer waits is answered
    // Cancelled then, and the leader is told to leave it out.
    Duration withdraw_every = kMillisecond;
    // At most one per model (e.g. MakeParmStages, stages/parm_stage.h).
    std::vector<std::pair<ModelId, std::shared_ptr<BatchStage>>> stages;
    // Model-less: the leader's routing state of the task's variants and the
    // cost paid so far, as each comes (with the delay reports). Runs under
    // the engine's lock: it must not call the engine. Null: ignored.
    std::function<void(TaskRoutingState state, double cost)> on_task_state;
  };
  // `spec` gives the models' objectives (the layout every process shares);
  // `shapes` their sizes. Streams are opened through `connector`. `clock`
  // and `connector` must outlive the engine.
  RemoteEngine(ClusterSpec spec, std::vector<ModelShape> shapes, Options options, Clock* clock,
               Connector* connector);
  // REQUIRES: idle (WaitIdle()). Closes the streams and waits for their
  // handlers' last call, so their transport must still be running.
  ~RemoteEngine() override;

  // The leading scheduler's address; "" while none leads. Requests a
  // previous leader had not planned are answered with a retryable error.
  void SetLeader(const std::string& address);
  std::string leader() const;
  // Model-less: asks the leader to load `variant` (its index in the task's
  // variants), which this frontend's router picked while Inactive. Dropped
  // while no leader is followed.
  void AskToLoad(int variant);

  // InferenceEngine.
  absl::Status Submit(ModelId model, std::vector<float> input, Duration objective, InferenceCallback done) override;
  // A stateful model's request: its sequence goes with its inputs to the
  // backend (the sequence's order is its SequenceEngine's, in front).
  absl::Status SubmitWith(ModelId model, const RequestContext& context, std::vector<float> input, Duration objective,
                                InferenceCallback done) override;
  void StopAccepting() override;
  void WaitIdle() override;
  int64_t in_flight() const override;
  std::vector<ModelCounters> Counters() const override;
  std::vector<double> BusyFractions() const override { return {}; }
  Time Now() const override { return clock_->Now(); }
  void OnAnswerWritten(const WrittenAnswer& answer) override;
  DelayReport Delays() const override;

 private:
  enum class State { kWaiting, kSubmitted, kPlanned };
  // What the engine adds to a request (its arrival and deadline are on
  // this clock).
  struct Progress {
    State state = State::kWaiting;
    Time batch_deadline = 0;  // once planned: its batch's earliest deadline, this clock
    uint64_t staged = 0;      // its staged part (staged_), if its model has a stage
    int level = 0;            // its priority level (RequestContext::level)
    Time delay_at = kInfiniteFuture;  // RequestContext::delay_at, this clock
    TraceContext trace;       // its span, when traced: the scheduler's and the backend's go under it
  };
  using Table = RequestTable<Progress>;
  using Pending = Table::Entry;
  void Connect();  // REQUIRES: mu_ held; opens the stream to leader_
  void OnLeaderMessage(uint64_t epoch, internal::FrontendDown& down);
  void OnLeaderGone(uint64_t epoch);
  void OnOutputs(internal::FeedUp& up);
  // REQUIRES: mu_ held.
  void SubmitLocked(const std::vector<uint64_t>& ids);
  // Answers request `id` Cancelled into `answers` if it is withdrawn by
  // `now` (Entry::Withdrawn) and its model's stage does not plan with it,
  // as InferenceCore withdraws; returns whether it did.
  bool WithdrawnLocked(uint64_t id, Time now, Answers* answers);
  // Answers the requests of cancellable_ withdrawn by now and tells the
  // leader of those it holds; looks again after withdraw_every while any
  // remain unplanned.
  void SweepWithdrawn();
  // Metadata and samples for the leader wait (held_, held_samples_) until
  // flush_by_, or go earlier with the first event past 3/4 of their wait
  // (which spares the timer's wake-up when events are frequent).
  void HoldLocked(uint64_t id, Time now);
  void HoldSamplesLocked(const std::vector<ResponseTracker::Sample>& samples, Time now);
  void HeldUntilLocked(Time now, Time by);  // something was just held, to go by `by`
  void PiggybackLocked(Time now);
  void FlushHeldLocked();
  void PlanLocked(const internal::PlanPart& part, Answers* answers);
  // Shows a planned part of a staged model to its stage.
  void StageLocked(uint64_t batch, ModelId model, std::vector<uint64_t> ids, std::vector<float> inputs);
  // Shows a staged part's outputs to its stage; returns, per item, whether
  // to answer it with its original.
  std::vector<bool> ExecutedLocked(uint64_t staged, const absl::Status& status, const internal::Outputs* outputs);
  // Runs a stage callback under mu_ and gives what it answered.
  void RunStaged(const std::function<void()>& fn);
  void FailUnplannedLocked(const absl::Status& why, Answers* answers);
  FeedLink& FeedToLocked(const std::string& backend);
  InferenceOutcome ErrorOutcomeLocked(uint64_t id, absl::Status status);
  void Run(Answers answers);
  void Tick();  // pings the leader, sweeps orphans

  const ClusterSpec spec_;
  const std::vector<ModelShape> shapes_;
  const Options options_;
  const uint64_t source_;  // options_.name hashed: the backends key requests by it and their ids
  const uint64_t incarnation_;  // random: this engine's streams to the leader, against another run's
  Clock* const clock_;
  Connector* const connector_;
  StreamTracker streams_;

  mutable std::mutex mu_;
  Table table_ ABSL_GUARDED_BY(mu_);  // until answered
  std::string leader_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<FrontendLink> leader_link_ ABSL_GUARDED_BY(mu_);  // null: none
  uint64_t epoch_ ABSL_GUARDED_BY(mu_) = 0;  // +1 per leader stream
  ClockSync sync_ ABSL_GUARDED_BY(mu_);  // to the leader
  absl::flat_hash_map<std::string, std::shared_ptr<FeedLink>> feeds_ ABSL_GUARDED_BY(mu_);  // by backend
  DelayReport report_ ABSL_GUARDED_BY(mu_);
  ResponseTracker answers_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  Time reconnect_at_ ABSL_GUARDED_BY(mu_) = 0;  // leader stream broken
  Time heard_at_ ABSL_GUARDED_BY(mu_) = 0;       // the leader stream's last message, or its opening
  TimerId tick_timer_ ABSL_GUARDED_BY(mu_) = kNoTimer;
  std::vector<uint64_t> held_ ABSL_GUARDED_BY(mu_);
  std::vector<ResponseTracker::Sample> held_samples_ ABSL_GUARDED_BY(mu_);
  Time held_since_ ABSL_GUARDED_BY(mu_) = 0;   // when the oldest of held_ and held_samples_ came
  Time flush_by_ ABSL_GUARDED_BY(mu_) = kInfiniteFuture;  // when they must go; kInfiniteFuture: nothing held
  Time submitted_at_ ABSL_GUARDED_BY(mu_) = std::numeric_limits<Time>::min();  // the last flush of held_ (none yet)
  TimerId hold_timer_ ABSL_GUARDED_BY(mu_) = kNoTimer;
  std::vector<uint64_t> cancellable_ ABSL_GUARDED_BY(mu_);  // unplanned requests with a cancel flag
  TimerId withdraw_timer_ ABSL_GUARDED_BY(mu_) = kNoTimer;
  Time hold_timer_at_ ABSL_GUARDED_BY(mu_) = 0;  // hold_timer_'s time (a flush_by_ since lowered re-arms it)

  std::vector<std::shared_ptr<BatchStage>> stages_;  // per model; null: none
  std::unique_ptr<StagedBatches<Progress>> staged_ ABSL_GUARDED_BY(mu_);  // the stages' host
  absl::flat_hash_map<uint64_t, uint64_t> staged_of_batch_ ABSL_GUARDED_BY(mu_);  // leader's batch id → staged_
  absl::flat_hash_set<TimerId> stage_timers_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tutti

#endif  // TUTTI_DISTRIBUTED_REMOTE_ENGINE_H_
