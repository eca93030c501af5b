// BatchStage: a per-model transformation off the serving core's loop. A
// stage sees each batch of its model as it is dispatched and as it comes
// back, and may answer the batch's requests itself, submit internal
// requests to any model, and set timers. ParM (stages/parm_stage.h) is one:
// it encodes parity queries from dispatched batches and answers requests of
// slow or failed batches with reconstructions. Both engines host stages
// through one StagedBatches (serving/staged_batches.h) and know nothing of
// what they do.
//
// Contract (for the host and for every stage):
// - Threading: the host calls a stage's methods, and every callback the
//   stage gave to its StageHost, one at a time under the host's
//   serialization, so a stage needs no lock. A stage must not block in them
//   (no I/O, no waiting for other requests); what it computes there (e.g.
//   encoding k inputs) is on the serving path, so keep it short.
// - Ownership: the host owns its stages. The inputs and the result a call
//   is given are borrowed for that call only.
// - Ordering: OnDispatch of a batch comes before its OnExecuted; batches are
//   dispatched in the scheduler's order and come back in any order. No call
//   a stage makes to its StageHost calls the stage back before it returns;
//   the answers it gives reach their clients after it returns.
// - Answers: every request is answered exactly once, either by the host
//   with its batch's original output (where OnExecuted says so) or by the
//   stage through StageHost::Answer (an output marked `reconstructed`, or an
//   error). A stage that keeps an item from the host must answer it later.
#ifndef TUTTI_SERVING_BATCH_STAGE_H_
#define TUTTI_SERVING_BATCH_STAGE_H_

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/types/span.h"
#include "tutti/core/time.h"
#include "tutti/executors/executor.h"
#include "tutti/serving/inference_engine.h"

namespace tutti {

// What a stage may ask of its host. Every method is called from a stage's
// own calls or callbacks only (under the host's serialization).
class StageHost {
 public:
  virtual ~StageHost() = default;
  // Submits an internal request of `model` due at `deadline`: scheduled like
  // any other, counted in `model`'s counters, answered to nobody but `done`
  // (which runs under the host's serialization).
  virtual void SubmitInternal(ModelId model, std::vector<float> input, Time deadline,
                              std::function<void(InferenceOutcome)> done) = 0;
  // Answers item `position` of batch `batch` (an id OnDispatch gave) with
  // `outcome`: an output (`reconstructed` says how it was made) or an error
  // status. The host adds the request's own fields (arrival, deadline, batch
  // size, lateness). REQUIRES: the stage kept the item (OnExecuted returned
  // false for it, or has not been called yet) and answers it once.
  virtual void Answer(uint64_t batch, int position, InferenceOutcome outcome) = 0;
  // Runs `fn` after `delay`, under the host's serialization.
  virtual void ScheduleAfter(Duration delay, std::function<void()> fn) = 0;
  virtual Time Now() const = 0;
};

// What a host adds to a stage's answer `out` for an item that arrived at
// `arrival`, due at `deadline`, in a batch of `batch_size`: the item's own
// fields and, for an output, whether it is late.
inline void CompleteStageAnswer(Time arrival, Time deadline, int batch_size, InferenceOutcome* out) {
  out->arrival = arrival;
  out->deadline = deadline;
  out->batch_size = batch_size;
  if (out->status.ok()) out->late = out->finished > out->deadline;
}

class BatchStage {
 public:
  struct Dispatched {
    uint64_t batch = 0;            // unique within the host
    int size = 0;                  // items
    absl::Span<const float> inputs;  // size × the model's input elements
    Time earliest_deadline = 0;    // of its items
  };
  virtual ~BatchStage() = default;
  virtual void OnDispatch(const Dispatched& batch, StageHost& host) = 0;
  // The batch of `size` items came back with `result` (its outputs when OK,
  // already checked for size). Returns `size` flags: whether the host
  // answers the item with its original output (or the batch's error); the
  // stage answers the others.
  virtual std::vector<bool> OnExecuted(uint64_t batch, int size, const ExecResult& result, StageHost& host) = 0;
  // Counts of the stage's own events by name (for /metrics).
  virtual std::vector<std::pair<std::string, int64_t>> EventCounts() const = 0;
};

}  // namespace tutti

#endif  // TUTTI_SERVING_BATCH_STAGE_H_
