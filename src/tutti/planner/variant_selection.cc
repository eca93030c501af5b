#include "tutti/planner/variant_selection.h"

#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace tutti {

const char* VariantStateName(VariantState state) {
  switch (state) {
    case VariantState::kInactive:
      return "inactive";
    case VariantState::kActive:
      return "active";
    case VariantState::kOverloaded:
      return "overloaded";
    case VariantState::kInterfered:
      return "interfered";
  }
  return "unknown";
}

VariantState NextVariantState(VariantState current, const VariantObservation& seen,
                              const VariantStateOptions& options) {
  if (!seen.loaded) return VariantState::kInactive;
  // A state once entered holds until its measure falls `hysteresis` below
  // the threshold that entered it.
  const auto above = [&](double measure, double threshold, VariantState state) {
    const double t = current == state ? threshold - options.hysteresis : threshold;
    return measure >= t;
  };
  if (seen.saturation_qps > 0 &&
      above(seen.served_qps / seen.saturation_qps, options.overloaded_at, VariantState::kOverloaded)) {
    return VariantState::kOverloaded;
  }
  if (seen.latency > 0 && seen.profiled > 0 &&
      above(static_cast<double>(seen.latency) / static_cast<double>(seen.profiled), options.interfered_at,
            VariantState::kInterfered)) {
    return VariantState::kInterfered;
  }
  return VariantState::kActive;
}

namespace {

bool Better(const SelectableVariant& a, double key_a, const SelectableVariant& b, double key_b) {
  if (key_a != key_b) return key_a < key_b;
  if (a.queued != b.queued) return a.queued < b.queued;
  return a.cost < b.cost;
}

}  // namespace

VariantChoice SelectVariant(const std::vector<SelectableVariant>& variants, const VariantRequirements& req) {
  VariantChoice choice;
  if (variants.empty()) {
    choice.note = "no variants are registered for this task";
    return choice;
  }
  // One pass: the best of each preference class (-1: none yet).
  int active = -1, inactive = -1, busy = -1;            // meeting every requirement
  int accurate_in_time = -1, accurate = -1, fastest = -1;  // the closest matches
  const auto util = [&](int i) { return variants[i].utilisation; };
  const auto start = [&](int i) { return static_cast<double>(variants[i].load_latency + variants[i].latency); };
  const auto lat = [&](int i) { return static_cast<double>(variants[i].latency); };
  const auto offer = [&](int* best, int i, auto key) {
    if (*best < 0 || Better(variants[i], key(i), variants[*best], key(*best))) *best = i;
  };
  for (int i = 0; i < static_cast<int>(variants.size()); ++i) {
    const SelectableVariant& v = variants[i];
    const bool accurate_enough = v.accuracy >= req.min_accuracy;
    const bool in_time = v.latency <= req.latency_objective;
    const bool affordable = req.max_cost <= 0 || v.cost <= req.max_cost;
    if (accurate_enough && in_time && affordable) {
      switch (v.state) {
        case VariantState::kActive:
          offer(&active, i, util);
          break;
        case VariantState::kInactive:
          offer(&inactive, i, start);
          break;
        case VariantState::kOverloaded:
        case VariantState::kInterfered:
          offer(&busy, i, util);
          break;
      }
      continue;
    }
    if (in_time) offer(&accurate_in_time, i, [&](int k) { return -variants[k].accuracy; });
    if (accurate_enough) offer(&accurate, i, lat);
    offer(&fastest, i, lat);
  }
  for (int i : {active, inactive}) {
    if (i >= 0) return {i, true, ""};
  }
  if (busy >= 0) {
    return {busy, true, absl::StrCat("every variant that meets the requirements is ", VariantStateName(variants[busy].state),
                                     "; served by ", variants[busy].name)};
  }
  choice.index = accurate_in_time >= 0 ? accurate_in_time : accurate >= 0 ? accurate : fastest;
  const SelectableVariant& v = variants[choice.index];
  choice.note = absl::StrFormat(
      "no variant meets accuracy >= %.4g%s%s; closest: %s (accuracy %.4g, %.4g ms%s)", req.min_accuracy,
      req.latency_objective == std::numeric_limits<Duration>::max()
          ? std::string()
          : absl::StrFormat(" within %.4g ms", ToMillis(req.latency_objective)),
      req.max_cost > 0 ? absl::StrFormat(" at cost <= %.4g", req.max_cost) : std::string(), v.name, v.accuracy,
      ToMillis(v.latency), v.cost > 0 ? absl::StrFormat(", cost %.4g", v.cost) : std::string());
  return choice;
}

}  // namespace tutti
