// Reads the network delays of Symphony appendix D from a YAML mapping, for
// simulator experiments and serve configs alike:
//
//   network_us: {ctrl: 100, data_per_request: 2, resp: 1000}
//
// ctrl + data_per_request·b is the time a batch of b takes to reach its
// executor; resp is the time from the end of a batch to its answers
// reaching the clients. The scheduler plans with them: every batch is
// dispatched early enough, and finishes early enough, for its answers to be
// on time where the client judges them.
#ifndef TUTTI_CONFIG_NETWORK_DELAYS_READER_H_
#define TUTTI_CONFIG_NETWORK_DELAYS_READER_H_

#include "absl/status/statusor.h"
#include "tutti/core/yaml_map_reader.h"
#include "tutti/scheduler/cluster_spec.h"

namespace tutti {

// The delays at `node` (a mapping of microseconds; absent fields are 0).
// InvalidArgument naming `field` for a non-mapping, an unknown or negative field.
absl::StatusOr<NetworkDelays> ReadNetworkDelays(const YAML::Node& node, const std::string& field);

}  // namespace tutti

#endif  // TUTTI_CONFIG_NETWORK_DELAYS_READER_H_
