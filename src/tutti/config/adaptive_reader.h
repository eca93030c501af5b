// Reading the `adaptive` policy's fields that serve configs and simulator
// experiments share (scheduler/adaptive_scheduler.h):
//   adaptive_epoch_s: 1     # how often each sub-cluster chooses
//   adaptive_window_s: 2    # the arrivals each choice replays
//   adaptive_memory: 5      # the epochs whose replays a choice sums
//   adaptive_stress: 1.25   # ties are broken by replays at this many times the load
#ifndef TUTTI_CONFIG_ADAPTIVE_READER_H_
#define TUTTI_CONFIG_ADAPTIVE_READER_H_

#include "absl/status/status.h"
#include "tutti/config/yaml_map_reader.h"
#include "tutti/scheduler/scheduler.h"

namespace tutti {

// Sets the fields present into `options`. InvalidArgument naming the field
// for a non-positive epoch or window, a memory below 1 or a stress below 1.
absl::Status ReadAdaptiveOptions(MapReader& r, SchedulerOptions* options);

}  // namespace tutti

#endif  // TUTTI_CONFIG_ADAPTIVE_READER_H_
