#include "tutti/config/autoscale_reader.h"

#include "tutti/core/status_macros.h"

namespace tutti {

absl::StatusOr<AutoscaleOptions> ReadAutoscaleOptions(const YAML::Node& node, const std::string& field) {
  MapReader r(node, field);
  TUTTI_RETURN_IF_ERROR(r.CheckIsMap());
  AutoscaleOptions o;
  TUTTI_ASSIGN_OR_RETURN(auto interval_s, r.OptionalScalar<double>("interval_s", "a number of seconds"));
  TUTTI_ASSIGN_OR_RETURN(auto threshold, r.OptionalScalar<double>("bad_rate_threshold", "a number"));
  TUTTI_ASSIGN_OR_RETURN(auto headroom, r.OptionalScalar<double>("headroom", "a number"));
  TUTTI_ASSIGN_OR_RETURN(auto min_gpus, r.OptionalScalar<int>("min_gpus", "an integer"));
  TUTTI_ASSIGN_OR_RETURN(auto max_gpus, r.OptionalScalar<int>("max_gpus", "an integer"));
  TUTTI_ASSIGN_OR_RETURN(auto initial_gpus, r.OptionalScalar<int>("initial_gpus", "an integer"));
  TUTTI_ASSIGN_OR_RETURN(auto provision_s, r.OptionalScalar<double>("provision_delay_s", "a number of seconds"));
  TUTTI_ASSIGN_OR_RETURN(auto trend_s, r.OptionalScalar<double>("trend_window_s", "a number of seconds"));
  TUTTI_RETURN_IF_ERROR(r.CheckNoUnknownFields());
  if (interval_s && !(*interval_s > 0)) return Invalid(r.FieldPath("interval_s"), "must be positive");
  if (threshold && !(*threshold >= 0 && *threshold < 1)) {
    return Invalid(r.FieldPath("bad_rate_threshold"), "must be in [0, 1)");
  }
  if (headroom && !(*headroom >= 0 && *headroom < 1)) return Invalid(r.FieldPath("headroom"), "must be in [0, 1)");
  if (min_gpus && *min_gpus < 1) return Invalid(r.FieldPath("min_gpus"), "must be at least 1");
  if (max_gpus && *max_gpus < 0) return Invalid(r.FieldPath("max_gpus"), "must not be negative");
  if (initial_gpus && *initial_gpus < 0) return Invalid(r.FieldPath("initial_gpus"), "must not be negative");
  if (provision_s && !(*provision_s >= 0)) return Invalid(r.FieldPath("provision_delay_s"), "must not be negative");
  if (trend_s && !(*trend_s >= 0)) return Invalid(r.FieldPath("trend_window_s"), "must not be negative");
  if (interval_s) o.interval = Seconds(*interval_s);
  o.bad_rate_threshold = threshold.value_or(o.bad_rate_threshold);
  o.headroom = headroom.value_or(o.headroom);
  o.min_gpus = min_gpus.value_or(o.min_gpus);
  o.max_gpus = max_gpus.value_or(o.max_gpus);
  o.initial_gpus = initial_gpus.value_or(o.initial_gpus);
  if (provision_s) o.provision_delay = Seconds(*provision_s);
  if (trend_s) o.trend_window = Seconds(*trend_s);
  return o;
}

}  // namespace tutti
