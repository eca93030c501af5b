#include "tutti/server/cluster_layout.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "tutti/core/status_macros.h"
#include "tutti/planner/latency_split.h"
#include "tutti/repository/ensemble.h"

namespace tutti {
namespace {

// `graph` as GraphEngine runs it over `layout`: the chain of steps from the
// graph's input to its output (each step model takes one tensor), or why
// the layout cannot serve it.
absl::StatusOr<GraphSpec> LayOutGraph(const ModelVersion& graph, const ModelRepository& repo,
                                      const ClusterLayout& layout, const ServerConfig& config) {
  const ModelConfig& g = graph.config;
  if (g.inputs.size() != 1 || g.outputs.size() != 1) {
    return absl::UnimplementedError("Tutti serves graphs with one input and one output tensor");
  }
  TUTTI_ASSIGN_OR_RETURN(EnsemblePlan plan, PlanEnsemble(g, repo.versions()));
  auto producer = [&](const std::string& tensor) {
    for (size_t i = 0; i < g.steps.size(); ++i) {
      for (const auto& [output, t] : g.steps[i].output_map) {
        if (t == tensor) return static_cast<int>(i);
      }
    }
    return -1;
  };
  std::vector<ModelId> chain;  // from the output back to the input
  for (int step = producer(g.outputs[0].name); step >= 0;) {
    const ModelVersion& m = *plan.models[step];
    ModelId id = -1;
    for (size_t k = 0; k < layout.spec.models.size(); ++k) {
      if (layout.served[k].config.name == m.config.name && layout.served[k].version == m.version) id = k;
    }
    if (id < 0) {
      return absl::FailedPreconditionError(absl::StrCat("its step model '", m.config.name, "' v", m.version,
                                                        " is in no executor group"));
    }
    chain.push_back(id);
    step = producer(g.steps[step].input_map.begin()->second);  // a served model takes one tensor
  }
  GraphSpec spec{g.name, g.latency_objective_ms ? Millis(*g.latency_objective_ms) : config.default_objective,
                 g.inputs[0].ElementCount(), g.outputs[0].ElementCount(), {}, {}};
  for (int k = static_cast<int>(chain.size()) - 1; k >= 0; --k) {
    spec.steps.push_back({chain[k], static_cast<int>(spec.steps.size()) - 1});
  }
  spec.shares = MakeGraphShares(spec, layout.spec, config.even_graph_split);
  return spec;
}

void LayOutGraphs(const ModelRepository& repo, const ServerConfig& config, ClusterLayout* layout) {
  for (const std::string& name : repo.ModelNames()) {
    const ModelVersion& v = **repo.Find(name);
    if (v.config.platform != Platform::kEnsemble) continue;
    absl::StatusOr<GraphSpec> graph = LayOutGraph(v, repo, *layout, config);
    if (!graph.ok()) {
      absl::StrAppend(&layout->description, "  graph ", name, " is not served: ", graph.status().message(), "\n");
      continue;
    }
    std::vector<int> parents;
    for (const GraphSpec::Step& s : graph->steps) parents.push_back(s.input_from);
    const std::vector<double> due = DueShares(parents, graph->shares);
    std::vector<std::string> steps;
    for (size_t i = 0; i < graph->steps.size(); ++i) {
      steps.push_back(absl::StrFormat("%s (due at %.0f%%)", layout->spec.models[graph->steps[i].model].name,
                                      100 * due[i]));
    }
    absl::StrAppendFormat(&layout->description, "  graph %s v%d (objective %.1f ms, %s split): %s\n", name, v.version,
                          ToMillis(graph->objective), config.even_graph_split ? "even" : "Nexus's",
                          absl::StrJoin(steps, " -> "));
    layout->graphs.push_back(*std::move(graph));
    layout->graph_served.push_back({v.config, v.version});
  }
}

}  // namespace

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
  LayOutGraphs(repo, config, &layout);
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
