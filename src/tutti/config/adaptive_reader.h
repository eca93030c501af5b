// Reading the `adaptive` policy's fields that serve configs and simulator
// experiments share (scheduler/adaptive_scheduler.h):
//   adaptive_epoch_s: 1     # how often each sub-cluster chooses
//   adaptive_window_s: 2    # the arrivals each choice replays
//   adaptive_memory: 5      # the epochs whose replays a choice sums
//   adaptive_stress: 1.25   # ties are broken by replays at this many times the load
//   deferral: auto          # latency | consolidate; auto: consolidate when autoscaling
//   gpu_ms_price: 100       # ms of one request's latency a GPU-ms saved by waiting is worth
#ifndef TUTTI_CONFIG_ADAPTIVE_READER_H_
#define TUTTI_CONFIG_ADAPTIVE_READER_H_

#include <optional>

#include "absl/status/statusor.h"
#include "tutti/core/yaml_map_reader.h"
#include "tutti/scheduler/scheduler.h"

namespace tutti {

// Sets the fields present into `options`, except `deferral`, which it
// returns (nullopt: absent or auto; the caller resolves it with
// DefaultDeferral). InvalidArgument naming the field for a non-positive
// epoch or window, a memory below 1, a stress below 1, an unknown deferral
// or a negative price.
absl::StatusOr<std::optional<Deferral>> ReadAdaptiveOptions(MapReader& r, SchedulerOptions* options);

// What `deferral: auto` means: consolidate when autoscaling, else latency.
inline Deferral DefaultDeferral(bool autoscales) {
  return autoscales ? Deferral::kConsolidate : Deferral::kLatency;
}

}  // namespace tutti

#endif  // TUTTI_CONFIG_ADAPTIVE_READER_H_
