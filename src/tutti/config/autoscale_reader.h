// Reads closed-loop autoscaling (planner/scaling.h) from a YAML mapping:
//
//   autoscale:
//     interval_s: 10          # how often the advice is acted on
//     bad_rate_threshold: 0.01  # above it, add N·r/(1 − r) GPUs (Symphony §3.5)
//     headroom: 0.2           # the idle share kept: busy aimed at 1 − headroom
//     min_gpus: 1
//     max_gpus: 0             # 0: every GPU of the cluster
//     initial_gpus: 0         # up at the start; 0: min_gpus
//     provision_delay_s: 30   # a requested GPU serves this much later
//     trend_window_s: 60      # while the rate grows over this window, plan for
//                             # it when asked-for GPUs serve (0: off)
#ifndef TUTTI_CONFIG_AUTOSCALE_READER_H_
#define TUTTI_CONFIG_AUTOSCALE_READER_H_

#include <string>

#include "absl/status/statusor.h"
#include "tutti/core/yaml_map_reader.h"
#include "tutti/planner/scaling.h"

namespace tutti {

// The options at `node` (absent fields keep their defaults). InvalidArgument
// naming `field` for a non-mapping, an unknown field or a value out of range
// (bounds against the cluster's size are the user's: the simulator checks them).
absl::StatusOr<AutoscaleOptions> ReadAutoscaleOptions(const YAML::Node& node, const std::string& field);

}  // namespace tutti

#endif  // TUTTI_CONFIG_AUTOSCALE_READER_H_
