// Offline jobs (INFaaS §3: "offline requests … run on spare capacity"): a
// batch of inputs sent to a running server's model while its online load
// leaves room, paused while it does not, and every answer kept.
//
// The online load is what the model's statistics (GET
// /v2/models/{m}/stats) say it ended over a poll period, less what this job
// sent, over the model's peak (its stats' `peak_rps`): INFaaS pauses offline
// work while online load is above 40%.
//
// Thread-safety: RunOfflineJob is blocking; the transport's callbacks may
// run on any thread.
#ifndef TUTTI_LOADGEN_OFFLINE_JOB_H_
#define TUTTI_LOADGEN_OFFLINE_JOB_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tutti/core/time.h"
#include "tutti/loadgen/load_transport.h"

namespace tutti {

// One reading of a model's statistics.
struct ModelLoadReading {
  Time at = 0;          // when it was read (any clock, the same for every reading)
  int64_t ended = 0;    // requests it answered, dropped or refused, since its start
  double peak_rps = 0;  // what its executors answer at most (0: unknown)
};

// Parses the body of GET /v2/models/{m}/stats (InferenceFrontend::StatsJson):
// ended = success + late + dropped + error + rejected + overloaded.
// InvalidArgument naming what is missing.
absl::StatusOr<ModelLoadReading> ParseModelLoad(const std::string& stats_json, Time at);

// The online load over (before.at, now.at]: the requests the model ended
// that were not this job's (`own_ended` of them were), per second, over its
// peak; 0 when no time passed or the peak is unknown.
double OnlineLoad(const ModelLoadReading& before, const ModelLoadReading& now, int64_t own_ended);

struct OfflineJobOptions {
  double pause_above = 0.4;   // pause while the online load is above this (INFaaS: 40%)
  int in_flight = 8;          // most of the job's requests at the server at once
  double objective_ms = 1000; // sent with each request: offline work may wait
  int attempts = 5;           // per item, for answers that may succeed again (refused, dropped, unavailable)
};

struct OfflineProgress {
  int64_t total = 0, answered = 0, failed = 0;
  double online_load = 0;
  bool paused = false;
  int64_t pauses = 0;         // times the job paused so far
  Duration paused_time = 0;   // in all, by the readings' clock
};

// The job's environment. `read_load` reads the model's statistics;
// `wait` lets one poll period pass, during which the transport answers.
struct OfflineJobIo {
  LoadTransport* transport = nullptr;
  LoadTarget target;
  std::function<std::vector<float>(int64_t)> input;  // item i's input
  std::function<absl::StatusOr<ModelLoadReading>()> read_load;
  std::function<void()> wait;
  std::function<void(const OfflineProgress&)> progress;  // after each poll; may be null
};

// One item's end: its first output (empty on error) or the error.
struct OfflineAnswer {
  std::vector<float> output;
  std::string error;  // empty: answered
  int attempts = 0;
};

// Runs items [0, total) and returns their answers in order once every one
// has ended (answered, or failed after its attempts). Each poll: read the
// load (nothing is sent before the first poll's); while it is at or below
// pause_above, keep in_flight requests at the server, each answer sending
// the next; above it, send nothing new (those in flight finish);
// pause_above 0: never pause. Errors: the first reading fails (the server,
// or the model, is not there), or the model's peak is unknown and
// pause_above > 0.
absl::StatusOr<std::vector<OfflineAnswer>> RunOfflineJob(int64_t total, const OfflineJobIo& io,
                                                         const OfflineJobOptions& options);

}  // namespace tutti

#endif  // TUTTI_LOADGEN_OFFLINE_JOB_H_
