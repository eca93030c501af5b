// Stateful serving (HAMS, DSN'20) measured on this CPU with a real
// stateful model: a builtin sequence model (gru_rows) on one torch executor
// whose states a backup replicates in a given mode (none, nspb, remus,
// checkpoint; replication/replicated_executor.h), served through the
// server's own road (ResolveServerConfig, LayOutCluster, the group's
// ReplicatedExecutor, InferenceCore, SequenceEngine) in this process:
// requests go straight to the engine (no HTTP, no client).
//
// Closed loop: `sequences` clients, each reading Fashion-MNIST test images
// one after another, each image a sequence of steps (4 rows per request,
// the first with sequence_start, the last with sequence_end, whose answer
// classifies the image); a client sends its next request when the last is
// answered (after a pause, with `think`). A compute-then-update model (online_linear) gets each image
// whole, followed by its label, which its batch's update learns from after
// answering (its accuracy is prequential). With `kill_at`, the primary dies then (KillPrimary: what it
// held is lost) and the backup takes over.
#ifndef TUTTI_EXPERIMENTS_STATEFUL_SERVING_H_
#define TUTTI_EXPERIMENTS_STATEFUL_SERVING_H_

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tutti/core/time.h"
#include "tutti/datasets/fashion_mnist.h"
#include "tutti/delays/delay_model.h"
#include "tutti/replication/replicated_executor.h"
#include "tutti/repository/model_repository.h"
#include "tutti/deployment/server_config.h"

namespace tutti {

struct StatefulServingSetup {
  std::string model = "gru_rows";
  ReplicationOptions replication;   // its mode is not read: MeasureStatefulServing takes modes
  bool nondeterminism = false;      // injected into the model's sums
  std::string policy = "deferred";
  int max_in_flight = ServerConfig().scheduler.max_in_flight;  // SchedulerOptions::max_in_flight
  int sequences = 16;               // concurrent clients
  Duration duration = 5 * kSecond;  // sending time
  Duration kill_at = 0;             // > 0: the primary dies then
  Duration hang_at = 0;             // > 0: the primary stops answering then, unannounced: the
                                    // failure detector (replication.detect_after) must find it
  Duration objective = 100 * kMillisecond;
  // > 0: a client pauses between an answer and its next request, for a
  // time drawn from an exponential distribution with this mean (fixed
  // seed) — then the offered load hardly depends on the latency, so modes
  // compare at one load, not each at its own closed-loop saturation.
  Duration think = 0;
  // > 0: the scheduler plans every batch's dispatch at this delay instead of
  // the measured tail (DelayModelOptions::measure false): runs side by side
  // then plan alike, so their difference is not that of two estimates of a
  // p99.9, each held for a second (delays/delay_model.h).
  Duration planned_dispatch = 0;
  // > 0, with several modes: they take turns instead of serving all at
  // once — each mode's clients start new images only in its turns, which
  // last this long each (a sequence begun in a turn runs to its end), so a
  // mode serves nearly alone, yet every mode samples every part of the
  // run's drift. Its throughput is then over its share of the run.
  Duration turn = 0;
  // > 0: the stateful steps' executors take at least this long a batch, as
  // on an accelerator (emulated: ExecutorGroupConfig::pace, over the real
  // model's outputs and states), and the scheduler plans with that — the
  // scale of HAMS's GPU models, where the proxies' CPU work overlaps it.
  Duration accelerator = 0;
};

struct StatefulServingResult {
  int64_t requests = 0;             // submitted
  int64_t answers = 0;              // callbacks (each request exactly once, or counted in duplicates)
  int64_t duplicates = 0;
  int64_t errors = 0;               // answers with an error
  std::string first_error;          // the first of them
  int64_t late = 0;
  double throughput = 0;            // answered requests per second
  double p50_ms = 0, p99_ms = 0;    // submit to answer
  int64_t images = 0;               // sequences finished
  double accuracy = 0;              // of their last answers
  // The dispatch delay the scheduler planned every batch's start with
  // (measured, at a tail: delays/delay_model.h; or the setup's
  // planned_dispatch), its mean over the run.
  double planned_dispatch_us = 0;
  // Every batch's dispatch delay over the run (the scheduler's decision to
  // the batch at its executor, ready to run), the stateless steps' too: the
  // tail the measured plan is taken from, counted whole.
  DelayHistogram dispatch;
  ReplicationStats replication;
};

// Serves `setup.model` once for each of `modes` (setup.replication.mode
// is not read), each mode with its own executors, backup and
// `setup.sequences` clients (their pauses seeded apart), on one clock and
// one machine. One mode is a measurement of it alone. Several run all at
// the same time, sharing every moment of the machine's drift, so that
// their difference is what the modes do, not when each ran, and what a
// mode costs the machine off its answers' path (a backup's applying
// thread) slows all of them alike — as in HAMS, whose backups have
// machines of their own; or they take turns (setup.turn), each serving
// nearly alone, so that a mode's work off its answers' path weighs on its
// own answers only. Results in the order of `modes`. Errors: the model's own (unknown, without a cpu profile,
// weights that fail to load, not stateful); InvalidArgument if `modes` is
// empty.
absl::StatusOr<std::vector<StatefulServingResult>> MeasureStatefulServing(const ModelRepository& repo,
                                                                          const StatefulServingSetup& setup,
                                                                          const std::vector<ReplicationMode>& modes,
                                                                          const ImageSet& images);

}  // namespace tutti

#endif  // TUTTI_EXPERIMENTS_STATEFUL_SERVING_H_
