// Reads how the scheduler's delays are measured (delays/delay_model.h) from
// a YAML mapping, for serve configs and simulator experiments alike:
//
//   delay_model:
//     measure: true        # false: plan with network_us and the frontrun slack as configured
//     quantile: 0.999      # the tail dispatch, response and compute are planned at
//     timer_quantile: 0.9  # the frontrun slack's quantile of timer lateness
//     window_s: 10         # estimates cover at most the last window_s seconds…
//     min_samples: 20000   # …and only the recent part of it holding this many samples
//     refresh_ms: 100      # the plan is remade this often
//     hold_s: 1            # the plan keeps each delay's largest estimate this long
//     max_share: 0.25      # measured delays stay within this share of the smallest objective
//     outliers: 3          # a window's largest samples that a quantile ignores
//     overload_margins: true  # overloaded: cover dispatch + response at a lower quantile
//                          #   (down to 0.95) when that answers more requests on time
#ifndef TUTTI_CONFIG_DELAY_MODEL_READER_H_
#define TUTTI_CONFIG_DELAY_MODEL_READER_H_

#include <string>

#include "absl/status/statusor.h"
#include "tutti/core/yaml_map_reader.h"
#include "tutti/delays/delay_injection.h"
#include "tutti/delays/delay_model.h"

namespace tutti {

// The options at `node` (absent fields keep their defaults). InvalidArgument
// naming `field` for a non-mapping, an unknown field or a value out of range.
absl::StatusOr<DelayModelOptions> ReadDelayModelOptions(const YAML::Node& node, const std::string& field);

// What a simulated cluster adds (delays/delay_injection.h), all in
// microseconds:
//
//   inject:
//     seed: 1
//     dispatch_us: {constant: 50}
//     response_us: {lognormal: {median: 400, p999: 3000}}
//     timer_us: {uniform: [50, 300]}
//     response_per_batch: false      # true: one response delay for all of a batch's answers
//     compute_scale: {3: 1.2}        # GPU 3 runs 1.2 times its profile
//
// A distribution is one of {constant: X}, {uniform: [LO, HI]},
// {exponential: MEAN}, {lognormal: {median: M, p999: P}} or
// {quantiles: {0.5: A, 0.99: B, 1: C}} (a server's measured quantiles, as
// /v2/models/{m}/stats shows them).
absl::StatusOr<DelayInjection> ReadDelayInjection(const YAML::Node& node, const std::string& field);

}  // namespace tutti

#endif  // TUTTI_CONFIG_DELAY_MODEL_READER_H_
