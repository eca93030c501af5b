#include "tutti/cli/simulated_cluster.h"

namespace tutti {

SimConfig SimulatedCluster(const ClusterLayout& layout, const ServerConfig& config) {
  SimConfig sim;
  sim.cluster = layout.spec;
  sim.policy = config.policy;
  sim.options = config.scheduler;
  sim.delay_model = config.delays;
  sim.autoscale = config.autoscale;
  sim.duration = 10 * kSecond;
  sim.warmup = kSecond;
  return sim;
}

}  // namespace tutti
