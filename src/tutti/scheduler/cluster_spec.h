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
  // Bytes of weights a GPU holds while the model is loaded there; counted
  // only with a memory budget (ClusterSpec::memory).
  int64_t weights_bytes = 0;
  // How long loading them takes when it was measured (a CPU executor's
  // load from disk, `tutti profile`'s load_ms); 0: from weights_bytes over
  // the budget's bandwidth. Either way plus the budget's overhead.
  Duration load_time = 0;

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

// What each GPU's memory holds and what loading costs. Without a budget
// (gpu_bytes 0) every model stays loaded on every GPU of its sub-cluster.
// With one, GPUs start empty, a model runs on a GPU only once its weights
// are loaded there, and only the `loads` policy can serve (it plans loads
// and evictions; load_scheduler.h). A load takes overhead + bytes over
// the bandwidth, on the GPU's copy engine, beside its compute.
struct MemoryBudget {
  int64_t gpu_bytes = 0;
  // PCIe 3.0 x16 as a host-to-GPU copy achieves it (about 12 GB/s: a
  // ResNet50's 100 MB in about 8 ms, as Clockwork measured on V100s).
  double bytes_per_s = 12e9;
  Duration overhead = 0;

  bool limited() const { return gpu_bytes > 0; }
  Duration LoadTime(int64_t bytes) const {
    return overhead + static_cast<Duration>(static_cast<double>(bytes) / bytes_per_s * 1e9);
  }
  bool operator==(const MemoryBudget&) const = default;
};

struct ClusterSpec {
  std::vector<ModelSpec> models;
  std::vector<SubCluster> sub_clusters;  // empty: one holding all models and `gpus`
  int gpus = 0;                          // used when sub_clusters is empty
  NetworkDelays delays;
  MemoryBudget memory;

  // Total GPUs over all sub-clusters. GPU ids are numbered consecutively,
  // sub-cluster by sub-cluster.
  int num_gpus() const;
  // The sub-clusters, with the implicit single one made explicit.
  std::vector<SubCluster> EffectiveSubClusters() const;
  // Per model, its position in its sub-cluster's `models`: the index its
  // executors know it by (ExecBatch::model).
  std::vector<int> LocalIndex() const;
  // How long loading model `m`'s weights takes under `memory`.
  Duration LoadTime(ModelId m) const {
    const ModelSpec& s = models[m];
    return s.load_time > 0 ? memory.overhead + s.load_time : memory.LoadTime(s.weights_bytes);
  }
};

// InvalidArgument naming the problem: no models or GPUs, a model in no or
// two sub-clusters, a non-positive SLO, a max batch beyond the profile, …
absl::Status ValidateClusterSpec(const ClusterSpec& spec);

}  // namespace tutti

#endif  // TUTTI_SCHEDULER_CLUSTER_SPEC_H_
