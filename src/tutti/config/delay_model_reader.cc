#include "tutti/config/delay_model_reader.h"

#include "tutti/core/status_macros.h"

namespace tutti {

absl::StatusOr<DelayModelOptions> ReadDelayModelOptions(const YAML::Node& node, const std::string& field) {
  MapReader r(node, field);
  TUTTI_RETURN_IF_ERROR(r.CheckIsMap());
  DelayModelOptions o;
  TUTTI_ASSIGN_OR_RETURN(auto measure, r.OptionalScalar<bool>("measure", "true or false"));
  TUTTI_ASSIGN_OR_RETURN(auto quantile, r.OptionalScalar<double>("quantile", "a number"));
  TUTTI_ASSIGN_OR_RETURN(auto timer_quantile, r.OptionalScalar<double>("timer_quantile", "a number"));
  TUTTI_ASSIGN_OR_RETURN(auto window_s, r.OptionalScalar<double>("window_s", "a number of seconds"));
  TUTTI_ASSIGN_OR_RETURN(auto refresh_ms, r.OptionalScalar<double>("refresh_ms", "a number of milliseconds"));
  TUTTI_ASSIGN_OR_RETURN(auto hold_s, r.OptionalScalar<double>("hold_s", "a number of seconds"));
  TUTTI_ASSIGN_OR_RETURN(auto max_share, r.OptionalScalar<double>("max_share", "a number"));
  TUTTI_ASSIGN_OR_RETURN(auto outliers, r.OptionalScalar<int>("outliers", "an integer"));
  TUTTI_RETURN_IF_ERROR(r.CheckNoUnknownFields());
  for (auto [key, q] : {std::pair<const char*, std::optional<double>>{"quantile", quantile},
                        {"timer_quantile", timer_quantile}}) {
    if (q && !(*q > 0 && *q <= 1)) return Invalid(r.FieldPath(key), "must be in (0, 1]");
  }
  if (window_s && !(*window_s > 0 && *window_s <= 3600)) return Invalid(r.FieldPath("window_s"), "must be in (0, 3600]");
  if (refresh_ms && !(*refresh_ms >= 1)) return Invalid(r.FieldPath("refresh_ms"), "must be at least 1");
  if (hold_s && !(*hold_s >= 0 && *hold_s <= 3600)) return Invalid(r.FieldPath("hold_s"), "must be in [0, 3600]");
  if (max_share && !(*max_share > 0 && *max_share <= 1)) return Invalid(r.FieldPath("max_share"), "must be in (0, 1]");
  if (outliers && *outliers < 0) return Invalid(r.FieldPath("outliers"), "must not be negative");
  o.measure = measure.value_or(o.measure);
  o.quantile = quantile.value_or(o.quantile);
  o.timer_quantile = timer_quantile.value_or(o.timer_quantile);
  if (window_s) o.window = Seconds(*window_s);
  if (refresh_ms) o.refresh = Millis(*refresh_ms);
  if (hold_s) o.hold = Seconds(*hold_s);
  o.max_share = max_share.value_or(o.max_share);
  o.outliers = outliers.value_or(o.outliers);
  if (o.refresh > o.window) return Invalid(r.FieldPath("refresh_ms"), "must not exceed the window");
  if (o.window / o.refresh > 1000) {
    return Invalid(r.FieldPath("window_s"), "may hold at most 1000 refresh periods (raise refresh_ms)");
  }
  return o;
}

}  // namespace tutti
