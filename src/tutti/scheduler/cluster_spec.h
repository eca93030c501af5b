// ClusterSpec: what a scheduler schedules — the models (sessions) with their
// latency profiles and objectives, and the GPUs, partitioned into
// sub-clusters (Symphony §4.4): every GPU of a sub-cluster holds every model
// of it, and each model belongs to exactly one sub-cluster.
#ifndef TUTTI_SCHEDULER_CLUSTER_SPEC_H_
#define TUTTI_SCHEDULER_CLUSTER_SPEC_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "tutti/core/latency_profile.h"
#include "tutti/scheduler/request.h"

namespace tutti {

struct ModelSpec {
  std::string name;
  LatencyProfile profile;
  Duration slo = 0;             // default latency objective of its requests
  int max_batch = 0;            // 0: profile.max_batch()
  Duration max_queue_delay = kMillisecond;  // `timeout` policy: the batcher's delay
  int early_drop_window = 0;    // early drop's window; 0: from its GPUs (batch_policy.h's EarlyDropWindow)

  int EffectiveMaxBatch() const;
};

struct SubCluster {
  std::vector<ModelId> models;
  int num_gpus = 0;
};

// Network delays of Symphony appendix D: a batch of b takes d_ctrl + d_data·b
// to reach its GPU, and results take d_resp to reach the client.
struct NetworkDelays {
  Duration ctrl = 0;
  Duration data_per_request = 0;
  Duration resp = 0;

  Duration Dispatch(int batch) const { return ctrl + data_per_request * batch; }
  bool operator==(const NetworkDelays&) const = default;
};

struct ClusterSpec {
  std::vector<ModelSpec> models;
  std::vector<SubCluster> sub_clusters;  // empty: one holding all models and `gpus`
  int gpus = 0;                          // used when sub_clusters is empty
  NetworkDelays delays;

  // Total GPUs over all sub-clusters. GPU ids are numbered consecutively,
  // sub-cluster by sub-cluster.
  int num_gpus() const;
  // The sub-clusters, with the implicit single one made explicit.
  std::vector<SubCluster> EffectiveSubClusters() const;
  // Per model, its position in its sub-cluster's `models`: the index its
  // executors know it by (ExecBatch::model).
  std::vector<int> LocalIndex() const;
};

// InvalidArgument naming the problem: no models or GPUs, a model in no or
// two sub-clusters, a non-positive SLO, a max batch beyond the profile, …
absl::Status ValidateClusterSpec(const ClusterSpec& spec);

}  // namespace tutti

#endif  // TUTTI_SCHEDULER_CLUSTER_SPEC_H_
