// The profiler: measures a model's batch latency ℓ(b) on an executor.
//
// For each batch size (1 … 32, then powers of two up to the maximum, and the
// maximum itself) it runs a few warm-up batches, then times runs with the
// injected clock — at least `repeats` of them and for at least
// `min_time_per_batch`, so fast batches get many samples — and keeps the
// median. Measurements are made
// monotone (a larger batch never reported faster than a smaller one) and
// fitted to α·b + β.
//
// The function that runs a batch is injected, so the profiler works for any
// executor and is tested with a fake that advances a ManualClock.
#ifndef TUTTI_PROFILER_PROFILER_H_
#define TUTTI_PROFILER_PROFILER_H_

#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "tutti/core/clock.h"
#include "tutti/core/latency_profile.h"

namespace tutti {

struct ProfilerOptions {
  int max_batch = 32;   // largest batch size measured
  int warmup_runs = 3;  // untimed runs before each batch size
  int repeats = 10;     // at least this many timed runs per batch size
  Duration min_time_per_batch = 20 * kMillisecond;  // and at least this long timing
  int max_repeats = 2000;  // cap on timed runs per batch size
};

// Runs one batch of the given size to completion.
using RunBatchFn = std::function<absl::Status(int batch)>;

// Called after each batch size with its median latency.
using ProfileProgressFn = std::function<void(int batch, Duration median)>;

// 1, 2, …, min(32, max_batch), then 64, 128, … below max_batch, then max_batch.
std::vector<int> ProfileBatchSizes(int max_batch);

// Measures ℓ(b). Errors: bad options, or the first error `run` returns.
absl::StatusOr<LatencyProfile> MeasureLatencyProfile(const RunBatchFn& run, const Clock& clock,
                                                     const ProfilerOptions& options,
                                                     const ProfileProgressFn& progress = nullptr);

}  // namespace tutti

#endif  // TUTTI_PROFILER_PROFILER_H_
