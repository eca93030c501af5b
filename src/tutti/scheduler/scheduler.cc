#include "tutti/scheduler/scheduler.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "tutti/core/status_macros.h"
#include "tutti/scheduler/adaptive_scheduler.h"
#include "tutti/scheduler/candidate_scheduler.h"
#include "tutti/scheduler/load_scheduler.h"
#include "tutti/scheduler/nexus_scheduler.h"

namespace tutti {

absl::Status Scheduler::SetGpuUp(GpuId, bool, Time) {
  return absl::UnimplementedError("this scheduling policy plans its GPUs ahead and cannot add or remove them");
}

const std::vector<std::string>& SchedulerPolicyNames() {
  static const std::vector<std::string>* names =
      new std::vector<std::string>{"deferred", "adaptive", "eager", "timeout", "nexus", "loads"};
  return *names;
}

absl::StatusOr<std::unique_ptr<Scheduler>> CreateScheduler(const std::string& policy,
                                                          const ClusterSpec& spec,
                                                          const SchedulerOptions& options,
                                                          Clock* clock,
                                                          SchedulerListener* listener) {
  TUTTI_RETURN_IF_ERROR(ValidateClusterSpec(spec));
  if (policy == "loads") {
    if (spec.sub_clusters.size() > 1) {
      return absl::InvalidArgumentError("the loads policy takes one sub-cluster: every GPU may load any model");
    }
    return std::unique_ptr<Scheduler>(std::make_unique<LoadScheduler>(spec, options, clock, listener));
  }
  if (spec.memory.limited()) {
    return absl::InvalidArgumentError(absl::StrCat("a memory budget needs the loads policy, which plans loads; '",
                                                   policy, "' keeps every model loaded"));
  }
  if (policy == "nexus") {
    return std::unique_ptr<Scheduler>(std::make_unique<NexusScheduler>(spec, options, clock, listener));
  }
  if (policy == "adaptive") {
    return std::unique_ptr<Scheduler>(std::make_unique<AdaptiveScheduler>(spec, options, clock, listener));
  }
  BatchPolicyKind kind;
  if (policy == "deferred") {
    kind = BatchPolicyKind::kDeferred;
  } else if (policy == "eager") {
    kind = BatchPolicyKind::kEager;
  } else if (policy == "timeout") {
    kind = BatchPolicyKind::kTimeout;
  } else {
    return absl::InvalidArgumentError(absl::StrCat("unknown scheduling policy '", policy,
                                                   "' (expected one of ",
                                                   absl::StrJoin(SchedulerPolicyNames(), ", "), ")"));
  }
  return std::unique_ptr<Scheduler>(
      std::make_unique<CandidateScheduler>(spec, options, clock, listener, RankPolicy{.kind = kind}));
}

}  // namespace tutti
