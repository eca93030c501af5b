#include "tutti/scheduler/shard_plan.h"

#include <algorithm>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "tutti/core/status_macros.h"

namespace tutti {

absl::StatusOr<ShardPlan> PlanShards(const ClusterSpec& spec, int shards) {
  TUTTI_RETURN_IF_ERROR(ValidateClusterSpec(spec));
  const std::vector<SubCluster> subs = spec.EffectiveSubClusters();
  if (shards < 1 || shards > static_cast<int>(subs.size())) {
    return absl::InvalidArgumentError(absl::StrCat(shards, " scheduler shards for ", subs.size(),
                                                   " sub-clusters: a shard holds one or more whole sub-clusters"));
  }
  ShardPlan plan;
  plan.shards.resize(shards);
  plan.model.resize(spec.models.size());
  plan.gpu.resize(spec.num_gpus());
  std::vector<GpuId> first_gpu(subs.size(), 0);
  for (size_t i = 1; i < subs.size(); ++i) first_gpu[i] = first_gpu[i - 1] + subs[i - 1].num_gpus;
  std::vector<int> order(subs.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return subs[a].num_gpus > subs[b].num_gpus; });
  std::vector<int> load(shards, 0);
  std::vector<std::vector<int>> placed(shards);
  for (int i : order) {
    const int shard = static_cast<int>(std::min_element(load.begin(), load.end()) - load.begin());
    load[shard] += subs[i].num_gpus;
    placed[shard].push_back(i);
  }
  for (int shard = 0; shard < shards; ++shard) {
    std::sort(placed[shard].begin(), placed[shard].end());
    ShardPlan::Shard& sh = plan.shards[shard];
    sh.spec.delays = spec.delays;
    sh.spec.memory = spec.memory;
    for (int i : placed[shard]) {
      SubCluster local{{}, subs[i].num_gpus};
      for (ModelId m : subs[i].models) {
        plan.model[m] = {shard, static_cast<int>(sh.spec.models.size())};
        local.models.push_back(static_cast<ModelId>(sh.spec.models.size()));
        sh.spec.models.push_back(spec.models[m]);
        sh.global_model.push_back(m);
      }
      for (int k = 0; k < subs[i].num_gpus; ++k) {
        plan.gpu[first_gpu[i] + k] = {shard, static_cast<int>(sh.global_gpu.size())};
        sh.global_gpu.push_back(first_gpu[i] + k);
      }
      sh.spec.sub_clusters.push_back(std::move(local));
      sh.global_sub_cluster.push_back(i);
    }
  }
  return plan;
}

SchedulerOptions ShardOptions(const SchedulerOptions& options, const ShardPlan::Shard& shard) {
  SchedulerOptions local = options;
  if (!options.nexus_initial_rates.empty()) {
    local.nexus_initial_rates.clear();
    for (ModelId m : shard.global_model) {
      local.nexus_initial_rates.push_back(
          m < static_cast<ModelId>(options.nexus_initial_rates.size()) ? options.nexus_initial_rates[m] : 0);
    }
  }
  if (!options.await_sub_clusters.empty()) {
    local.await_sub_clusters.clear();
    for (int i : shard.global_sub_cluster) {
      local.await_sub_clusters.push_back(i < static_cast<int>(options.await_sub_clusters.size()) &&
                                         options.await_sub_clusters[i]);
    }
  }
  return local;
}

}  // namespace tutti
