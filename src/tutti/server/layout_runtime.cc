#include "tutti/server/layout_runtime.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tutti/core/prometheus.h"
#include "tutti/core/status_macros.h"
#include "tutti/executors/emulated_executor.h"
#include "tutti/executors/slowdown_executor.h"
#include "tutti/executors/torch_executor.h"
#include "tutti/replication/replicated_executor.h"
#include "tutti/repository/tensor_record.h"
#include "tutti/stages/parm_stage.h"

namespace tutti {

absl::StatusOr<std::unique_ptr<GraphEngine>> ServeGraphs(InferenceEngine* engine, const ClusterSpec& spec,
                                                         ClusterLayout* layout, Tracer* tracer) {
  if (layout->graphs.empty()) return nullptr;
  TUTTI_ASSIGN_OR_RETURN(std::unique_ptr<GraphEngine> graphs,
                         GraphEngine::Create(engine, spec, layout->graphs, GraphOptions{.tracer = tracer}));
  layout->served.insert(layout->served.end(), layout->graph_served.begin(), layout->graph_served.end());
  return graphs;
}

namespace {

absl::StatusOr<std::unique_ptr<Executor>> MakeBaseExecutor(const ClusterLayout& layout, const ServerConfig& config,
                                                           int group, Clock* clock, std::string* description,
                                                           int64_t* parameters) {
  const ExecutorGroupConfig& g = config.executors.at(group);
  const std::vector<const ModelVersion*>& models = layout.group_models.at(group);
  if (g.kind == "emulated") {
    std::vector<EmulatedExecutor::Model> emulated;
    for (const ModelVersion* v : models) {
      emulated.push_back({v->config.profiles.at(g.profile), RecordWords(v->config.outputs)});
    }
    return std::make_unique<EmulatedExecutor>(clock, std::move(emulated), g.memory.has_value());
  }
  if (g.memory) {  // held as the scheduler's loads say; one warmed up per architecture
    std::vector<int> warm_up;
    absl::flat_hash_set<std::string> architectures;
    for (size_t k = 0; k < models.size(); ++k) {
      const ModelConfig& c = models[k]->config;
      const std::string key = absl::StrCat(PlatformName(c.platform), "/", c.architecture, "/", c.max_batch_size, "/",
                                           c.platform == Platform::kBuiltin ? "" : models[k]->weights_path);
      if (architectures.insert(key).second) warm_up.push_back(static_cast<int>(k));
    }
    if (description != nullptr) {
      absl::StrAppendFormat(description, "    each torch executor of the group loads models from disk as planned "
                            "(%d warmed up first)\n", warm_up.size());
    }
    std::vector<ModelVersion> versions;  // the loader's own: it outlives the layout
    for (const ModelVersion* v : models) versions.push_back(*v);
    auto torch = std::make_unique<TorchExecutor>(
        clock, static_cast<int>(models.size()),
        [versions = std::move(versions)](int k) { return TorchModel::Load(versions[k]); }, warm_up);
    TUTTI_RETURN_IF_ERROR(torch->status());
    return torch;
  }
  std::vector<std::unique_ptr<TorchModel>> loaded;
  const std::vector<ModelId>& ids = layout.spec.sub_clusters.at(group).models;
  absl::flat_hash_map<std::string, const TorchModel*> by_weights;  // the shape buckets of a model share its weights
  int64_t held = 0;
  for (size_t k = 0; k < models.size(); ++k) {
    const PrefixGroup* prefix = nullptr;
    for (const PrefixGroup& p : layout.prefix_groups) {
      if (p.model == ids[k]) prefix = &p;
    }
    const auto loaded_weights = by_weights.find(models[k]->weights_path);
    absl::StatusOr<std::unique_ptr<TorchModel>> m =
        prefix != nullptr ? TorchModel::LoadPrefixGroup(layout.served[ids[k]].config, prefix->members,
                                                        prefix->shared_stages)
        : loaded_weights != by_weights.end() ? loaded_weights->second->AtOtherBucket(models[k]->config)
                                             : TorchModel::Load(*models[k]);
    if (!m.ok()) return m.status();
    if (loaded_weights == by_weights.end()) held += (*m)->parameter_count();
    const bool bucket = std::any_of(layout.bucket_versions.begin(), layout.bucket_versions.end(),
                                    [&](const auto& v) { return v.get() == models[k]; });
    if (bucket) by_weights.emplace(models[k]->weights_path, m->get());
    loaded.push_back(*std::move(m));
  }
  if (parameters != nullptr) *parameters = held;
  if (description != nullptr) {
    absl::StrAppendFormat(description, "    each torch executor of the group holds %d parameters (%.2f MiB)\n", held,
                          held * 4.0 / (1 << 20));
  }
  auto torch = std::make_unique<TorchExecutor>(clock, std::move(loaded));
  if (g.pace <= 0) return torch;
  return std::make_unique<SlowdownExecutor>(clock, std::move(torch), std::vector<SlowdownEpisode>{}, 1, g.pace);
}

}  // namespace

std::unique_ptr<SequenceEngine> ServeSequences(InferenceEngine* engine, const ClusterSpec& spec,
                                               const ClusterLayout& layout, Clock* clock) {
  std::vector<std::optional<SequenceBatching>> batching;
  bool any = false;
  for (size_t m = 0; m < spec.models.size(); ++m) {
    batching.push_back(layout.served[m].config.sequence_batching);
    any |= batching.back().has_value();
  }
  if (!any) return nullptr;
  return std::make_unique<SequenceEngine>(engine, spec, std::move(batching), clock);
}

absl::StatusOr<std::unique_ptr<Executor>> MakeGroupExecutor(const ClusterLayout& layout, const ServerConfig& config,
                                                            int group, Clock* clock, std::string* description,
                                                            int64_t* parameters) {
  TUTTI_ASSIGN_OR_RETURN(std::unique_ptr<Executor> primary,
                         MakeBaseExecutor(layout, config, group, clock, description, parameters));
  std::vector<SlotModel> slot;
  bool stateful = false;
  for (const ModelVersion* v : layout.group_models.at(group)) {
    const ModelConfig& c = v->config;
    SlotModel m{0, RecordWords(c.inputs), RecordWords(c.outputs), 0};
    if (c.sequence_batching) {
      stateful = true;
      m.state_elements = c.sequence_batching->StateElements();
      m.max_idle = c.sequence_batching->max_sequence_idle_us * kMicrosecond;
    }
    if (!c.model_state_shape.empty()) stateful = m.model_state = true;
    slot.push_back(m);
  }
  if (!stateful) return primary;
  if (config.replication.distributed) {  // the backup is another backend process (distributed/replica_node.h)
    return std::make_unique<ReplicatedExecutor>(clock, std::move(primary), nullptr, std::move(slot),
                                                config.replication);
  }
  // The backup, and the spare that replaces it after a failover, hold the
  // same models.
  auto make = [layout = std::make_shared<const ClusterLayout>(layout), config, group, clock] {
    return MakeBaseExecutor(*layout, config, group, clock, nullptr, nullptr);
  };
  TUTTI_ASSIGN_OR_RETURN(std::unique_ptr<Executor> backup, make());
  if (description != nullptr) {
    absl::StrAppendFormat(description, "    a backup executor stands by; stateful models' states replicated: %s\n",
                          ReplicationModeName(config.replication.mode));
  }
  return std::make_unique<ReplicatedExecutor>(clock, std::move(primary), std::move(backup), std::move(slot),
                                              config.replication, make);
}

absl::StatusOr<std::vector<std::pair<ModelId, std::shared_ptr<BatchStage>>>> MakeStages(
    const ClusterLayout& layout, const ServerConfig& config, std::string* description) {
  auto id = [&](const std::string& name) {
    for (size_t m = 0; m < layout.spec.models.size(); ++m) {
      if (layout.spec.models[m].name == name) return static_cast<ModelId>(m);
    }
    return ModelId{-1};
  };
  std::vector<ParmCoding> codings;
  for (const CodingConfig& c : config.coding) {
    const ModelId parity_id = id(c.parity_model);
    if (parity_id < 0) return absl::NotFoundError(absl::StrCat("coding: unknown parity model '", c.parity_model, "'"));
    const ModelConfig& parity = layout.served[parity_id].config;
    if (!parity.parity.has_value() || parity.inputs.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("coding: '", c.parity_model, "' is not a parity model"));
    }
    TUTTI_ASSIGN_OR_RETURN(ParityCodec codec,
                           ParityCodec::Create(parity.parity->encoder, parity.parity->k, parity.inputs[0].shape));
    codings.push_back({id(c.model), parity_id, std::move(codec), c.reconstruct_delay});
    if (description != nullptr) {
      absl::StrAppendFormat(description, "  ParM: %s protected by %s (k %d, %s encoder)\n", c.model, c.parity_model,
                            parity.parity->k, ParityEncoderName(parity.parity->encoder));
    }
  }
  return MakeParmStages(layout.spec, layout.shapes, codings);
}

void RouteModelLess(const std::string& task, const ModelLessTask& made, RouteFn route, VariantStatusFn status,
                    InferenceFrontendOptions* frontend) {
  std::vector<std::string> names;
  for (const TaskVariant& v : made.variants) names.push_back(v.name);
  frontend->route_task = [route = std::move(route), task, names, objective = made.requirements.latency_objective](
                             absl::string_view t, double min_accuracy,
                             Duration asked) -> std::optional<InferenceFrontendOptions::RoutedTask> {
    if (t != task) return std::nullopt;
    const std::optional<VariantChoice> c = route({min_accuracy, asked > 0 ? asked : objective, 0});
    if (!c || c->index < 0) return std::nullopt;
    return InferenceFrontendOptions::RoutedTask{names[c->index], c->meets, c->note};
  };
  frontend->routed_status = [status = std::move(status), names](
                                absl::string_view model) -> std::optional<InferenceFrontendOptions::RoutedStatus> {
    for (size_t j = 0; j < names.size(); ++j) {
      if (names[j] != model) continue;
      const auto s = status(static_cast<int>(j));
      if (!s) return std::nullopt;
      return InferenceFrontendOptions::RoutedStatus{s->first, s->second};
    }
    return std::nullopt;
  };
}

std::string ModelLessPrometheusText(const std::vector<TaskVariant>& variants, const TaskRoutingState& state,
                                    double cost) {
  std::string text = PromFamily("tutti_model_less_cost_total", "counter",
                                "The generated variants' instance-seconds times their cost, since the start.");
  absl::StrAppendFormat(&text, "tutti_model_less_cost_total %.3f\n", cost);
  text += PromFamily("tutti_variant_instances", "gauge",
                     "Instances of a generated variant up (serving) and paid for (up or loading), under "
                     "model-less autoscaling.");
  for (size_t j = 0; j < variants.size() && j < state.up.size() && j < state.paid.size(); ++j) {
    absl::StrAppendFormat(&text, "tutti_variant_instances{model=\"%s\",state=\"up\"} %d\n", variants[j].name,
                          state.up[j]);
    absl::StrAppendFormat(&text, "tutti_variant_instances{model=\"%s\",state=\"paid\"} %d\n", variants[j].name,
                          state.paid[j]);
  }
  return text;
}

}  // namespace tutti
