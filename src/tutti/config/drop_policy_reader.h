// Reading the `drop` field that serve configs and simulator experiments
// share: lazy | early (scheduler/scheduler.h's DropPolicy).
#ifndef TUTTI_CONFIG_DROP_POLICY_READER_H_
#define TUTTI_CONFIG_DROP_POLICY_READER_H_

#include <optional>

#include "absl/status/statusor.h"
#include "tutti/core/yaml_map_reader.h"
#include "tutti/scheduler/scheduler.h"

namespace tutti {

// The map's `drop` field; nullopt when absent. InvalidArgument naming the
// field for anything but lazy or early.
absl::StatusOr<std::optional<DropPolicy>> ReadDropPolicy(MapReader& r);

}  // namespace tutti

#endif  // TUTTI_CONFIG_DROP_POLICY_READER_H_
