// EmulatedGpu: the timing of one emulated GPU — the one rule that both the
// emulated executor (executors/emulated_executor.h) and the simulator's
// GPUs (simulator/simulator.h) follow, so that a served emulated cluster
// and its simulation run batches alike. A batch of b items runs for ℓ(b)
// of its model's profile (times an injected slowdown `scale`, and 1 + u
// for a jitter draw u) and starts once three things hold: it has reached
// the GPU, its planned start has come, and the GPU's previous batch is done.
//
// Thread-safety: none; its owner serializes calls.
#ifndef TUTTI_CORE_EMULATED_GPU_H_
#define TUTTI_CORE_EMULATED_GPU_H_

#include <algorithm>
#include <cmath>

#include "tutti/core/latency_profile.h"
#include "tutti/core/time.h"

namespace tutti {

class EmulatedGpu {
 public:
  struct Slot {
    Time start;
    Time end;
  };

  // The run time of a batch of `size` (within the profile): ℓ(size),
  // scaled by `scale`, then by 1 + `jitter` (at least 1 ns).
  static Duration RunTime(const LatencyProfile& profile, int size, double scale = 1, double jitter = 0) {
    Duration run = profile.Latency(size);
    if (scale != 1) run = static_cast<Duration>(std::llround(scale * static_cast<double>(run)));
    if (jitter != 0) run = std::max<Duration>(1, static_cast<Duration>(static_cast<double>(run) * (1 + jitter)));
    return run;
  }

  // Books the GPU for a batch that reached it at `received`, planned to
  // start at `planned`, running for `run`.
  Slot Book(Time received, Time planned, Duration run) {
    const Time start = std::max({received, planned, busy_until_});
    busy_until_ = start + run;
    return {start, busy_until_};
  }

 private:
  Time busy_until_ = 0;
};

}  // namespace tutti

#endif  // TUTTI_CORE_EMULATED_GPU_H_
