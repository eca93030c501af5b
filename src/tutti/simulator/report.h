// Human- and machine-readable output of simulations: tables, CSV, and plots
// rendered with gnuplot.
#ifndef TUTTI_SIMULATOR_REPORT_H_
#define TUTTI_SIMULATOR_REPORT_H_

#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "tutti/simulator/simulator.h"

namespace tutti {

// Per-model rows (the first `max_rows`, then a count of the rest) and a
// total row: arrivals, offered rate, goodput, bad rate, p50/p99/p99.9
// latency (drops as ∞), mean batch, mean queueing; then GPU use and
// scaling advice.
void PrintSimResult(const SimResult& result, std::ostream& out, int max_rows = 40);

// One row per policy: goodput, bad rate, p99, mean batch, GPUs used, and
// each policy's goodput as a multiple of the others'.
struct PolicyRun {
  std::string label;   // e.g. "timeout(2ms)"
  double goodput = 0;  // requests/s
  SimResult result;
};
void PrintComparison(const std::vector<PolicyRun>& runs, std::ostream& out);

// CSV: policy,model,arrived,good,late,dropped,goodput_rps,bad_rate,p50_ms,
// p99_ms,p999_ms,mean_batch,mean_queue_ms — one row per model and a total.
absl::Status WriteCsv(const std::vector<PolicyRun>& runs, const std::string& path);

// Writes plots into `dir` with gnuplot: goodput.png (goodput per policy),
// batch_cdf.png (CDF of batch sizes per policy) and, for runs that recorded
// one, timeline_<label>.png (which GPU ran what, when). FailedPrecondition
// if gnuplot is not installed.
absl::Status WritePlots(const std::vector<PolicyRun>& runs, const std::string& dir);

// The data of a simulation's HTML report (console/console_assets.h's
// "simulation" kind): {"policy", "gpus", "interval_s", "models": [names],
// "t": [interval start, s], "good"/"bad": [[r/s per interval] per model],
// "bad_total", "gpus_used", "advice_add", "advice_remove", "bad_rate": [per
// interval], "loads" (per s) and "memory_gb" (the most held, all GPUs):
// [per interval, with a memory budget; else empty], "summary":
// {offered_rps, goodput_rps, bad_rate, gpus_used}}. Beyond 12 models, the
// 11 with the most goodput and one entry summing the others.
// REQUIRES: result.series was kept (SimConfig::series_interval).
// `policy`: the run's label (e.g. "deferred+early").
std::string SimReportJson(const SimResult& result, const std::string& policy, int gpus);

}  // namespace tutti

#endif  // TUTTI_SIMULATOR_REPORT_H_
