// ClusterLayout: the cluster a resolved ServerConfig describes over a model
// repository — the scheduler's ClusterSpec (one sub-cluster per executor
// group, GPU ids numbered group by group), each model's tensor sizes and
// served version, and the model versions each group's executors hold. The
// one road from a repository and a serve config to a ClusterSpec: the
// embedded server, the distributed processes (scheduler, frontend, backend)
// and the simulator (`tutti sim --repo --config`: cli/simulated_cluster.h)
// all derive their view of the cluster from it, so they agree on model ids
// and GPU ids. Torch-free:
// the executors and stages a process runs over a layout are made by
// server/layout_runtime.h.
#ifndef TUTTI_DEPLOYMENT_CLUSTER_LAYOUT_H_
#define TUTTI_DEPLOYMENT_CLUSTER_LAYOUT_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "tutti/graphs/graph_engine.h"
#include "tutti/repository/model_repository.h"
#include "tutti/deployment/server_config.h"
#include "tutti/serving/inference_engine.h"

namespace tutti {

// Models of one torch executor group whose leading stages are identical
// (same architecture and stage_hashes), served as one scheduled model —
// Nexus §6.3's prefix batching: a batch mixes their requests, runs the
// shared stages once on all of it, then each member's own last stages on
// its rows. The group's model takes the member's index (its head) before
// each item's input; clients call the members by name (one-step graphs
// over the group's model, with their head).
struct PrefixGroup {
  ModelId model;                              // the scheduled model
  std::vector<const ModelVersion*> members;   // by head
  int shared_stages = 0;                      // leading stages run once per batch
};

struct ClusterLayout {
  ClusterSpec spec;
  std::vector<ModelShape> shapes;                      // by model id
  std::vector<ServedModel> served;                     // by model id
  std::vector<std::vector<const ModelVersion*>> group_models;  // by executor group
  // The repository's graphs (platform ensemble) whose steps' models are all
  // served, as GraphEngine runs them (graph g is model spec.models.size() + g
  // for the frontends), with their configs.
  // Prefix groups' members come first: one step, their group's model.
  std::vector<GraphSpec> graphs;
  std::vector<ServedModel> graph_served;
  std::vector<PrefixGroup> prefix_groups;
  // The versions the layout made: a model of variable dimensions at each of
  // its shape buckets (group_models points at them).
  std::vector<std::shared_ptr<const ModelVersion>> bucket_versions;
  std::string description;  // a few lines: the groups and their models, the graphs
  // config.model_less's task on the layout's slots (MakeModelLessTask),
  // and each variant's model id; none without model_less.
  std::optional<ModelLessTask> model_less;
  std::vector<ModelId> variant_models;
};

// A model of variable dimensions (ModelConfig::shape_buckets) becomes one
// engine model per bucket, with the bucket's profile ("<kind>/<size>", else
// the kind's): the largest under the model's name, the others internal
// ("name[size]"). Errors: a model missing from `repo`, or a stateful or
// parity model of typed tensors. A graph that cannot be served (a step's
// model in no executor group; more than one input or output) is left out,
// with a line saying why in the description. `config` must be resolved
// (ResolveServerConfig); `repo` must outlive the layout.
absl::StatusOr<ClusterLayout> LayOutCluster(const ModelRepository& repo, const ServerConfig& config);

// Per executor group: whether it holds a stateful model (ModelConfig::stateful()).
std::vector<bool> StatefulGroups(const ClusterLayout& layout);

}  // namespace tutti

#endif  // TUTTI_DEPLOYMENT_CLUSTER_LAYOUT_H_
