// ShardPlan: a cluster split into shards of whole sub-clusters, each a
// cluster spec of its own with local model and GPU ids (Symphony §4.3: a
// sub-cluster's models only ever meet that sub-cluster's GPUs, so shards
// share nothing and each can be scheduled on a core of its own).
//
// Pure: the same spec and shard count give the same plan. Sub-clusters are
// placed largest first (by GPUs) onto the shard with the fewest GPUs so
// far; within a shard they keep the spec's order, so a shard's GPUs are in
// global order.
#ifndef TUTTI_SCHEDULER_SHARD_PLAN_H_
#define TUTTI_SCHEDULER_SHARD_PLAN_H_

#include <vector>

#include "absl/status/statusor.h"
#include "tutti/scheduler/cluster_spec.h"
#include "tutti/scheduler/scheduler.h"

namespace tutti {

struct ShardPlan {
  struct Shard {
    ClusterSpec spec;                   // its sub-clusters; the spec's delays and memory budget
    std::vector<ModelId> global_model;  // local model id → global
    std::vector<GpuId> global_gpu;      // local GPU id → global
    std::vector<int> global_sub_cluster;  // local sub-cluster → global (EffectiveSubClusters' order)
  };
  struct Place {
    int shard = 0;
    int local = 0;  // the id in its shard's spec
  };
  std::vector<Shard> shards;
  std::vector<Place> model;  // by global model id
  std::vector<Place> gpu;    // by global GPU id
};

// InvalidArgument for an invalid spec, or `shards` below 1 or above the
// spec's sub-clusters (a sub-cluster is not split).
absl::StatusOr<ShardPlan> PlanShards(const ClusterSpec& spec, int shards);

// `options` for one shard: what they say per model or per sub-cluster,
// taken for the shard's own.
SchedulerOptions ShardOptions(const SchedulerOptions& options, const ShardPlan::Shard& shard);

}  // namespace tutti

#endif  // TUTTI_SCHEDULER_SHARD_PLAN_H_
