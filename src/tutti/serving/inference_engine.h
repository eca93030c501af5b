// InferenceEngine: what a frontend submits requests to and learns their
// outcomes from. Embedded mode's InferenceCore schedules and executes them in
// this process; distributed mode's RemoteEngine (distributed/) hands their
// metadata to the leading scheduler process and their inputs to the backends
// that ask for them. The HTTP and gRPC frontends see only this interface.
#ifndef TUTTI_SERVING_INFERENCE_ENGINE_H_
#define TUTTI_SERVING_INFERENCE_ENGINE_H_

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "tutti/core/cancel_flag.h"
#include "tutti/core/outcome_counts.h"
#include "tutti/core/time.h"
#include "tutti/delays/delay_model.h"
#include "tutti/delays/response_tracker.h"
#include "tutti/scheduler/cluster_spec.h"
#include "tutti/scheduler/request.h"
#include "tutti/tracing/trace_context.h"

namespace tutti {

struct InferenceOutcome {
  absl::Status status;        // OK, DeadlineExceeded (dropped), or an executor error
  std::vector<float> output;  // the model's output elements, when OK
  bool emulated = false;      // produced by an emulated executor
  bool late = false;          // finished after its deadline
  bool reconstructed = false; // rebuilt by ParM from a parity output
  Time arrival = 0;
  Time deadline = 0;
  Time started = 0;           // its batch started executing
  Time finished = 0;
  int batch_size = 0;
  // Its batch as the scheduler planned it: when it dispatched the batch,
  // the start it planned, and the executor (-1: it ran in no batch).
  Time dispatched = 0;
  Time planned_start = 0;
  int executor = -1;
  Time released = 0;  // a replicated stateful batch's outputs released (ExecResult::released); 0: none
  // Its batch, for the response delay (delays/response_tracker.h): the
  // engine's id (0: none, e.g. an error or a reconstruction), the answers
  // of it the engine hands out, and its earliest deadline.
  uint64_t batch_id = 0;
  int batch_answers = 0;
  Time batch_deadline = 0;

  // What the frontend reports once this answer is written.
  WrittenAnswer Written() const { return {batch_id, batch_answers, finished + (deadline - batch_deadline)}; }
};
using InferenceCallback = std::function<void(InferenceOutcome)>;

// One executed batch, as the scheduler planned it and as it ran (the
// console's timeline of an executor).
struct BatchTrace {
  int executor = 0;
  ModelId model = 0;
  int size = 0;
  Time decided = 0;        // the scheduler dispatched it
  Time planned_start = 0;  // the start it planned (Batch::exec_at)
  Time planned_end = 0;    // planned start + the profile's ℓ(size)
  Time started = 0;
  Time finished = 0;
  bool ok = true;          // the executor did not fail it
};

// Per-model counts of how accepted requests ended (OutcomeCounts; an
// error: the executor failed).
struct ModelCounters : OutcomeCounts {
  int64_t batches = 0;
  int64_t batched_requests = 0;
  int64_t reconstructed = 0;  // of good + late: answered by a ParM reconstruction
  // The model's batch stage's own events (serving/batch_stage.h), by name;
  // empty without a stage.
  std::vector<std::pair<std::string, int64_t>> stage_events;
  // A graph's steps (graphs/graph_engine.h), in run order; empty for a model.
  struct Step : OutcomeCounts {  // against its own deadline
    std::string model;
    double deadline_share = 0;  // the step is due at arrival + this × the objective
  };
  std::vector<Step> steps;
  // Under a memory budget (ClusterSpec::memory): the executors that hold
  // its weights now, loaded or loading, by index; absent without a budget,
  // where every executor of its group holds it.
  std::optional<std::vector<int>> loaded_on;
};

// What an engine's scheduler plans with, and the measurements behind it
// (delays/delay_model.h).
struct DelayReport {
  DelayModelOptions options;
  DelayEstimates estimates;  // over options.window, at options.quantile
  DelayPlan plan;            // what the scheduler plans with now
  std::array<DelayHistogram, kDelayKinds> histograms;  // every sample so far, by Delay
  std::vector<std::string> choices;  // `adaptive`: each sub-cluster's way now (Scheduler::Choices)
};

// What one item of a model takes and gives.
struct ModelShape {
  int64_t input_elements = 0;  // FP32 values per item
  int64_t output_elements = 0;
};

// Counts an ended request in `c`: OK is `late` or good, DeadlineExceeded
// dropped, Cancelled cancelled, anything else an error.
inline void CountOutcome(const absl::Status& status, bool late, OutcomeCounts* c) {
  if (status.ok()) {
    ++(late ? c->late : c->good);
  } else if (status.code() == absl::StatusCode::kDeadlineExceeded) {
    ++c->dropped;
  } else if (status.code() == absl::StatusCode::kCancelled) {
    ++c->cancelled;
  } else {
    ++c->error;
  }
}

// The checks an engine over `spec` makes before accepting a request: a
// known model, its input size (`shapes` by model id), a non-negative
// objective. NotFound or InvalidArgument naming what is wrong.
absl::Status CheckSubmission(const ClusterSpec& spec, const std::vector<ModelShape>& shapes, ModelId model,
                             size_t input_size, Duration objective);

// The answer to a request its scheduler dropped because its objective
// cannot be met (DeadlineExceeded, naming the model).
absl::Status DroppedError(const ClusterSpec& spec, ModelId model);

// A request's deadline: `objective` after `now`, or the model's SLO after
// it when `objective` is 0.
inline Time DeadlineOf(const ClusterSpec& spec, ModelId model, Time now, Duration objective) {
  return now + (objective > 0 ? objective : spec.models[model].slo);
}

// The answer to a request withdrawn by its CancelFlag.
absl::Status CancelledError(const ClusterSpec& spec, ModelId model);

// What a request carries besides its input (InferenceEngine::SubmitWith).
struct RequestContext {
  SequenceRef sequence;                     // id 0: none
  std::shared_ptr<const CancelFlag> cancel;  // null: it is never withdrawn
  int level = 0;                            // its priority level (Request::level)
  TraceContext trace;                       // its span, when traced (engines that trace record under it)
  Time delay_at = kInfiniteFuture;          // Request::delay_at (Triton's DELAY timeout action)
};

class Tracer;
// Records the spans of a request of `model` whose span is `parent`, as
// its outcome `out` tells its life: "queue" (arrival to its batch's start,
// with the dispatch the scheduler planned and the one it made) and, when
// it ran, "compute" (its batch). Nothing unless parent.recording(), nor
// for a refusal (no arrival, no batch). Called
// by whoever receives the outcome, outside the engine's locks.
void RecordRequestSpans(Tracer& tracer, const TraceContext& parent, const std::string& model,
                        const InferenceOutcome& out);
// A replicated stateful batch's hand-off, "replicate": from its
// computation's end to its outputs' release (the backup has what the
// replication mode asks). RecordRequestSpans records it when the outcome
// has one.
void RecordReplicateSpan(Tracer& tracer, const TraceContext& parent, Time computed, Time released);

// Thread-safety: every method may be called from any thread.
class InferenceEngine {
 public:
  virtual ~InferenceEngine() = default;

  // Accepts one request for `model` with `input` (the model's input element
  // count), due `objective` after now (0: the model's SLO). Returns an error —
  // and never calls `done` — for an unknown model, a wrong input size, after
  // StopAccepting(), or when the engine cannot take requests now
  // (Unavailable: retryable). Otherwise `done` is called exactly once, on any
  // thread, possibly before Submit() returns.
  virtual absl::Status Submit(ModelId model, std::vector<float> input, Duration objective,
                              InferenceCallback done) = 0;

  // Submit() with what else a request carries (RequestContext): a stateful
  // model's sequence (`sequence.id` != 0), which engines that keep
  // sequences check (serving/sequence_engine.h); and a cancel flag, which
  // engines that can withdraw a request check before it joins a batch. The
  // default passes a request with no sequence to Submit(), ignoring its
  // flag, and refuses one with a sequence.
  virtual absl::Status SubmitWith(ModelId model, const RequestContext& context, std::vector<float> input,
                                  Duration objective, InferenceCallback done);

  // New requests are refused from now on; accepted ones still complete.
  virtual void StopAccepting() = 0;
  // Blocks until every accepted request has been answered.
  virtual void WaitIdle() = 0;
  virtual int64_t in_flight() const = 0;

  // Per model: how accepted requests ended.
  virtual std::vector<ModelCounters> Counters() const = 0;
  // Per executor this engine runs: the fraction of time it spent running
  // batches; empty when the executors are elsewhere.
  virtual std::vector<double> BusyFractions() const = 0;
  // Per executor this engine runs: the time it spent running batches since
  // the engine started; empty when the executors are elsewhere.
  virtual std::vector<Duration> BusyTimes() const { return {}; }
  // Weights loads its scheduler planned (under a memory budget); 0 for
  // engines without one.
  virtual int64_t WeightsLoads() const { return 0; }
  // The last batches this engine's executors finished (up to a few
  // thousand), those finished after `since`, oldest first; empty when the
  // executors are elsewhere.
  virtual std::vector<BatchTrace> RecentBatches(Time since) const { return {}; }

  // The engine's clock: InferenceOutcome's instants are on it.
  virtual Time Now() const = 0;
  // The frontend wrote to its client an answer (InferenceOutcome::Written()
  // of each item of a request): the engine's delay model learns how long
  // answers take to leave, batch by batch (its response delay).
  virtual void OnAnswerWritten(const WrittenAnswer& answer) = 0;
  // What the scheduler plans with, and why.
  virtual DelayReport Delays() const = 0;
};

}  // namespace tutti

#endif  // TUTTI_SERVING_INFERENCE_ENGINE_H_
