// ClusterLayout: the cluster a resolved ServerConfig describes over a model
// repository — the scheduler's ClusterSpec (one sub-cluster per executor
// group, GPU ids numbered group by group), each model's tensor sizes and
// served version, and the model versions each group's executors hold. The
// embedded server and the distributed processes (scheduler, frontend,
// backend) all derive their view of the cluster from it, so they agree on
// model ids and GPU ids.
#ifndef TUTTI_SERVER_CLUSTER_LAYOUT_H_
#define TUTTI_SERVER_CLUSTER_LAYOUT_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "tutti/core/clock.h"
#include "tutti/executors/executor.h"
#include "tutti/repository/model_repository.h"
#include "tutti/server/server_config.h"
#include "tutti/serving/batch_stage.h"
#include "tutti/serving/inference_engine.h"

namespace tutti {

struct ClusterLayout {
  ClusterSpec spec;
  std::vector<ModelShape> shapes;                      // by model id
  std::vector<ServedModel> served;                     // by model id
  std::vector<std::vector<const ModelVersion*>> group_models;  // by executor group
  std::string description;  // a few lines: the groups and their models
};

// Errors: a model missing from `repo`, or with more than one input or output
// tensor. `config` must be resolved (ResolveServerConfig); `repo` must
// outlive the layout.
absl::StatusOr<ClusterLayout> LayOutCluster(const ModelRepository& repo, const ServerConfig& config);

// The batch stages of the config's `coding:` entries (ParM, one per coded
// model), with their codecs made from the parity models' configs; any host
// — the serving core, a distributed frontend — runs them. The description's
// ParM lines are appended to `description` unless null.
// Errors: a codec that cannot be made, or those of MakeParmStages.
absl::StatusOr<std::vector<std::pair<ModelId, std::shared_ptr<BatchStage>>>> MakeStages(
    const ClusterLayout& layout, const ServerConfig& config, std::string* description = nullptr);

// One executor of `group` (config.executors[group]), holding its models in
// the group's order. Errors: weights that fail to load.
absl::StatusOr<std::unique_ptr<Executor>> MakeGroupExecutor(const ClusterLayout& layout, const ServerConfig& config,
                                                            int group, Clock* clock);

}  // namespace tutti

#endif  // TUTTI_SERVER_CLUSTER_LAYOUT_H_
