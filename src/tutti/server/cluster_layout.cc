#include "tutti/server/cluster_layout.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "tutti/core/status_macros.h"

namespace tutti {

absl::StatusOr<ClusterLayout> LayOutCluster(const ModelRepository& repo, const ServerConfig& config) {
  ClusterLayout layout;
  ClusterSpec& spec = layout.spec;
  spec.delays = config.network;
  for (const ExecutorGroupConfig& group : config.executors) {
    SubCluster sub;
    sub.num_gpus = group.count;
    std::vector<const ModelVersion*>& versions = layout.group_models.emplace_back();
    std::vector<std::string> names;
    for (const std::string& name : group.models) {
      TUTTI_ASSIGN_OR_RETURN(const ModelVersion* v, repo.Find(name));
      const ModelConfig& m = v->config;
      if (m.inputs.size() != 1 || m.outputs.size() != 1) {
        return absl::InvalidArgumentError(absl::StrCat("model '", name, "': Tutti serves models with one input "
                                                       "and one output tensor"));
      }
      const Duration slo = m.latency_objective_ms ? Millis(*m.latency_objective_ms) : config.default_objective;
      sub.models.push_back(static_cast<ModelId>(spec.models.size()));
      ModelSpec& model = spec.models.emplace_back(ModelSpec{name, m.profiles.at(group.profile), slo});
      if (m.max_queue_delay_us) model.max_queue_delay = Micros(*m.max_queue_delay_us);
      model.early_drop_window = config.early_drop_window;
      layout.shapes.push_back({m.inputs[0].ElementCount(), m.outputs[0].ElementCount()});
      layout.served.push_back({m, v->version});
      versions.push_back(v);
      const LatencyProfile& p = m.profiles.at(group.profile);
      names.push_back(absl::StrFormat("%s v%d (%s; objective %.1f ms; l(1) %.2f ms, l(%d) %.2f ms)", name, v->version,
                                      PlatformName(m.platform), ToMillis(slo), ToMillis(p.Latency(1)),
                                      p.max_batch(), ToMillis(p.Latency(p.max_batch()))));
    }
    absl::StrAppendFormat(&layout.description, "  %d x %s executor (profile %s):\n    %s\n", group.count, group.kind,
                          group.profile, absl::StrJoin(names, "\n    "));
    spec.sub_clusters.push_back(std::move(sub));
  }
  return layout;
}

SimConfig SimulatedCluster(const ClusterLayout& layout, const ServerConfig& config) {
  SimConfig sim;
  sim.cluster = layout.spec;
  sim.policy = config.policy;
  sim.options = config.scheduler;
  sim.delay_model = config.delays;
  sim.duration = 10 * kSecond;
  sim.warmup = kSecond;
  return sim;
}

}  // namespace tutti
