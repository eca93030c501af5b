// Executor: one execution slot — a GPU, an emulated GPU or a CPU worker —
// that runs batches one at a time, in the order it receives them.
//
// The scheduler decides which executor runs which batch and when it
// should start (`start_at`: its decision plus the dispatch delay it planned
// for the hand-off, a high percentile). How an executor honours that is its
// kind's contract:
//   emulated  starts a batch at its start_at or when the previous batch
//             finishes, whichever is later: the simulator's GPUs, whose
//             timing the emulated figures are compared with;
//   torch     starts it as soon as it has it and the previous one finished:
//             the batch is formed at the decision, so waiting for start_at
//             would only add the plan's margin (in one process the hand-off
//             takes a µs, the planned p99.9 50–250 µs) and a sleep's
//             wake-up to every answer.
#ifndef TUTTI_EXECUTORS_EXECUTOR_H_
#define TUTTI_EXECUTORS_EXECUTOR_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "tutti/core/time.h"
#include "tutti/core/ids.h"

namespace tutti {

struct ExecBatch {
  int model = 0;             // index of the model among those the executor holds
  int size = 0;              // items in the batch
  std::vector<float> input;  // size × the model's input elements, FP32
  Time start_at = 0;         // the planned start (see above)
  // Per item, for a stateful model's batch (the sequence each item belongs
  // to); empty otherwise.
  std::vector<SequenceRef> sequences;
  // A compute-then-update model's own state, which every item reads
  // (ModelConfig::model_state_shape); empty otherwise.
  std::vector<float> state;
  // Per item, optional: a key of its request unique across the cluster
  // (distributed mode: the frontend's and the request's). A replicated slot
  // that took over answers a request it already ran (before the failover)
  // with that run's output instead of running it again.
  std::vector<uint64_t> tags;
};

// Timings, for the delay model (delays/delay_model.h): `received` when
// Run() was called, `ready` when the batch could have started (received, the
// previous batch finished, and for a kind that waits for it its start_at
// come), `started` when it did.
struct ExecResult {
  absl::Status status;        // OK, or why the batch failed
  std::vector<float> output;  // size × the model's output elements
  Time received = 0;
  Time ready = 0;
  Time started = 0;
  Time finished = 0;
  bool emulated = false;      // outputs are placeholders, not a model's
  // Per item, when some items failed alone (a stateful item whose state is
  // lost): OK items have their outputs, the others this error. Empty: every
  // item ended as `status` says.
  std::vector<absl::Status> item_status;
  std::vector<float> state;  // the state the batch's update made, for a batch given one
  // A replicated stateful batch (replication/replicated_executor.h): when
  // its outputs were released, its state handed to the backup as the
  // replication mode asks (HAMS); 0: not such a batch.
  Time released = 0;
};

// A load the scheduler planned for this executor (scheduler/request.h's
// Load, with the executor's model indices): at `start` the weights of
// `evicted` are freed and `model`'s copied in, ready at start + duration.
struct ExecLoad {
  int model = 0;
  Time start = 0;
  Duration duration = 0;
  std::vector<int> evicted;
};

// Thread-safety: Run() and Load() may be called from any thread. `done` is called
// exactly once per batch, on the executor's own thread (or timer thread),
// and must not block for long.
class Executor {
 public:
  using DoneFn = std::function<void(ExecResult)>;
  virtual ~Executor() = default;

  // Queues `batch`; never blocks. REQUIRES: batch.model is held by this
  // executor and batch.input has size × input elements values.
  virtual void Run(ExecBatch batch, DoneFn done) = 0;

  // Only under a memory budget (ClusterSpec::memory), before any batch
  // that relies on it. An executor without a budget holds every model
  // and ignores loads (the default).
  virtual void Load(const ExecLoad& load) {}

  // "emulated" or "torch".
  virtual std::string kind() const = 0;
};

}  // namespace tutti

#endif  // TUTTI_EXECUTORS_EXECUTOR_H_
