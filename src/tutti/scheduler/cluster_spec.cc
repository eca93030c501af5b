#include "tutti/scheduler/cluster_spec.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace tutti {

absl::string_view DropReasonName(DropReason reason) {
  switch (reason) {
    case DropReason::kDeadline:
      return "deadline";
    case DropReason::kEarlyDrop:
      return "early_drop";
    case DropReason::kWithdrawn:
      return "withdrawn";
  }
  return "unknown";
}

int ModelSpec::EffectiveMaxBatch() const {
  return max_batch > 0 ? std::min(max_batch, profile.max_batch()) : profile.max_batch();
}

int ClusterSpec::num_gpus() const {
  if (sub_clusters.empty()) return gpus;
  int n = 0;
  for (const SubCluster& s : sub_clusters) n += s.num_gpus;
  return n;
}

std::vector<SubCluster> ClusterSpec::EffectiveSubClusters() const {
  if (!sub_clusters.empty()) return sub_clusters;
  SubCluster all;
  all.num_gpus = gpus;
  for (ModelId m = 0; m < static_cast<ModelId>(models.size()); ++m) all.models.push_back(m);
  return {all};
}

std::vector<int> ClusterSpec::LocalIndex() const {
  std::vector<int> index(models.size());
  for (const SubCluster& sub : EffectiveSubClusters()) {
    for (size_t i = 0; i < sub.models.size(); ++i) index[sub.models[i]] = static_cast<int>(i);
  }
  return index;
}

absl::Status ValidateClusterSpec(const ClusterSpec& spec) {
  if (spec.models.empty()) return absl::InvalidArgumentError("cluster has no models");
  if (spec.num_gpus() < 1) return absl::InvalidArgumentError("cluster has no GPUs");
  for (const ModelSpec& m : spec.models) {
    if (m.profile.max_batch() < 1) {
      return absl::InvalidArgumentError(absl::StrCat("model ", m.name, " has no latency profile"));
    }
    if (m.slo <= 0) return absl::InvalidArgumentError(absl::StrCat("model ", m.name, ": SLO must be positive"));
    if (m.max_batch < 0 || m.max_batch > m.profile.max_batch()) {
      return absl::InvalidArgumentError(absl::StrCat("model ", m.name, ": max_batch ", m.max_batch,
                                                     " outside 1..", m.profile.max_batch()));
    }
    if (m.max_queue_delay < 0) {
      return absl::InvalidArgumentError(absl::StrCat("model ", m.name, ": negative max_queue_delay"));
    }
  }
  std::vector<int> owners(spec.models.size());
  for (const SubCluster& s : spec.EffectiveSubClusters()) {
    if (s.num_gpus < 1) return absl::InvalidArgumentError("a sub-cluster has no GPUs");
    for (ModelId m : s.models) {
      if (m < 0 || m >= static_cast<ModelId>(spec.models.size())) {
        return absl::InvalidArgumentError(absl::StrCat("sub-cluster names unknown model id ", m));
      }
      ++owners[m];
    }
  }
  for (size_t m = 0; m < owners.size(); ++m) {
    if (owners[m] != 1) {
      return absl::InvalidArgumentError(absl::StrCat("model ", spec.models[m].name, " is in ",
                                                     owners[m], " sub-clusters; it must be in one"));
    }
  }
  if (const MemoryBudget& mem = spec.memory; mem.gpu_bytes < 0 || !(mem.bytes_per_s > 0) || mem.overhead < 0) {
    return absl::InvalidArgumentError("memory budget: negative GPU bytes or overhead, or a bandwidth that is not positive");
  } else if (mem.limited()) {
    for (const ModelSpec& m : spec.models) {
      if (m.load_time < 0) return absl::InvalidArgumentError(absl::StrCat("model ", m.name, ": negative load time"));
      if (m.weights_bytes <= 0 || m.weights_bytes > mem.gpu_bytes) {
        return absl::InvalidArgumentError(absl::StrCat("model ", m.name, ": weights of ", m.weights_bytes,
                                                       " bytes do not fit a GPU of ", mem.gpu_bytes));
      }
    }
  }
  const NetworkDelays& d = spec.delays;
  if (d.ctrl < 0 || d.data_per_request < 0 || d.resp < 0) {
    return absl::InvalidArgumentError("network delays must not be negative");
  }
  return absl::OkStatus();
}

}  // namespace tutti
