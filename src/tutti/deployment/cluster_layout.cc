#include "tutti/deployment/cluster_layout.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "tutti/core/status_macros.h"
#include "tutti/planner/latency_split.h"
#include "tutti/repository/ensemble.h"
#include "tutti/repository/tensor_record.h"

namespace tutti {
namespace {

// Where a step model runs in `layout`: its model id, and its head when it
// is a prefix group's member (else -1).
absl::StatusOr<std::pair<ModelId, int>> FindStepModel(const ClusterLayout& layout, const ModelVersion& m) {
  for (const PrefixGroup& group : layout.prefix_groups) {
    for (size_t head = 0; head < group.members.size(); ++head) {
      if (group.members[head] == &m) return std::pair<ModelId, int>{group.model, static_cast<int>(head)};
    }
  }
  for (size_t k = 0; k < layout.spec.models.size(); ++k) {
    if (layout.served[k].config.name == m.config.name && layout.served[k].version == m.version) {
      return std::pair<ModelId, int>{static_cast<ModelId>(k), -1};
    }
  }
  return absl::FailedPreconditionError(absl::StrCat("its step model '", m.config.name, "' v", m.version,
                                                    " is in no executor group"));
}

// `graph` as GraphEngine runs it over `layout`: the steps its output needs
// (through inputs and routes), producers first, or why the layout cannot
// serve it.
absl::StatusOr<GraphSpec> LayOutGraph(const ModelVersion& graph, const ModelRepository& repo,
                                      const ClusterLayout& layout, const ServerConfig& config) {
  const ModelConfig& g = graph.config;
  if (!IsPlainFp32(g.inputs) || !IsPlainFp32(g.outputs)) {
    return absl::UnimplementedError("Tutti serves graphs with one FP32 input and one FP32 output tensor");
  }
  TUTTI_ASSIGN_OR_RETURN(EnsemblePlan plan, PlanEnsemble(g, repo.versions()));
  auto producers = [&](const std::string& tensor) {
    std::vector<int> out;
    for (size_t i = 0; i < g.steps.size(); ++i) {
      for (const auto& [output, t] : g.steps[i].output_map) {
        if (t == tensor) out.push_back(static_cast<int>(i));
      }
    }
    return out;
  };
  // The steps needed, found from the output back.
  const int n = static_cast<int>(g.steps.size());
  std::vector<uint8_t> needed(n, 0);
  std::vector<int> todo = producers(g.outputs[0].name);
  if (g.early_exit) {
    for (int p : producers(g.early_exit->tensor)) todo.push_back(p);
  }
  while (!todo.empty()) {
    const int i = todo.back();
    todo.pop_back();
    if (needed[i]) continue;
    needed[i] = 1;
    if (g.steps[i].input_map.size() != 1) {
      return absl::UnimplementedError(absl::StrCat("step ", i, " ('", g.steps[i].model_name,
                                                   "') reads several tensors; Tutti's steps read one"));
    }
    for (int p : producers(g.steps[i].input_map.begin()->second)) todo.push_back(p);
    if (g.steps[i].route) {
      for (int p : producers(g.steps[i].route->tensor)) todo.push_back(p);
    }
  }
  GraphSpec spec{g.name, g.latency_objective_ms ? Millis(*g.latency_objective_ms) : config.default_objective,
                 g.inputs[0].ElementCount(), g.outputs[0].ElementCount(), {}, {}};
  spec.even_split = config.even_graph_split;
  spec.step_overhead = config.graph_step_overhead;
  std::vector<int> index(n, -1);  // repository step → spec step
  auto from = [&](const std::string& tensor) {
    const std::vector<int> p = producers(tensor);
    return p.empty() ? -1 : index[p.front()];  // one producer, unless routed (then it reads no routed step)
  };
  for (int i : plan.order) {
    if (!needed[i]) continue;
    const EnsembleStep& s = g.steps[i];
    TUTTI_ASSIGN_OR_RETURN(auto where, FindStepModel(layout, *plan.models[i]));
    if (!IsPlainFp32(plan.models[i]->config.inputs) || !IsPlainFp32(plan.models[i]->config.outputs)) {
      return absl::UnimplementedError(absl::StrCat("step ", i, " ('", s.model_name, "') has typed or several "
                                                   "tensors; a graph's steps have one FP32 input and output"));
    }
    GraphSpec::Step step{where.first, from(s.input_map.begin()->second)};
    step.head = where.second;
    if (s.route) {
      step.route_from = from(s.route->tensor);
      step.route_values = s.route->argmax_in;
      // Until it is measured: every class equally likely.
      step.gamma = static_cast<double>(s.route->argmax_in.size()) /
                   static_cast<double>(layout.shapes[spec.steps[step.route_from].model].output_elements);
    }
    if (producers(s.input_map.begin()->second).size() > 1) {
      return absl::UnimplementedError(absl::StrCat("step ", i, " ('", s.model_name,
                                                   "') reads a tensor several routed steps make"));
    }
    index[i] = static_cast<int>(spec.steps.size());
    spec.steps.push_back(std::move(step));
  }
  for (int p : producers(g.outputs[0].name)) spec.outputs.push_back(index[p]);
  if (!g.merge.empty()) spec.merge = g.merge == "sum" ? GraphSpec::Merge::kSum : GraphSpec::Merge::kMean;
  if (g.early_exit) {
    spec.exit_from = from(g.early_exit->tensor);
    spec.exit_values = g.early_exit->argmax_in;
  }
  spec.shares = MakeGraphShares(spec, layout.spec);
  return spec;
}

// A model's tensors as the serving core carries them (tensor_record.h):
// any number, of any datatype; one FP32 input and output for the models
// whose executors compute on the values themselves (stateful,
// compute-then-update and ParM's).
absl::Status CheckServableTensors(const ModelConfig& c) {
  const bool plain = IsPlainFp32(c.inputs) && IsPlainFp32(c.outputs);
  if (!plain && (c.sequence_batching || !c.model_state_shape.empty() || c.parity)) {
    return absl::InvalidArgumentError(absl::StrCat("model '", c.name, "': a stateful or parity model has one FP32 "
                                                   "input and one FP32 output"));
  }
  return absl::OkStatus();
}

// Per prefix group among `versions` (one executor group's): the indices of
// its members — builtin models with the same architecture, tensors and
// first stage hash, two at least — and how many leading stages all share
// (their stage hashes' common prefix, the last stage excluded).
std::vector<std::pair<std::vector<int>, int>> FindPrefixGroups(const std::vector<const ModelVersion*>& versions) {
  std::vector<std::pair<std::vector<int>, int>> groups;
  std::vector<uint8_t> taken(versions.size(), 0);
  auto same = [](const ModelConfig& a, const ModelConfig& b) {
    return a.architecture == b.architecture && a.stage_hashes.size() == b.stage_hashes.size() &&
           a.stage_hashes[0] == b.stage_hashes[0] && a.inputs == b.inputs && a.outputs == b.outputs;
  };
  for (size_t k = 0; k < versions.size(); ++k) {
    const ModelConfig& first = versions[k]->config;
    if (taken[k] || first.platform != Platform::kBuiltin || first.stage_hashes.size() < 2) continue;
    std::vector<int> members{static_cast<int>(k)};
    size_t shared = first.stage_hashes.size() - 1;
    for (size_t j = k + 1; j < versions.size(); ++j) {
      const ModelConfig& other = versions[j]->config;
      if (taken[j] || other.platform != Platform::kBuiltin || other.stage_hashes.empty() || !same(first, other)) {
        continue;
      }
      members.push_back(static_cast<int>(j));
      size_t common = 0;
      while (common < shared && first.stage_hashes[common] == other.stage_hashes[common]) ++common;
      shared = common;
    }
    if (members.size() < 2) continue;
    for (int m : members) taken[m] = 1;
    groups.push_back({std::move(members), static_cast<int>(shared)});
  }
  return groups;
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
    const std::vector<double> due = DueShares(StepParents(*graph), graph->shares);
    std::vector<std::string> steps;
    for (size_t i = 0; i < graph->steps.size(); ++i) {
      const GraphSpec::Step& s = graph->steps[i];
      std::string step = layout->spec.models[s.model].name;
      for (const PrefixGroup& group : layout->prefix_groups) {
        if (group.model == s.model && s.head >= 0) step = group.members[s.head]->config.name;
      }
      if (s.route_from >= 0) absl::StrAppend(&step, " if class in {", absl::StrJoin(s.route_values, ","), "}");
      steps.push_back(absl::StrFormat("%s (due at %.0f%%)", step, 100 * due[i]));
    }
    absl::StrAppendFormat(&layout->description, "  graph %s v%d (objective %.1f ms, %s split): %s%s%s\n", name,
                          v.version, ToMillis(graph->objective), config.even_graph_split ? "even" : "Nexus's",
                          absl::StrJoin(steps, ", "),
                          graph->exit_from < 0 ? ""
                                               : absl::StrCat("; exits after step ", graph->exit_from,
                                                              " if class in {", absl::StrJoin(graph->exit_values, ","),
                                                              "}"),
                          v.config.merge.empty() ? "" : absl::StrCat("; the outputs' ", v.config.merge));
    layout->graphs.push_back(*std::move(graph));
    layout->graph_served.push_back({v.config, v.version, 0, graph->objective});
  }
}

}  // namespace

absl::StatusOr<ClusterLayout> LayOutCluster(const ModelRepository& repo, const ServerConfig& config) {
  ClusterLayout layout;
  ClusterSpec& spec = layout.spec;
  spec.delays = config.network;
  std::vector<GraphSpec> members;  // prefix groups' members, as one-step graphs
  std::vector<ServedModel> member_served;
  for (const ExecutorGroupConfig& group : config.executors) {
    SubCluster sub;
    sub.num_gpus = group.count;
    std::vector<const ModelVersion*>& versions = layout.group_models.emplace_back();
    std::vector<const ModelVersion*> wanted;
    for (const std::string& name : group.models) {
      TUTTI_ASSIGN_OR_RETURN(const ModelVersion* v, repo.Find(name));
      TUTTI_RETURN_IF_ERROR(CheckServableTensors(v->config));
      wanted.push_back(v);
    }
    std::vector<int> group_of(wanted.size(), -1);  // its prefix group's index in `prefix`, if any
    std::vector<std::pair<std::vector<int>, int>> prefix;
    // Under a memory budget each model is loaded on its own.
    if (config.prefix_batching && group.kind == "torch" && !group.memory) prefix = FindPrefixGroups(wanted);
    for (size_t p = 0; p < prefix.size(); ++p) {
      for (int m : prefix[p].first) group_of[m] = static_cast<int>(p);
    }
    std::vector<std::string> names;
    // `m` is served (what clients see); `v` runs on the executors.
    auto add = [&](const std::string& name, const ModelConfig& m, int64_t version, const LatencyProfile& profile,
                   Duration slo, const ModelVersion* v, const ModelConfig& runs) {
      sub.models.push_back(static_cast<ModelId>(spec.models.size()));
      ModelSpec& model = spec.models.emplace_back(ModelSpec{name, profile, slo});
      if (m.max_queue_delay_us) model.max_queue_delay = Micros(*m.max_queue_delay_us);
      model.weights_bytes = 4 * runs.parameters.value_or(0);
      if (group.kind == "torch" && runs.load_ms) model.load_time = static_cast<Duration>(*runs.load_ms * kMillisecond);
      model.early_drop_window = config.early_drop_window;
      layout.shapes.push_back({RecordWords(runs.inputs), RecordWords(runs.outputs)});
      layout.served.push_back({m, version, profile.Latency(1), slo, group.count * ThroughputWithin(profile, slo / 2)});
      versions.push_back(v);
      names.push_back(absl::StrFormat("%s v%d (%s; objective %.1f ms; l(1) %.2f ms, l(%d) %.2f ms)", name, version,
                                      PlatformName(m.platform), ToMillis(slo), ToMillis(profile.Latency(1)),
                                      profile.max_batch(), ToMillis(profile.Latency(profile.max_batch()))));
    };
    auto slo_of = [&](const ModelConfig& m) {
      return m.latency_objective_ms ? Millis(*m.latency_objective_ms) : config.default_objective;
    };
    for (size_t k = 0; k < wanted.size(); ++k) {
      const ModelConfig& m = wanted[k]->config;
      if (!m.shape_buckets.empty()) {
        std::vector<int> ids;
        for (const int64_t size : m.shape_buckets) {
          auto v = std::make_shared<ModelVersion>(*wanted[k]);
          v->config = AtBucket(m, size);
          const bool last = size == m.shape_buckets.back();
          const auto bucket = m.profiles.find(BucketProfileKey(group.profile, size));
          v->config.profiles.insert_or_assign(group.profile, bucket != m.profiles.end() ? bucket->second
                                                                                          : m.profiles.at(group.profile));
          ids.push_back(static_cast<int>(spec.models.size()));
          add(last ? m.name : absl::StrCat(m.name, "[", size, "]"), m, wanted[k]->version,
              v->config.profiles.at(group.profile), slo_of(m), v.get(), v->config);
          layout.served.back().internal = !last;
          if (!last) layout.served.back().config.name = spec.models.back().name;  // its own metrics' label
          layout.bucket_versions.push_back(std::move(v));
        }
        layout.served.back().buckets = std::move(ids);
        continue;
      }
      if (group_of[k] < 0) {
        add(m.name, m, wanted[k]->version, m.profiles.at(group.profile), slo_of(m), wanted[k], m);
        continue;
      }
      const auto& [member_index, shared] = prefix[group_of[k]];
      if (member_index.front() != static_cast<int>(k)) continue;  // added with its group's first member
      PrefixGroup pg{static_cast<ModelId>(spec.models.size()), {}, shared};
      std::vector<std::string> member_names;
      const LatencyProfile* slowest = nullptr;
      ModelConfig g = m;  // the group's model: the head's index, then the members' input
      g.inputs[0] = TensorSpec{"head_and_" + m.inputs[0].name, DataType::kFp32, {m.inputs[0].ElementCount() + 1}};
      g.stage_hashes.clear();
      g.accuracy.reset();
      for (int j : member_index) {
        const ModelConfig& member = wanted[j]->config;
        const LatencyProfile& p = member.profiles.at(group.profile);
        if (slowest == nullptr || p.Latency(p.max_batch()) > slowest->Latency(slowest->max_batch())) slowest = &p;
        g.max_batch_size = std::min(g.max_batch_size, member.max_batch_size);
        pg.members.push_back(wanted[j]);
        member_names.push_back(member.name);
        GraphSpec one{member.name, slo_of(member), member.inputs[0].ElementCount(), member.outputs[0].ElementCount(),
                      {GraphSpec::Step{pg.model}}, {1.0}};
        one.steps[0].head = static_cast<int>(pg.members.size()) - 1;
        members.push_back(std::move(one));
        member_served.push_back({member, wanted[j]->version, 0, slo_of(member)});
      }
      g.name = absl::StrCat("prefix[", absl::StrJoin(member_names, ","), "]");
      // Planned with its slowest member's profile: a batch runs the shared
      // stages once and each head on its own rows.
      add(g.name, g, 1, *slowest, slo_of(m), wanted[k], g);
      layout.served.back().internal = true;
      absl::StrAppendFormat(&names.back(), ": %d models run their first %d of %d layer stages once per batch",
                            member_names.size(), shared, m.stage_hashes.size());
      layout.prefix_groups.push_back(std::move(pg));
    }
    constexpr size_t kListed = 10;  // thousands of models: the first few, then a count
    if (names.size() > 2 * kListed) {
      const size_t more = names.size() - kListed;
      names.resize(kListed);
      names.push_back(absl::StrCat("… and ", more, " more (`tutti models` lists them)"));
    }
    absl::StrAppendFormat(&layout.description, "  %d x %s executor (profile %s):\n    %s\n", group.count, group.kind,
                          group.profile, absl::StrJoin(names, "\n    "));
    if (group.memory) {
      spec.memory = *group.memory;
      for (ModelId id : sub.models) {
        if (spec.models[id].weights_bytes <= 0) {
          return absl::InvalidArgumentError(absl::StrCat(
              "model '", spec.models[id].name,
              "' has no `parameters` in its config: a memory budget needs each model's weights size"));
        }
        if (group.kind == "torch" && spec.models[id].load_time <= 0) {
          return absl::InvalidArgumentError(absl::StrCat("model '", spec.models[id].name, "' has no `load_ms` in its ",
                                                         "config: measure how long it loads with `tutti profile`"));
        }
      }
      for (const ModelVersion* v : versions) {
        if (!v->config.shape_buckets.empty() || v->config.sequence_batching || !v->config.model_state_shape.empty()) {
          return absl::InvalidArgumentError(absl::StrCat("model '", v->config.name, "': a memory budget holds ",
                                                         "models of fixed shapes without state only"));
        }
      }
      absl::StrAppendFormat(&layout.description,
                            "    each holds %.3f GB of weights at most, loading %s (policy loads)\n",
                            spec.memory.gpu_bytes / 1e9,
                            group.kind == "torch" ? "from disk in its measured load_ms"
                                                  : absl::StrFormat("at %.1f GB/s", spec.memory.bytes_per_s / 1e9));
    }
    spec.sub_clusters.push_back(std::move(sub));
  }
  layout.graphs = std::move(members);
  layout.graph_served = std::move(member_served);
  LayOutGraphs(repo, config, &layout);
  // A graph's ℓ(1): at most its critical path's, every step's; its peak
  // (and a prefix group member's): its slowest step's.
  for (size_t g = 0; g < layout.graphs.size(); ++g) {
    double peak = std::numeric_limits<double>::infinity();
    for (const GraphSpec::Step& s : layout.graphs[g].steps) {
      layout.graph_served[g].latency += spec.models[s.model].profile.Latency(1);
      peak = std::min(peak, layout.served[s.model].peak_rps);
    }
    layout.graph_served[g].peak_rps = std::isinf(peak) ? 0 : peak;
  }
  if (config.model_less) {
    TUTTI_ASSIGN_OR_RETURN(layout.model_less, MakeModelLessTask(repo, config));
    for (const TaskVariant& v : layout.model_less->variants) {
      ModelId id = 0;
      while (id < static_cast<ModelId>(spec.models.size()) && spec.models[id].name != v.name) ++id;
      if (id == static_cast<ModelId>(spec.models.size())) {
        return absl::InternalError(absl::StrCat("model_less: the variant '", v.name, "' has no model in the layout"));
      }
      layout.variant_models.push_back(id);
    }
  }
  return layout;
}

std::vector<bool> StatefulGroups(const ClusterLayout& layout) {
  std::vector<bool> stateful;
  for (const std::vector<const ModelVersion*>& models : layout.group_models) {
    bool any = false;
    for (const ModelVersion* v : models) any |= v->config.stateful();
    stateful.push_back(any);
  }
  return stateful;
}

}  // namespace tutti
