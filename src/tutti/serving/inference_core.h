// InferenceCore: the in-process data plane that the frontends (HTTP, gRPC)
// call. It keeps each request's input, hands only metadata to the scheduler
// (the same Scheduler object the simulator runs), sends dispatched batches to
// executors — one per GPU of the cluster — and answers every accepted
// request exactly once: with its output (possibly late), or with an explicit
// error (DeadlineExceeded when the scheduler drops it because its objective
// cannot be met, or the executor's error).
//
// Batch stages (serving/batch_stage.h), per model when Options::stages
// names one: the core shows the stage each dispatched and each executed batch
// of its model, submits the internal requests it asks for to the same
// scheduler (ParM's parity queries, stages/parm_stage.h), and lets it answer
// the items it keeps. Internal requests are answered to no one but their
// stage. Stage calls run under the core's lock.
//
// Delays (delays/delay_model.h): the core measures the hand-off of each
// batch to its executor (dispatch), how each batch ran against its profile
// (compute), how late the scheduler's timers fire, and — told by the
// frontend — how long answers take to be written (response); every refresh
// its scheduler gets the plan these give.
//
// Thread-safety: Submit() may be called from any thread. The scheduler is
// not thread-safe, so the core gives it a clock whose timer callbacks run
// under the core's lock, serialized with Submit(). Executors and user
// callbacks are always called outside the lock. A callback may run on any
// thread — the caller's, the clock's or an executor's — possibly before
// Submit() returns.
#ifndef TUTTI_SERVING_INFERENCE_CORE_H_
#define TUTTI_SERVING_INFERENCE_CORE_H_

#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "tutti/core/clock.h"
#include "tutti/core/serialized_clock.h"
#include "tutti/executors/executor.h"
#include "tutti/serving/batch_stage.h"
#include "tutti/scheduler/scheduler.h"
#include "tutti/serving/inference_engine.h"
#include "tutti/serving/request_table.h"
#include "tutti/serving/staged_batches.h"

namespace tutti {

class InferenceCore final : public InferenceEngine {
 public:
  using ModelShape = tutti::ModelShape;
  struct Options {
    std::string policy = "deferred";
    SchedulerOptions scheduler;
    // How the scheduler's delays are measured; the spec's network delays
    // and scheduler.frontrun_slack are their floors.
    DelayModelOptions delays;
    // At most one per model (e.g. MakeParmStages, stages/parm_stage.h).
    std::vector<std::pair<ModelId, std::shared_ptr<BatchStage>>> stages;
  };

  // `shapes[m]` describes cluster model m; `executors[g]` runs GPU g and
  // holds the models of g's sub-cluster in that sub-cluster's order
  // (ExecBatch::model is a model's position there). `clock` must outlive
  // the core.
  // Errors: an invalid spec or policy, counts that do not match, or a stage
  // for an unknown model or a second one for a model.
  static absl::StatusOr<std::unique_ptr<InferenceCore>> Create(
      ClusterSpec spec, std::vector<ModelShape> shapes,
      std::vector<std::unique_ptr<Executor>> executors, const Options& options, Clock* clock);
  ~InferenceCore() override;

  // InferenceEngine. WaitIdle() also waits for every batch to come back
  // from its executor (real clocks only).
  absl::Status Submit(ModelId model, std::vector<float> input, Duration objective,
                      InferenceCallback done) override;
  // Passes the sequence with the request to the executor that runs it
  // (ExecBatch::sequences); sequences are checked before (SequenceEngine).
  // A request whose cancel flag is set when its batch is dispatched is
  // answered Cancelled and left out of the batch, unless it is of a
  // sequence (whose state must advance) or of a model with a batch stage
  // (whose batches it plans).
  absl::Status SubmitWith(ModelId model, const RequestContext& context, std::vector<float> input, Duration objective,
                                InferenceCallback done) override;

  void StopAccepting() override;
  void WaitIdle() override;

  // REQUIRES for destruction: no request in flight (WaitIdle() with a real
  // clock), and the clock outlives the core. Scheduler timers that are still
  // pending become no-ops.

  int64_t in_flight() const override;
  int64_t WeightsLoads() const override;
  std::vector<ModelCounters> Counters() const override;
  // Per executor: the fraction of time since Create() that it spent running
  // batches (finished ones).
  std::vector<double> BusyFractions() const override;
  std::vector<Duration> BusyTimes() const override;
  // Membership (autoscaling): an executor that is down is given no new
  // batches; those it holds finish and are answered. Every executor starts
  // up. Errors: the policy plans executors ahead (`nexus`).
  absl::Status SetExecutorUp(GpuId executor, bool up);
  std::vector<BatchTrace> RecentBatches(Time since) const override;
  Time Now() const override { return clock_->Now(); }
  void OnAnswerWritten(const WrittenAnswer& answer) override;
  DelayReport Delays() const override;
  const ClusterSpec& spec() const { return spec_; }

 private:
  // A request leaves flight when both hold: it is answered (by its batch or
  // its stage) and its batch came back.
  struct NoExtra {};
  using Table = RequestTable<NoExtra>;
  using Pending = Table::Entry;
  // A batch handed to its executor.
  struct Dispatched {
    BatchTrace trace;               // as planned
    uint64_t staged = 0;            // its id in staged_; 0: its model has no stage
    std::vector<uint64_t> ids;      // its requests, waiting in table_ until answered
    Time earliest_deadline = 0;     // of its requests
  };
  // A stage's request for an internal request, submitted by Flush() (a
  // scheduler listener must not call back into the scheduler).
  struct InternalRequest {
    ModelId model;
    std::vector<float> input;
    Time deadline;
    std::function<void(InferenceOutcome)> done;  // under mu_
  };

  InferenceCore(ClusterSpec spec, std::vector<ModelShape> shapes,
                std::vector<std::unique_ptr<Executor>> executors, Clock* clock);
  // Runs the work queued while the lock was held; call without the lock.
  void Flush();
  void OnDispatch(Batch batch);
  void OnDrop(const Request& request);
  void OnLoad(const Load& load);
  // Registers a request and hands it to the scheduler. REQUIRES: mu_ held.
  void SubmitLocked(ModelId model, std::vector<float> input, Time deadline, InferenceCallback done,
                    const RequestContext& context = {});
  void OnExecuted(const Dispatched& batch, ExecResult result);
  // Delivers what stages answered. REQUIRES: mu_ held.
  void QueueStageAnswers();
  void Answer(Answers answers, int64_t count);

  const ClusterSpec spec_;
  const std::vector<ModelShape> shapes_;
  std::vector<int> local_index_;  // model → its position in its sub-cluster
  std::vector<std::unique_ptr<Executor>> executors_;
  Clock* const clock_;
  std::unique_ptr<DelayModel> delays_;  // set by Create(), before the scheduler
  // The scheduler's clock: its timers run under mu_, then Flush().
  const std::unique_ptr<SerializedClock> locked_clock_;
  std::unique_ptr<CallbackListener> listener_;

  std::mutex& mu_;
  std::unique_ptr<Scheduler> scheduler_ ABSL_GUARDED_BY(mu_);
  Table table_ ABSL_GUARDED_BY(mu_);  // until answered
  std::vector<std::function<void()>> outbox_ ABSL_GUARDED_BY(mu_);
  std::vector<Duration> busy_ ABSL_GUARDED_BY(mu_);  // per executor
  int64_t loads_ ABSL_GUARDED_BY(mu_) = 0;
  // Under a memory budget, per model: whether each executor holds it
  // (empty without one).
  std::vector<std::vector<bool>> held_ ABSL_GUARDED_BY(mu_);
  std::deque<BatchTrace> traces_ ABSL_GUARDED_BY(mu_);  // the last kTraces batches
  static constexpr size_t kTraces = 4096;
  std::vector<std::shared_ptr<BatchStage>> stages_;  // per model; null: none
  std::unique_ptr<StagedBatches<NoExtra>> staged_ ABSL_GUARDED_BY(mu_);  // the stages' host
  std::vector<InternalRequest> internal_ ABSL_GUARDED_BY(mu_);  // to submit in Flush()
  const Time created_;
  uint64_t next_batch_ ABSL_GUARDED_BY(mu_) = 1;
  std::mutex answers_mu_;
  ResponseTracker answers_ ABSL_GUARDED_BY(answers_mu_);
  bool flushing_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace tutti

#endif  // TUTTI_SERVING_INFERENCE_CORE_H_
