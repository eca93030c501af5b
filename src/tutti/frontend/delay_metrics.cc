#include "tutti/frontend/delay_metrics.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "tutti/core/prometheus.h"

namespace tutti {
namespace {

// The quantile the plan covers; before the first plan (or without
// measuring): the configured one.
double PlannedQuantile(const DelayReport& r) {
  return r.estimates.planned_quantile > 0 ? r.estimates.planned_quantile : r.options.quantile;
}

// The planned delays by name, in the order both outputs list them.
std::vector<std::pair<const char*, Duration>> Planned(const DelayPlan& p) {
  return {{"dispatch", p.network.ctrl},
          {"data_per_request", p.network.data_per_request},
          {"response", p.network.resp},
          {"frontrun_slack", p.frontrun_slack},
          {"head_guard", p.head_guard}};
}

}  // namespace

std::string DelayStatsJson(const DelayReport& r, ModelId model) {
  std::vector<std::string> planned, measured, compute;
  for (const auto& [name, d] : Planned(r.plan)) planned.push_back(absl::StrFormat(R"("%s":%.1f)", name, ToMicros(d)));
  for (Delay d : kAllDelays) {
    const DelayEstimates::Measured& m = r.estimates[d];
    measured.push_back(m.value ? absl::StrFormat(R"("%s":%.1f)", DelayName(d), ToMicros(*m.value))
                               : absl::StrFormat(R"("%s":null)", DelayName(d)));
  }
  measured.push_back(r.estimates.timer_tail ? absl::StrFormat(R"("timer_tail":%.1f)", ToMicros(*r.estimates.timer_tail))
                                            : R"("timer_tail":null)");
  for (const DelayEstimates::Compute& c : r.estimates.compute) {
    if (model != kAnyModel && c.model != model) continue;
    compute.push_back(absl::StrFormat(
        R"({"executor":%d,"model":%d,"batches":%d,"ratio":%.4f,"scale":%.4f,"tail_scale":%.4f,"late_start_us":%.1f})", c.gpu,
        c.model, c.batches, c.ratio, c.scale, c.tail_scale, ToMicros(c.late_start)));
  }
  return absl::StrFormat(R"({"measured":%s,"quantile":%g,"planned_quantile":%g,"window_s":%g,"planned_us":{%s},)"
                         R"("measured_us":{%s},"compute":[%s]})",
                         r.options.measure ? "true" : "false", r.options.quantile, PlannedQuantile(r),
                         ToSeconds(r.options.window),
                         absl::StrJoin(planned, ","), absl::StrJoin(measured, ","), absl::StrJoin(compute, ","));
}

std::string DelayPrometheusText(const DelayReport& r, const std::vector<std::string>& model_names) {
  std::string out =
      PromFamily("tutti_planned_delay_seconds", "gauge",
                 "Delays the scheduler plans with now: dispatch (d_ctrl), data_per_request (d_data), response "
                 "(d_resp), frontrun_slack, head_guard; measured, or their configured floors.");
  for (const auto& [name, d] : Planned(r.plan)) {
    absl::StrAppendFormat(&out, "tutti_planned_delay_seconds{delay=\"%s\"} %.9f\n", name, ToSeconds(d));
  }
  out += PromFamily("tutti_planned_delay_quantile", "gauge",
                    "The quantile of the measured dispatch and response delays the plan covers: the configured "
                    "one, or a lower one under overload.");
  absl::StrAppendFormat(&out, "tutti_planned_delay_quantile %g\n", PlannedQuantile(r));
  out += PromFamily("tutti_measured_delay_seconds", "gauge",
                    "Measured delays at the planning quantile over the window (absent before any sample).");
  std::string samples =
      PromFamily("tutti_measured_delay_samples", "gauge", "Samples of each measured delay in the window.");
  for (Delay d : kAllDelays) {
    const DelayEstimates::Measured& m = r.estimates[d];
    if (m.value) {
      absl::StrAppendFormat(&out, "tutti_measured_delay_seconds{delay=\"%s\",quantile=\"%g\"} %.9f\n", DelayName(d),
                            d == Delay::kTimer ? r.options.timer_quantile : r.options.quantile, ToSeconds(*m.value));
    }
    if (d == Delay::kTimer && r.estimates.timer_tail) {
      absl::StrAppendFormat(&out, "tutti_measured_delay_seconds{delay=\"timer\",quantile=\"%g\"} %.9f\n",
                            r.options.quantile, ToSeconds(*r.estimates.timer_tail));
    }
    absl::StrAppendFormat(&samples, "tutti_measured_delay_samples{delay=\"%s\"} %d\n", DelayName(d), m.samples);
  }
  std::string histograms =
      PromFamily("tutti_delay_seconds", "histogram",
                 "Every measured delay since the engine started, however the plan covers it: dispatch (the decision "
                 "to the batch at its executor), response, timer lateness.");
  for (Delay d : kAllDelays) {
    const DelayHistogram& h = r.histograms[static_cast<int>(d)];
    int64_t at_or_below = 0;
    for (size_t i = 0; i < h.counts.size(); ++i) {
      at_or_below += h.counts[i];
      const std::string le = i < DelayHistogram::kBounds.size()
                                 ? absl::StrFormat("%g", ToSeconds(DelayHistogram::kBounds[i]))
                                 : std::string("+Inf");
      absl::StrAppendFormat(&histograms, "tutti_delay_seconds_bucket{delay=\"%s\",le=\"%s\"} %d\n", DelayName(d),
                            le, at_or_below);
    }
    absl::StrAppendFormat(&histograms, "tutti_delay_seconds_sum{delay=\"%s\"} %.9f\n", DelayName(d),
                          ToSeconds(h.sum));
    absl::StrAppendFormat(&histograms, "tutti_delay_seconds_count{delay=\"%s\"} %d\n", DelayName(d), at_or_below);
  }
  std::string ratio =
      PromFamily("tutti_compute_ratio", "gauge", "Real over profiled batch compute time, median over the window.");
  std::string scale =
      PromFamily("tutti_compute_scale", "gauge",
                 "The profile scale the scheduler plans with (1 within 5% of the ratio).");
  std::string tail =
      PromFamily("tutti_compute_tail_scale", "gauge",
                 "The profile scale deadlines are planned with (the ratio at the planning quantile).");
  std::string late =
      PromFamily("tutti_compute_late_start_seconds", "gauge",
                 "How late batches start after they could, at the planning quantile.");
  for (const DelayEstimates::Compute& c : r.estimates.compute) {
    const std::string labels = absl::StrFormat(R"(executor="%d",model="%s")", c.gpu,
                                               c.model < static_cast<ModelId>(model_names.size()) ? model_names[c.model]
                                                                                                   : "?");
    absl::StrAppendFormat(&ratio, "tutti_compute_ratio{%s} %.6f\n", labels, c.ratio);
    absl::StrAppendFormat(&scale, "tutti_compute_scale{%s} %.6f\n", labels, c.scale);
    absl::StrAppendFormat(&tail, "tutti_compute_tail_scale{%s} %.6f\n", labels, c.tail_scale);
    absl::StrAppendFormat(&late, "tutti_compute_late_start_seconds{%s} %.9f\n", labels, ToSeconds(c.late_start));
  }
  std::string choices;
  if (!r.choices.empty()) {
    choices =
        PromFamily("tutti_scheduling_choice", "gauge",
                   "How each sub-cluster makes its batches now under the adaptive policy (prompt, scarce, eager+early "
                   "or eager): 1 for its choice.");
  }
  for (size_t i = 0; i < r.choices.size(); ++i) {
    absl::StrAppendFormat(&choices, "tutti_scheduling_choice{sub_cluster=\"%d\",choice=\"%s\"} 1\n", i, r.choices[i]);
  }
  return out + samples + histograms + ratio + scale + tail + late + choices;
}

}  // namespace tutti
