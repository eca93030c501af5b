// The simulator's view of the cluster `tutti serve --repo --config` runs
// (`tutti sim --repo --config`): above both the server's cluster layout and
// the simulator, so that neither reaches the other.
#ifndef TUTTI_CLI_SIMULATED_CLUSTER_H_
#define TUTTI_CLI_SIMULATED_CLUSTER_H_

#include "tutti/deployment/cluster_layout.h"
#include "tutti/deployment/server_config.h"
#include "tutti/simulator/simulator.h"

namespace tutti {

// The layout's spec, with the config's policy, scheduler options, delay
// model and autoscaling; a run of 10 s after a warm-up of 1 s, to which an
// experiment adds its workload.
SimConfig SimulatedCluster(const ClusterLayout& layout, const ServerConfig& config);

}  // namespace tutti

#endif  // TUTTI_CLI_SIMULATED_CLUSTER_H_
