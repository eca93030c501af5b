// Reading the scheduler's fields that serve configs and simulator
// experiments share, in one place so that both accept and check them alike:
//   policy: adaptive          # one of SchedulerPolicyNames()
//   drop: lazy                # drop_policy_reader.h
//   frontrun_slack_ms: 0.5    # ≥ 0
//   head_guard_share: 0.1     # in [0, 1)
//   adaptive_*, deferral, gpu_ms_price   # adaptive_reader.h
#ifndef TUTTI_CONFIG_SCHEDULER_READER_H_
#define TUTTI_CONFIG_SCHEDULER_READER_H_

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "tutti/core/yaml_map_reader.h"
#include "tutti/scheduler/scheduler.h"

namespace tutti {

// What the caller resolves itself: the policy named, and the deferral
// given (nullopt: absent or auto; see DefaultDeferral).
struct SchedulerFields {
  std::optional<std::string> policy;
  std::optional<Deferral> deferral;
};

// An experiment's policy variant (the text after a `+`): early sets early
// drop, latency and consolidate the deferral, lru the loads policy's
// eviction, on_demand and first_request its load mode, in `*options`.
// False, and nothing set, for any other.
bool ApplyPolicyVariant(absl::string_view variant, SchedulerOptions* options);

// Sets the other fields present into `options`. With `variants`, the
// policy may carry +early, +latency, +consolidate, and for `loads` +lru,
// +on_demand or +first_request (an experiment's
// labels: simulator/experiment.h). InvalidArgument naming the field for an
// unknown policy or any value out of its range.
absl::StatusOr<SchedulerFields> ReadSchedulerFields(MapReader& r, SchedulerOptions* options,
                                                    bool variants = false);

}  // namespace tutti

#endif  // TUTTI_CONFIG_SCHEDULER_READER_H_
