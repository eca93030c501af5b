#include "tutti/config/scheduler_reader.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "tutti/config/adaptive_reader.h"
#include "tutti/config/drop_policy_reader.h"
#include "tutti/core/status_macros.h"

namespace tutti {

namespace {

bool KnownPolicy(const std::string& policy, bool variants) {
  const std::vector<std::string> parts = absl::StrSplit(policy, '+');
  const auto& names = SchedulerPolicyNames();
  if (std::find(names.begin(), names.end(), parts[0]) == names.end()) return false;
  if (!variants) return parts.size() == 1;
  SchedulerOptions scratch;
  for (size_t i = 1; i < parts.size(); ++i) {
    if (!ApplyPolicyVariant(parts[i], &scratch)) return false;
  }
  return true;
}

}  // namespace

bool ApplyPolicyVariant(absl::string_view variant, SchedulerOptions* options) {
  if (variant == "early") {
    options->drop = DropPolicy::kEarly;
  } else if (variant == "latency") {
    options->deferral = Deferral::kLatency;
  } else if (variant == "consolidate") {
    options->deferral = Deferral::kConsolidate;
  } else if (variant == "lru") {
    options->eviction = SchedulerOptions::Eviction::kLru;
  } else if (variant == "on_demand") {
    options->load_mode = SchedulerOptions::LoadMode::kOnDemand;
  } else if (variant == "first_request") {
    options->load_mode = SchedulerOptions::LoadMode::kFirstRequest;
  } else {
    return false;
  }
  return true;
}

absl::StatusOr<SchedulerFields> ReadSchedulerFields(MapReader& r, SchedulerOptions* options, bool variants) {
  SchedulerFields f;
  TUTTI_ASSIGN_OR_RETURN(f.policy, r.OptionalScalar<std::string>("policy", "a string"));
  if (f.policy && !KnownPolicy(*f.policy, variants)) {
    return Invalid(r.FieldPath("policy"),
                   absl::StrCat("unknown policy '", *f.policy, "' (expected one of ",
                                absl::StrJoin(SchedulerPolicyNames(), ", "),
                                variants ? "; +early, +latency, +consolidate (and for loads: +lru, +on_demand, +first_request) may follow"
                                         : "", ")"));
  }
  TUTTI_ASSIGN_OR_RETURN(std::optional<DropPolicy> drop, ReadDropPolicy(r));
  if (drop) options->drop = *drop;
  TUTTI_ASSIGN_OR_RETURN(f.deferral, ReadAdaptiveOptions(r, options));
  TUTTI_ASSIGN_OR_RETURN(auto slack, r.OptionalScalar<double>("frontrun_slack_ms", "a number"));
  if (slack && !(*slack >= 0)) return Invalid(r.FieldPath("frontrun_slack_ms"), "must not be negative");
  if (slack) options->frontrun_slack = Millis(*slack);
  TUTTI_ASSIGN_OR_RETURN(auto guard_share, r.OptionalScalar<double>("head_guard_share", "a number"));
  if (guard_share && !(*guard_share >= 0 && *guard_share < 1)) {
    return Invalid(r.FieldPath("head_guard_share"), "must be in [0, 1)");
  }
  if (guard_share) options->head_guard_share = *guard_share;
  return f;
}

}  // namespace tutti
