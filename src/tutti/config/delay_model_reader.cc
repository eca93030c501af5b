#include "tutti/config/delay_model_reader.h"

#include <map>

#include "absl/strings/numbers.h"
#include "tutti/core/status_macros.h"

namespace tutti {
namespace {

absl::StatusOr<DelayDistribution> ReadDistribution(const YAML::Node& node, const std::string& field) {
  constexpr absl::string_view kForms =
      "expected one of {constant: US}, {uniform: [LO, HI]}, {exponential: MEAN}, {lognormal: {median: M, p999: P}}, "
      "{quantiles: {Q: US, …, 1: US}}";
  if (!node.IsMap() || node.size() != 1) return Invalid(field, kForms);
  const std::string form = node.begin()->first.as<std::string>();
  const YAML::Node v = node.begin()->second;
  const std::string where = absl::StrCat(field, ".", form);
  auto number = [&](const YAML::Node& n, const std::string& at) -> absl::StatusOr<double> {
    double x = 0;
    if (!n.IsScalar() || !absl::SimpleAtod(n.Scalar(), &x) || !(x >= 0)) {
      return Invalid(at, "expected a non-negative number of microseconds");
    }
    return x;
  };
  absl::StatusOr<DelayDistribution> d = absl::InvalidArgumentError("");
  if (form == "constant") {
    TUTTI_ASSIGN_OR_RETURN(double us, number(v, where));
    return DelayDistribution::Constant(Micros(us));
  } else if (form == "uniform") {
    if (!v.IsSequence() || v.size() != 2) return Invalid(where, "expected [LOW, HIGH]");
    TUTTI_ASSIGN_OR_RETURN(double lo, number(v[0], where));
    TUTTI_ASSIGN_OR_RETURN(double hi, number(v[1], where));
    d = DelayDistribution::Uniform(Micros(lo), Micros(hi));
  } else if (form == "exponential") {
    TUTTI_ASSIGN_OR_RETURN(double mean, number(v, where));
    d = DelayDistribution::Exponential(Micros(mean));
  } else if (form == "lognormal") {
    MapReader r(v, where);
    TUTTI_RETURN_IF_ERROR(r.CheckIsMap());
    TUTTI_ASSIGN_OR_RETURN(double median, r.RequireScalar<double>("median", "a number of microseconds"));
    TUTTI_ASSIGN_OR_RETURN(double p999, r.RequireScalar<double>("p999", "a number of microseconds"));
    TUTTI_RETURN_IF_ERROR(r.CheckNoUnknownFields());
    d = DelayDistribution::LogNormal(Micros(median), Micros(p999));
  } else if (form == "quantiles") {
    if (!v.IsMap()) return Invalid(where, "expected {QUANTILE: US, …}");
    std::map<double, Duration> points;
    for (const auto& kv : v) {
      double q = 0;
      if (!absl::SimpleAtod(kv.first.Scalar(), &q)) return Invalid(where, "quantiles must be numbers in (0, 1]");
      TUTTI_ASSIGN_OR_RETURN(double us, number(kv.second, where));
      points[q] = Micros(us);
    }
    d = DelayDistribution::FromQuantiles(std::move(points));
  } else {
    return Invalid(field, absl::StrCat("unknown distribution '", form, "'; ", kForms));
  }
  if (!d.ok()) return Invalid(where, d.status().message());
  return d;
}

}  // namespace

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
  TUTTI_ASSIGN_OR_RETURN(auto min_samples, r.OptionalScalar<int64_t>("min_samples", "an integer"));
  TUTTI_ASSIGN_OR_RETURN(auto overload_margins, r.OptionalScalar<bool>("overload_margins", "true or false"));
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
  if (min_samples && *min_samples < 0) return Invalid(r.FieldPath("min_samples"), "must not be negative");
  o.measure = measure.value_or(o.measure);
  o.quantile = quantile.value_or(o.quantile);
  o.timer_quantile = timer_quantile.value_or(o.timer_quantile);
  if (window_s) o.window = Seconds(*window_s);
  if (refresh_ms) o.refresh = Millis(*refresh_ms);
  if (hold_s) o.hold = Seconds(*hold_s);
  o.max_share = max_share.value_or(o.max_share);
  o.outliers = outliers.value_or(o.outliers);
  o.min_samples = min_samples.value_or(o.min_samples);
  o.overload_margins = overload_margins.value_or(o.overload_margins);
  if (o.refresh > o.window) return Invalid(r.FieldPath("refresh_ms"), "must not exceed the window");
  if (o.window / o.refresh > 1000) {
    return Invalid(r.FieldPath("window_s"), "may hold at most 1000 refresh periods (raise refresh_ms)");
  }
  return o;
}

absl::StatusOr<DelayInjection> ReadDelayInjection(const YAML::Node& node, const std::string& field) {
  MapReader r(node, field);
  TUTTI_RETURN_IF_ERROR(r.CheckIsMap());
  DelayInjection inject;
  TUTTI_ASSIGN_OR_RETURN(auto seed, r.OptionalScalar<uint64_t>("seed", "an integer"));
  inject.seed = seed.value_or(1);
  for (auto [key, out] : {std::pair<const char*, std::optional<DelayDistribution>*>{"dispatch_us", &inject.dispatch},
                          {"response_us", &inject.response},
                          {"timer_us", &inject.timer}}) {
    if (YAML::Node d = r.Get(key); d.IsDefined()) {
      TUTTI_ASSIGN_OR_RETURN(*out, ReadDistribution(d, r.FieldPath(key)));
    }
  }
  TUTTI_ASSIGN_OR_RETURN(auto per_batch, r.OptionalScalar<bool>("response_per_batch", "true or false"));
  inject.response_per_batch = per_batch.value_or(false);
  if (YAML::Node scales = r.Get("compute_scale"); scales.IsDefined()) {
    if (!scales.IsMap()) return Invalid(r.FieldPath("compute_scale"), "expected {GPU: FACTOR, …}");
    for (const auto& kv : scales) {
      int gpu = -1;
      double factor = 0;
      if (!absl::SimpleAtoi(kv.first.Scalar(), &gpu) || gpu < 0 || !kv.second.IsScalar() ||
          !absl::SimpleAtod(kv.second.Scalar(), &factor) || !(factor > 0)) {
        return Invalid(r.FieldPath("compute_scale"), "expected GPU ids mapped to positive factors");
      }
      inject.compute_scale[gpu] = factor;
    }
  }
  TUTTI_RETURN_IF_ERROR(r.CheckNoUnknownFields());
  return inject;
}

}  // namespace tutti
