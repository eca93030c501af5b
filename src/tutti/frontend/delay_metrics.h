// How the frontends show the delays an engine's scheduler plans with
// (serving/inference_engine.h's DelayReport): in /v2/models/{m}/stats and
// in /metrics. Planned delays are what the scheduler uses now (a measured
// delay, or its configured floor); measured ones are the estimates at the
// planning quantile over the window, absent before any sample.
#ifndef TUTTI_FRONTEND_DELAY_METRICS_H_
#define TUTTI_FRONTEND_DELAY_METRICS_H_

#include <string>
#include <vector>

#include "tutti/serving/inference_engine.h"

namespace tutti {

// {"quantile", "window_s", "planned_us": {…}, "measured_us": {…},
// "compute": [{"executor", "model", "batches", "ratio", "scale", "tail_scale", "late_start_us"}]}
// with the compute entries of `model` only, or of every model (kAnyModel).
inline constexpr ModelId kAnyModel = -1;
std::string DelayStatsJson(const DelayReport& report, ModelId model);

// Prometheus text: tutti_planned_delay_seconds, tutti_measured_delay_seconds,
// tutti_measured_delay_samples, the histogram tutti_delay_seconds (every
// sample so far, by delay), and per executor and model
// tutti_compute_ratio, tutti_compute_scale, tutti_compute_tail_scale,
// tutti_compute_late_start_seconds, and under `adaptive` per sub-cluster
// tutti_scheduling_choice. `model_names[m]` labels model m.
std::string DelayPrometheusText(const DelayReport& report, const std::vector<std::string>& model_names);

}  // namespace tutti

#endif  // TUTTI_FRONTEND_DELAY_METRICS_H_
