// The runtime parts a process builds over a ClusterLayout
// (deployment/cluster_layout.h): the executors of an executor group (emulated,
// or libtorch's) and the batch stages of the config's `coding:` entries.
#ifndef TUTTI_SERVER_LAYOUT_RUNTIME_H_
#define TUTTI_SERVER_LAYOUT_RUNTIME_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "tutti/core/clock.h"
#include "tutti/executors/executor.h"
#include "tutti/sequences/sequence_engine.h"
#include "tutti/deployment/cluster_layout.h"
#include "tutti/serving/batch_stage.h"
#include "tutti/tracing/tracer.h"
#include "tutti/frontend/inference_frontend.h"

namespace tutti {

// The batch stages of the config's `coding:` entries (ParM, one per coded
// model), with their codecs made from the parity models' configs; any host
// — the serving core, a distributed frontend — runs them. The description's
// ParM lines are appended to `description` unless null.
// Errors: a codec that cannot be made, or those of MakeParmStages.
absl::StatusOr<std::vector<std::pair<ModelId, std::shared_ptr<BatchStage>>>> MakeStages(
    const ClusterLayout& layout, const ServerConfig& config, std::string* description = nullptr);

// The layout's graphs served over `engine` (which serves `spec`'s models):
// a GraphEngine, with the graphs' configs appended to layout->served for the
// frontends; null (and the layout unchanged) when there is no graph.
// `tracer` (null: none) records the steps of traced graph requests.
absl::StatusOr<std::unique_ptr<GraphEngine>> ServeGraphs(InferenceEngine* engine, const ClusterSpec& spec,
                                                         ClusterLayout* layout, Tracer* tracer = nullptr);

// The layout's stateful models' sequences kept over `engine` (which serves
// `spec`'s models): a SequenceEngine; null when no model is stateful.
std::unique_ptr<SequenceEngine> ServeSequences(InferenceEngine* engine, const ClusterSpec& spec,
                                               const ClusterLayout& layout, Clock* clock);

// One executor of `group` (config.executors[group]), holding its models in
// the group's order (a prefix group's members' weights as one model). A
// line saying how many parameters a torch executor holds is appended to
// `description` unless null, and the count stored in `parameters` unless
// null. A group with stateful models gets a ReplicatedExecutor
// (replication/) over two: the primary and its backup, which keeps the
// states as the config's replication mode says — or, with
// config.replication.distributed, over one, its backup being another
// backend process's. Errors: weights that fail to load.
absl::StatusOr<std::unique_ptr<Executor>> MakeGroupExecutor(const ClusterLayout& layout, const ServerConfig& config,
                                                            int group, Clock* clock,
                                                            std::string* description = nullptr,
                                                            int64_t* parameters = nullptr);

// Model-less requests for `task` routed by a router of its variants (the
// embedded server's TaskAutoscaler, a distributed frontend's TaskRouter):
// sets `frontend`'s route_task to `route` (nullopt: not routed now — the
// frontend's own selection then) and routed_status to `status`, both by
// index into `variants`. A request without an objective has the task's.
using RouteFn = std::function<std::optional<VariantChoice>(const VariantRequirements& query)>;
using VariantStatusFn = std::function<std::optional<std::pair<VariantState, double>>(int variant)>;
void RouteModelLess(const std::string& task, const ModelLessTask& variants, RouteFn route, VariantStatusFn status,
                    InferenceFrontendOptions* frontend);
// /metrics lines of model-less serving: the cost paid so far
// (tutti_model_less_cost_total) and each variant's instances up and paid
// for (tutti_variant_instances).
std::string ModelLessPrometheusText(const std::vector<TaskVariant>& variants, const TaskRoutingState& state,
                                    double cost);

}  // namespace tutti

#endif  // TUTTI_SERVER_LAYOUT_RUNTIME_H_
