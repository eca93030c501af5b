// InferenceCore: the in-process data plane that the frontends (HTTP, gRPC)
// call. It keeps each request's input, hands only metadata to the scheduler
// (the same Scheduler object the simulator runs), sends dispatched batches to
// executors — one per GPU of the cluster — and answers every accepted
// request exactly once: with its output (possibly late), or with an explicit
// error (DeadlineExceeded when the scheduler drops it because its objective
// cannot be met, or the executor's error).
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

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "tutti/core/clock.h"
#include "tutti/executors/executor.h"
#include "tutti/scheduler/scheduler.h"

namespace tutti {

struct InferenceOutcome {
  absl::Status status;        // OK, DeadlineExceeded (dropped), or an executor error
  std::vector<float> output;  // the model's output elements, when OK
  bool emulated = false;      // produced by an emulated executor
  bool late = false;          // finished after its deadline
  Time arrival = 0;
  Time deadline = 0;
  Time started = 0;           // its batch started executing
  Time finished = 0;
  int batch_size = 0;
};
using InferenceCallback = std::function<void(InferenceOutcome)>;

// Per-model counts of how accepted requests ended.
struct ModelCounters {
  int64_t success = 0;  // on time
  int64_t late = 0;     // answered, after the deadline
  int64_t dropped = 0;  // objective could not be met
  int64_t error = 0;    // executor failure
  int64_t batches = 0;
  int64_t batched_requests = 0;
};

class InferenceCore {
 public:
  struct ModelShape {
    int64_t input_elements = 0;   // FP32 values per item
    int64_t output_elements = 0;
  };
  struct Options {
    std::string policy = "deferred";
    SchedulerOptions scheduler;
  };

  // `shapes[m]` describes cluster model m; `executors[g]` runs GPU g and
  // holds the models of g's sub-cluster in that sub-cluster's order
  // (ExecBatch::model is a model's position there). `clock` must outlive
  // the core.
  // Errors: an invalid spec or policy, or counts that do not match.
  static absl::StatusOr<std::unique_ptr<InferenceCore>> Create(
      ClusterSpec spec, std::vector<ModelShape> shapes,
      std::vector<std::unique_ptr<Executor>> executors, const Options& options, Clock* clock);
  ~InferenceCore();

  // Accepts one request for `model` with `input` (input_elements values),
  // due `objective` after now (0: the model's SLO). Returns an error — and
  // never calls `done` — for an unknown model, a wrong input size, or after
  // StopAccepting(). Otherwise `done` is called exactly once.
  absl::Status Submit(ModelId model, std::vector<float> input, Duration objective,
                      InferenceCallback done);

  // New requests are refused from now on; accepted ones still complete.
  void StopAccepting();
  // Blocks until every accepted request has been answered (real clocks only).
  void WaitIdle();

  // REQUIRES for destruction: no request in flight (WaitIdle() with a real
  // clock), and the clock outlives the core. Scheduler timers that are still
  // pending become no-ops.

  int64_t in_flight() const;
  std::vector<ModelCounters> Counters() const;
  // Per executor: the fraction of time since Create() that it spent running
  // batches (finished ones).
  std::vector<double> BusyFractions() const;
  const ClusterSpec& spec() const { return spec_; }

 private:
  class LockedClock;
  class Listener;
  // The lock and an open flag, shared with timer callbacks so that a timer
  // firing during destruction finds the gate closed instead of a dead core.
  struct Gate {
    std::mutex mu;
    std::condition_variable cv;
    bool open = true;
    int flushing = 0;  // timer callbacks between their locked part and Flush()
  };
  struct Pending {
    ModelId model;
    std::vector<float> input;
    InferenceCallback done;
    Time arrival;
    Time deadline;
  };

  InferenceCore(ClusterSpec spec, std::vector<ModelShape> shapes,
                std::vector<std::unique_ptr<Executor>> executors, Clock* clock);
  // Runs the work queued while the lock was held; call without the lock.
  void Flush();
  void OnDispatch(Batch batch);
  void OnDrop(const Request& request);
  void Answer(std::vector<std::pair<InferenceCallback, InferenceOutcome>> answers, int64_t count);

  const ClusterSpec spec_;
  const std::vector<ModelShape> shapes_;
  std::vector<int> local_index_;  // model → its position in its sub-cluster
  std::vector<std::unique_ptr<Executor>> executors_;
  Clock* const clock_;
  std::unique_ptr<LockedClock> locked_clock_;
  std::unique_ptr<Listener> listener_;

  const std::shared_ptr<Gate> gate_;
  std::mutex& mu_;
  std::condition_variable idle_;
  std::unique_ptr<Scheduler> scheduler_;                // GUARDED_BY(mu_)
  absl::flat_hash_map<RequestId, Pending> pending_;     // GUARDED_BY(mu_)
  std::vector<std::function<void()>> outbox_;           // GUARDED_BY(mu_)
  std::vector<ModelCounters> counters_;                 // GUARDED_BY(mu_)
  std::vector<Duration> busy_;                          // GUARDED_BY(mu_), per executor
  const Time created_;
  RequestId next_id_ = 1;                               // GUARDED_BY(mu_)
  int64_t in_flight_ = 0;                               // GUARDED_BY(mu_)
  bool accepting_ = true;                               // GUARDED_BY(mu_)
  bool flushing_ = false;                               // GUARDED_BY(mu_)
};

}  // namespace tutti

#endif  // TUTTI_SERVING_INFERENCE_CORE_H_
