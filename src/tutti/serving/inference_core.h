// InferenceCore: the in-process data plane that the frontends (HTTP, gRPC)
// call. It keeps each request's input, hands only metadata to the scheduler
// (the same Scheduler object the simulator runs), sends dispatched batches to
// executors — one per GPU of the cluster — and answers every accepted
// request exactly once: with its output (possibly late), or with an explicit
// error (DeadlineExceeded when the scheduler drops it because its objective
// cannot be met, or the executor's error).
//
// ParM coded serving (papers/parm.txt), per model when Options::coding names
// it: the core puts that model's dispatched batches into coding groups of k
// (coding/parity_groups.h), submits each group's parity queries to the same
// scheduler as requests of the parity model, and answers a request whose
// batch is slow (or failed) with a reconstruction, F_P(P) − Σ others, marked
// `reconstructed`, as soon as the other k−1 outputs and the parity output are
// in (or `reconstruct_delay` later, if the original has not come by then).
// The late original is then discarded; a parity output nobody needs is
// dropped. Parity requests are internal: they are not answered to anyone.
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

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "tutti/coding/parity_groups.h"
#include "tutti/core/clock.h"
#include "tutti/core/serialized_clock.h"
#include "tutti/executors/executor.h"
#include "tutti/scheduler/scheduler.h"
#include "tutti/serving/inference_engine.h"

namespace tutti {

class InferenceCore final : public InferenceEngine {
 public:
  using ModelShape = tutti::ModelShape;
  // ParM for one model: its batches are protected by `parity_model`, whose
  // queries `codec` encodes (input sizes must match both models').
  struct Coding {
    ModelId model = 0;
    ModelId parity_model = 0;
    ParityCodec codec;
    Duration reconstruct_delay = 0;  // wait this long for the original first
  };
  struct Options {
    std::string policy = "deferred";
    SchedulerOptions scheduler;
    // How the scheduler's delays are measured; the spec's network delays
    // and scheduler.frontrun_slack are their floors.
    DelayModelOptions delays;
    std::vector<Coding> coding;
  };

  // `shapes[m]` describes cluster model m; `executors[g]` runs GPU g and
  // holds the models of g's sub-cluster in that sub-cluster's order
  // (ExecBatch::model is a model's position there). `clock` must outlive
  // the core.
  // Errors: an invalid spec or policy, counts that do not match, or a coding
  // entry whose models are unknown, coded twice, or of the wrong sizes.
  static absl::StatusOr<std::unique_ptr<InferenceCore>> Create(
      ClusterSpec spec, std::vector<ModelShape> shapes,
      std::vector<std::unique_ptr<Executor>> executors, const Options& options, Clock* clock);
  ~InferenceCore() override;

  // InferenceEngine. WaitIdle() also waits for every batch to come back
  // from its executor (real clocks only).
  absl::Status Submit(ModelId model, std::vector<float> input, Duration objective,
                      InferenceCallback done) override;

  void StopAccepting() override;
  void WaitIdle() override;

  // REQUIRES for destruction: no request in flight (WaitIdle() with a real
  // clock), and the clock outlives the core. Scheduler timers that are still
  // pending become no-ops.

  int64_t in_flight() const override;
  std::vector<ModelCounters> Counters() const override;
  // Per executor: the fraction of time since Create() that it spent running
  // batches (finished ones).
  std::vector<double> BusyFractions() const override;
  Time Now() const override { return clock_->Now(); }
  void OnAnswerWritten(const WrittenAnswer& answer) override;
  DelayReport Delays() const override;
  const ClusterSpec& spec() const { return spec_; }

 private:
  struct Pending {
    ModelId model;
    std::vector<float> input;
    InferenceCallback done;
    Time arrival;
    Time deadline;
    // Coded models only: answered (by whichever came first) and executed
    // (its batch came back). The request leaves in_flight_ when both hold.
    bool answered = false;
    bool executed = false;
  };
  using Members = std::shared_ptr<std::vector<Pending>>;
  using Answers = std::vector<std::pair<InferenceCallback, InferenceOutcome>>;
  // A coded model's coding state.
  struct Coded {
    ModelId parity_model;
    ParityGroups groups;
    Duration reconstruct_delay;
    Time open_group_deadline;  // earliest deadline in the group being filled
    struct BatchInfo {
      Members members;
      absl::Status error;  // why the batch failed, once it has
    };
    absl::flat_hash_map<ParityGroups::BatchKey, BatchInfo> batches;
  };
  struct ParityQuery {
    ModelId deployed;
    ParityGroups::GroupId group;
    int position;
    std::vector<float> input;
    Time deadline;
  };

  InferenceCore(ClusterSpec spec, std::vector<ModelShape> shapes,
                std::vector<std::unique_ptr<Executor>> executors, Clock* clock);
  // Runs the work queued while the lock was held; call without the lock.
  void Flush();
  void OnDispatch(Batch batch);
  void OnDrop(const Request& request);
  // Registers a request and hands it to the scheduler. REQUIRES: mu_ held.
  void SubmitLocked(ModelId model, std::vector<float> input, Time deadline, InferenceCallback done);
  void OnExecuted(ModelId model, int gpu, Time decided, const Members& members, ParityGroups::BatchKey key,
                  ExecResult result);
  // Coded models (REQUIRES: mu_ held): acts on what a coding event made
  // possible, adding answers and the number of requests that left in_flight_.
  void OnParityOutcome(ModelId deployed, ParityGroups::GroupId group, int position, InferenceOutcome outcome);
  void HandleCodingEvents(ModelId model, ParityGroups::Events events, bool emulated, Answers* answers, int64_t* done);
  void AnswerReconstruction(ModelId model, const ParityGroups::Reconstruction& r, bool emulated, Answers* answers,
                            int64_t* done);
  void ForgetIfFinished(Coded& coded, ParityGroups::BatchKey key);
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
  std::condition_variable idle_;
  std::unique_ptr<Scheduler> scheduler_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<RequestId, Pending> pending_ ABSL_GUARDED_BY(mu_);
  std::vector<std::function<void()>> outbox_ ABSL_GUARDED_BY(mu_);
  std::vector<ModelCounters> counters_ ABSL_GUARDED_BY(mu_);
  std::vector<Duration> busy_ ABSL_GUARDED_BY(mu_);  // per executor
  std::vector<std::unique_ptr<Coded>> coded_ ABSL_GUARDED_BY(mu_);  // per model; null: not coded
  std::vector<ParityQuery> parity_queries_ ABSL_GUARDED_BY(mu_);  // to submit in Flush()
  const Time created_;
  RequestId next_id_ ABSL_GUARDED_BY(mu_) = 1;
  uint64_t next_batch_ ABSL_GUARDED_BY(mu_) = 1;
  std::mutex answers_mu_;
  ResponseTracker answers_ ABSL_GUARDED_BY(answers_mu_);
  int64_t in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  bool accepting_ ABSL_GUARDED_BY(mu_) = true;
  bool flushing_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace tutti

#endif  // TUTTI_SERVING_INFERENCE_CORE_H_
