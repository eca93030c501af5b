// InferenceFrontend's figures: per-model samples for the console, the
// stats extension's JSON, and the Prometheus exposition.
#include <cmath>
#include <limits>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "tutti/core/prometheus.h"
#include "tutti/frontend/delay_metrics.h"
#include "tutti/frontend/frontend_state.h"

namespace tutti {
namespace {

// A graph's steps for its stats (`,"steps":[…]`); "" for a model.
std::string StepsJson(const ModelCounters& c) {
  if (c.steps.empty()) return "";
  std::vector<std::string> steps;
  for (const ModelCounters::Step& s : c.steps) {
    steps.push_back(absl::StrFormat(
        R"({"model_name":"%s","deadline_share":%.4f,"success":%d,"late":%d,"dropped":%d,"error":%d})", s.model,
        s.deadline_share, s.good, s.late, s.dropped, s.error));
  }
  return absl::StrCat(R"(,"steps":[)", absl::StrJoin(steps, ","), "]");
}

}  // namespace

std::vector<InferenceFrontend::ModelSample> InferenceFrontend::Sample() const {
  std::vector<ModelCounters> counters = engine_->Counters();
  std::vector<ModelSample> out(models_.size());
  for (size_t m = 0; m < models_.size(); ++m) {
    const ModelState& s = *models_[m];
    out[m].counters = std::move(counters[m]);
    out[m].rejected = s.rejected.load();
    out[m].overloaded = s.overloaded.load();
    out[m].latency_buckets = s.latency_seconds.Buckets();
    out[m].batch_buckets = s.batch_size.Buckets();
  }
  return out;
}

std::string InferenceFrontend::StatsJson(int model) const {
  const ModelCounters c = engine_->Counters()[model];
  const ModelState& s = *models_[model];
  const double timed = static_cast<double>(std::max<int64_t>(1, s.queue_seconds.count()));
  return absl::StrFormat(
      R"({"model_name":"%s","model_version":"%d","success":%d,"late":%d,"dropped":%d,"error":%d,"cancelled":%d,)"
      R"("rejected":%d,"overloaded":%d,"queued":%d,"reconstructed":%d,"batches":%d,"mean_batch_size":%.3f,"mean_queue_us":%.1f,)"
      R"("mean_compute_us":%.1f,"peak_rps":%.1f,"delays":%s%s%s})",
      s.served.config.name, s.served.version, c.good, c.late, c.dropped, c.error, c.cancelled, s.rejected.load(),
      s.overloaded.load(),
      s.queued.load(), c.reconstructed,
      c.batches, c.batches ? static_cast<double>(c.batched_requests) / c.batches : 0.0,
      s.queue_seconds.sum() / timed * 1e6, s.compute_seconds.sum() / timed * 1e6, s.served.peak_rps,
      DelayStatsJson(engine_->Delays(), model), StepsJson(c),
      c.loaded_on ? absl::StrCat(R"(,"loaded_on":[)", absl::StrJoin(*c.loaded_on, ","), "]") : "");
}

InferenceFrontend::Statistics InferenceFrontend::ModelStatistics(int model) const {
  const ModelState& s = *models_[model];
  Statistics out;
  out.success = s.success.Load();
  out.fail = s.fail.Load();
  out.queue = s.queue.Load();
  out.compute_infer = s.compute_infer.Load();
  out.compute_input = out.compute_output = {out.compute_infer.count, 0};
  out.inference_count = s.inference_count.load();
  out.execution_count = std::llround(s.executions.load());
  out.last_inference_ms = s.last_inference_ms.load();
  return out;
}

std::string InferenceFrontend::StatisticsJson(const std::vector<int>& models) const {
  auto summed = [](const Statistics::Summed& d) { return absl::StrFormat(R"({"count":%d,"ns":%d})", d.count, d.ns); };
  std::vector<std::string> entries;
  for (int m : models) {
    const Statistics st = ModelStatistics(m);
    const ServedModel& served = models_[m]->served;
    entries.push_back(absl::StrFormat(
        R"({"name":"%s","version":"%d","last_inference":%d,"inference_count":%d,"execution_count":%d,)"
        R"("inference_stats":{"success":%s,"fail":%s,"queue":%s,"compute_input":%s,"compute_infer":%s,)"
        R"("compute_output":%s,"cache_hit":%s,"cache_miss":%s},"batch_stats":[],"tutti":%s})",
        served.config.name, served.version, st.last_inference_ms, st.inference_count, st.execution_count,
        summed(st.success), summed(st.fail), summed(st.queue), summed(st.compute_input), summed(st.compute_infer),
        summed(st.compute_output), summed({}), summed({}), StatsJson(m)));
  }
  return absl::StrCat(R"({"model_stats":[)", absl::StrJoin(entries, ","), "]}");
}

std::string InferenceFrontend::PrometheusText() const {
  const std::vector<ModelCounters> counters = engine_->Counters();
  std::string out =
      PromFamily("tutti_requests_total", "counter", "Inference requests by model and outcome.");
  std::string batches = PromFamily("tutti_batches_total", "counter", "Batches executed.");
  std::string attainment =
      PromFamily("tutti_slo_attainment", "gauge", "Fraction of ended requests answered on time.");
  std::string queue =
      PromFamily("tutti_queue_duration_seconds", "histogram", "Arrival to batch start, answered requests.");
  std::string compute =
      PromFamily("tutti_compute_duration_seconds", "histogram", "Batch start to finish, answered requests.");
  std::string latency =
      PromFamily("tutti_request_duration_seconds", "histogram", "Arrival to finish, answered requests.");
  std::string sizes =
      PromFamily("tutti_request_batch_size", "histogram", "Size of the batch each answered request ran in.");
  std::string coding =
      PromFamily("tutti_reconstructions_total", "counter",
                 "Requests answered by a ParM reconstruction (also counted as success or late).");
  std::string parity =
      PromFamily("tutti_parity_events_total", "counter",
                 "ParM coding: groups encoded, late originals discarded, parity outputs dropped (nothing missing) and "
                 "parity queries lost (dropped or failed).");
  for (size_t m = 0; m < models_.size(); ++m) {
    const ModelCounters& c = counters[m];
    const ModelState& s = *models_[m];
    const std::string label = absl::StrFormat("model=\"%s\"", s.served.config.name);
    for (const auto& [outcome, n] : {std::pair<const char*, int64_t>{"success", c.good}, {"late", c.late},
                                     {"dropped", c.dropped}, {"error", c.error}, {"cancelled", c.cancelled},
                                     {"rejected", s.rejected.load()}, {"overloaded", s.overloaded.load()}}) {
      absl::StrAppendFormat(&out, "tutti_requests_total{%s,outcome=\"%s\"} %d\n", label, outcome, n);
    }
    absl::StrAppendFormat(&batches, "tutti_batches_total{%s} %d\n", label, c.batches);
    absl::StrAppendFormat(&attainment, "tutti_slo_attainment{%s} %.6f\n", label, 1 - c.rate());
    s.queue_seconds.AppendTo(&queue, "tutti_queue_duration_seconds", label);
    s.compute_seconds.AppendTo(&compute, "tutti_compute_duration_seconds", label);
    s.latency_seconds.AppendTo(&latency, "tutti_request_duration_seconds", label);
    s.batch_size.AppendTo(&sizes, "tutti_request_batch_size", label);
    absl::StrAppendFormat(&coding, "tutti_reconstructions_total{%s} %d\n", label, c.reconstructed);
    // The model's batch stage's events (ParM's is the only stage so far).
    for (const auto& [event, n] : c.stage_events) {
      absl::StrAppendFormat(&parity, "tutti_parity_events_total{%s,event=\"%s\"} %d\n", label, event, n);
    }
  }
  std::string steps =
      PromFamily("tutti_graph_step_requests_total", "counter",
                 "A graph's steps by outcome, each against its own deadline.") +
      PromFamily("tutti_graph_step_deadline_share", "gauge",
                 "When a graph's step is due: this share of the graph's objective after its arrival.");
  bool graphs = false;
  for (size_t m = 0; m < models_.size(); ++m) {
    for (size_t i = 0; i < counters[m].steps.size(); ++i) {
      graphs = true;
      const ModelCounters::Step& st = counters[m].steps[i];
      const std::string label = absl::StrFormat("model=\"%s\",step=\"%d\",step_model=\"%s\"",
                                                models_[m]->served.config.name, i, st.model);
      for (const auto& [outcome, n] : {std::pair<const char*, int64_t>{"success", st.good}, {"late", st.late},
                                       {"dropped", st.dropped}, {"error", st.error}}) {
        absl::StrAppendFormat(&steps, "tutti_graph_step_requests_total{%s,outcome=\"%s\"} %d\n", label, outcome, n);
      }
      absl::StrAppendFormat(&steps, "tutti_graph_step_deadline_share{%s} %.4f\n", label, st.deadline_share);
    }
  }
  if (!graphs) steps.clear();
  std::string busy =
      PromFamily("tutti_executor_busy_fraction", "gauge", "Fraction of time each executor spent running batches.");
  const std::vector<double> fractions = engine_->BusyFractions();
  for (size_t g = 0; g < fractions.size(); ++g) {
    absl::StrAppendFormat(&busy, "tutti_executor_busy_fraction{executor=\"%d\"} %.6f\n", g, fractions[g]);
  }
  if (const int64_t loads = engine_->WeightsLoads(); loads > 0) {  // a memory budget: what was loaded
    absl::StrAppend(&busy, PromFamily("tutti_weights_loads_total", "counter",
                                      "Models' weights loaded onto executors (memory budgets)."),
                    "tutti_weights_loads_total ", loads, "\n");
  }
  // INFaaS's variant states (VariantStatuses), of the models of a task.
  std::vector<int> variants;
  for (size_t m = 0; m < models_.size(); ++m) {
    if (!models_[m]->served.config.task.empty() && models_[m]->served.config.accuracy) variants.push_back(m);
  }
  std::string states;
  if (!variants.empty()) {
    states =
        PromFamily("tutti_variant_state", "gauge",
                   "INFaaS's state of each task's variant: 1 for the state it is in.") +
        PromFamily("tutti_variant_utilisation", "gauge",
                   "Requests a variant was given over its peak, over the last window.");
    const std::vector<VariantStatus> status = VariantStatuses(variants);
    for (size_t i = 0; i < variants.size(); ++i) {
      const ModelConfig& c = models_[variants[i]]->served.config;
      const std::string label = absl::StrFormat("model=\"%s\",task=\"%s\"", c.name, c.task);
      for (VariantState v : {VariantState::kInactive, VariantState::kActive, VariantState::kOverloaded,
                             VariantState::kInterfered}) {
        absl::StrAppendFormat(&states, "tutti_variant_state{%s,state=\"%s\"} %d\n", label, VariantStateName(v),
                              status[i].state == v ? 1 : 0);
      }
      absl::StrAppendFormat(&states, "tutti_variant_utilisation{%s} %.4f\n", label, status[i].utilisation);
    }
  }
  std::vector<std::string> names;
  for (const auto& m : models_) names.push_back(m->served.config.name);
  return out + batches + attainment + queue + compute + latency + sizes + coding + parity + steps + busy + states +
         DelayPrometheusText(engine_->Delays(), names) + (options_.extra_metrics ? options_.extra_metrics() : "");
}

}  // namespace tutti
