#include "tutti/frontend/inference_frontend.h"

#include <algorithm>
#include <limits>
#include <mutex>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_format.h"
#include "tutti/core/user_text.h"
#include "tutti/frontend/delay_metrics.h"
#include "tutti/frontend/prometheus.h"
#include "tutti/planner/variant_selection.h"

namespace tutti {

struct InferenceFrontend::ModelState {
  ServedModel served;
  std::atomic<int64_t> rejected{0};    // refused before scheduling (bad input)
  std::atomic<int64_t> overloaded{0};  // refused by admission control (queue full)
  std::atomic<int64_t> queued{0};      // items accepted and not yet answered
  // Model control: kReady, kUnloading (until queued is 0), kUnavailable.
  // Changed under control_mu; read without it.
  enum Control { kReady, kUnloading, kUnavailable };
  std::atomic<int> control{kReady};
  std::mutex control_mu;
  std::vector<std::function<void(absl::Status)>> unloading;  // waiting for the drain
  // Over answered items: arrival → batch start, batch start → finish, and
  // the size of the batch each ran in.
  PromHistogram queue_seconds{PromHistogram::SecondsBounds()};
  PromHistogram compute_seconds{PromHistogram::SecondsBounds()};
  PromHistogram batch_size{PromHistogram::BatchBounds()};
  PromHistogram latency_seconds{PromHistogram::LatencyBounds()};  // arrival → finish
};

struct InferenceFrontend::VariantMonitor {
  std::mutex mu;
  Time at ABSL_GUARDED_BY(mu) = -1;  // the last observation (-1: none yet)
  std::vector<int64_t> given ABSL_GUARDED_BY(mu);  // per model, up to `at`
  std::vector<VariantStatus> status ABSL_GUARDED_BY(mu);
};

namespace {

// A graph's steps for its stats (`,"steps":[…]`); "" for a model.
std::string StepsJson(const ModelCounters& c) {
  if (c.steps.empty()) return "";
  std::vector<std::string> steps;
  for (const ModelCounters::Step& s : c.steps) {
    steps.push_back(absl::StrFormat(
        R"({"model_name":"%s","deadline_share":%.4f,"success":%d,"late":%d,"dropped":%d,"error":%d})", s.model,
        s.deadline_share, s.success, s.late, s.dropped, s.error));
  }
  return absl::StrCat(R"(,"steps":[)", absl::StrJoin(steps, ","), "]");
}

// Everything a request waits on: one slot per item.
struct PendingInfer {
  std::mutex mu;
  InferenceFrontend::InferResult result;
  int remaining = 0;
  absl::Status first_error;
};

}  // namespace

InferenceFrontend::InferenceFrontend(InferenceEngine* engine, std::vector<ServedModel> models, Options options)
    : engine_(engine), options_(std::move(options)), access_(options_.access),
      monitor_(std::make_unique<VariantMonitor>()) {
  for (ServedModel& m : models) {
    auto state = std::make_unique<ModelState>();
    state->served = std::move(m);
    models_.push_back(std::move(state));
  }
  monitor_->given.assign(models_.size(), 0);
  monitor_->status.assign(models_.size(), VariantStatus{});
}

InferenceFrontend::~InferenceFrontend() = default;

absl::StatusOr<int> InferenceFrontend::FindModel(absl::string_view name, absl::string_view version) const {
  for (size_t i = 0; i < models_.size(); ++i) {
    const ServedModel& m = models_[i]->served;
    if (m.config.name != name) continue;
    int64_t v = 0;
    if (!version.empty() && (!absl::SimpleAtoi(version, &v) || v != m.version)) {
      return absl::NotFoundError(absl::StrCat("model '", name, "' has no version ", QuoteUserText(version),
                                              " (serving version ", m.version, ")"));
    }
    return static_cast<int>(i);
  }
  return absl::NotFoundError(absl::StrCat("unknown model ", QuoteUserText(name)));
}

const InferenceFrontend::ServedModel& InferenceFrontend::served(int model) const { return models_[model]->served; }

void InferenceFrontend::CountRejected(int model) { ++models_[model]->rejected; }

absl::Status InferenceFrontend::RequestShutdown() {
  if (!options_.shutdown) return absl::UnimplementedError("this server does not take shutdown requests");
  options_.shutdown();
  return absl::OkStatus();
}

void InferenceFrontend::Infer(int model, InferRequest request, InferDone done) {
  ModelState& state = *models_[model];
  if (absl::Status s = CheckSequenceBatch(request); !s.ok()) return done(s);
  const int64_t per_item = state.served.config.inputs[0].ElementCount();
  const Duration objective = Millis(request.objective_ms);
  const int64_t queued = state.queued.fetch_add(request.batch) + request.batch;
  // Counted before the check: an unload that begins now waits for these.
  if (state.control.load() != ModelState::kReady) {
    Release(state, request.batch);
    return done(absl::UnavailableError(absl::StrCat("model '", state.served.config.name,
                                                    "' is not loaded (unloaded through the repository API; "
                                                    "POST /v2/repository/models/",
                                                    state.served.config.name, "/load loads it)")));
  }
  if (options_.max_queue_size > 0 && queued > options_.max_queue_size) {
    Release(state, request.batch);
    ++state.overloaded;
    return done(absl::ResourceExhaustedError(absl::StrCat(
        "model '", state.served.config.name, "' has ", queued - request.batch,
        " items queued, at its limit of ", options_.max_queue_size, " (max_queue_size): retry later")));
  }
  auto pending = std::make_shared<PendingInfer>();
  pending->result.outputs.resize(request.batch);
  pending->remaining = request.batch;
  auto finish = [&state, pending, batch = request.batch, done = std::move(done)](int item, InferenceOutcome o) {
    {
      std::lock_guard<std::mutex> lock(pending->mu);
      InferResult& r = pending->result;
      if (o.status.ok()) {
        r.outputs[item] = std::move(o.output);
        r.emulated |= o.emulated;
        r.late |= o.late;
        r.reconstructed |= o.reconstructed;
        r.max_batch = std::max(r.max_batch, o.batch_size);
        r.max_queue = std::max(r.max_queue, o.started - o.arrival);
        r.max_compute = std::max(r.max_compute, o.finished - o.started);
        r.arrival = r.arrival == 0 ? o.arrival : std::min(r.arrival, o.arrival);
        r.written.push_back(o.Written());
        state.queue_seconds.Observe(ToSeconds(o.started - o.arrival));
        state.compute_seconds.Observe(ToSeconds(o.finished - o.started));
        state.batch_size.Observe(o.batch_size);
        state.latency_seconds.Observe(ToSeconds(o.finished - o.arrival));
      } else if (pending->first_error.ok()) {
        pending->first_error = o.status;
      }
      if (--pending->remaining > 0) return;
    }
    // Answered before the unload it may complete is reported.
    if (!pending->first_error.ok()) {
      done(pending->first_error);
    } else {
      done(std::move(pending->result));
    }
    Release(state, batch);
  };
  for (int i = 0; i < request.batch; ++i) {
    std::vector<float> item(request.data.begin() + i * per_item, request.data.begin() + (i + 1) * per_item);
    absl::Status s = engine_->SubmitInSequence(model, request.sequence, std::move(item), objective,
                                               [finish, i](InferenceOutcome o) { finish(i, std::move(o)); });
    if (!s.ok()) finish(i, InferenceOutcome{s});  // refused: answer that item with the error
  }
}

void InferenceFrontend::Release(ModelState& state, int64_t n) {
  if (state.queued.fetch_sub(n) != n || state.control.load() != ModelState::kUnloading) return;
  std::vector<std::function<void(absl::Status)>> drained;
  {
    std::lock_guard<std::mutex> lock(state.control_mu);
    if (state.control.load() != ModelState::kUnloading || state.queued.load() != 0) return;
    state.control = ModelState::kUnavailable;
    drained.swap(state.unloading);
  }
  for (auto& done : drained) done(absl::OkStatus());
}

InferenceFrontend::ModelStatus InferenceFrontend::Status(int model) const {
  const ModelState& state = *models_[model];
  if (!ready_) return {"UNAVAILABLE", "the server is shutting down"};
  switch (state.control.load()) {
    case ModelState::kReady:
      return {"READY", ""};
    case ModelState::kUnloading:
      return {"UNLOADING", absl::StrCat("answering the ", state.queued.load(), " items it accepted")};
    default:
      return {"UNAVAILABLE", "unloaded"};
  }
}

bool InferenceFrontend::model_ready(int model) const {
  return ready_ && models_[model]->control.load() == ModelState::kReady;
}

void InferenceFrontend::Load(int model) {
  ModelState& state = *models_[model];
  std::vector<std::function<void(absl::Status)>> aborted;
  {
    std::lock_guard<std::mutex> lock(state.control_mu);
    state.control = ModelState::kReady;
    aborted.swap(state.unloading);
  }
  for (auto& done : aborted) {
    done(absl::AbortedError(absl::StrCat("model '", state.served.config.name, "' was loaded again before it drained")));
  }
}

void InferenceFrontend::Unload(int model, std::function<void(absl::Status)> done) {
  ModelState& state = *models_[model];
  {
    std::lock_guard<std::mutex> lock(state.control_mu);
    if (state.control.load() == ModelState::kUnavailable) {
      done(absl::OkStatus());
      return;
    }
    state.control = ModelState::kUnloading;
    state.unloading.push_back(std::move(done));
  }
  // Completes at once when nothing is pending (a Release that ran before
  // the state changed did not).
  state.queued.fetch_add(1);
  Release(state, 1);
}

void InferenceFrontend::UnloadWithDependents(int model, bool dependents, std::function<void(absl::Status)> done) {
  std::vector<int> unload = {model};
  for (int g = 0; dependents && g < num_models(); ++g) {
    for (const EnsembleStep& step : models_[g]->served.config.steps) {
      if (step.model_name == models_[model]->served.config.name) {
        unload.push_back(g);
        break;
      }
    }
  }
  struct Join {
    std::mutex mu;
    size_t left;
    absl::Status first;
    std::function<void(absl::Status)> done;
  };
  auto join = std::make_shared<Join>();
  join->left = unload.size();
  join->done = std::move(done);
  for (int m : unload) {
    Unload(m, [join](absl::Status s) {
      {
        std::lock_guard<std::mutex> lock(join->mu);
        join->first.Update(s);
        if (--join->left > 0) return;
      }
      join->done(join->first);
    });
  }
}

std::vector<int> InferenceFrontend::TaskVariants(absl::string_view task) const {
  std::vector<int> out;
  const ModelConfig* first = nullptr;
  for (int m = 0; m < num_models(); ++m) {
    const ModelConfig& c = models_[m]->served.config;
    if (c.task != task || !c.accuracy || c.stateful() || c.parity.has_value()) continue;
    if (first == nullptr) {
      first = &c;
    } else if (!(c.inputs[0] == first->inputs[0]) || c.outputs[0].ElementCount() != first->outputs[0].ElementCount()) {
      continue;
    }
    if (models_[m]->control.load() == ModelState::kReady) out.push_back(m);
  }
  return out;
}

void InferenceFrontend::ObserveVariants() const {
  const Time now = engine_->Now();
  VariantMonitor& mon = *monitor_;
  if (mon.at >= 0 && now - mon.at < kVariantWindow) return;
  const std::vector<ModelCounters> counters = engine_->Counters();
  std::vector<double> ratio(models_.size(), 0);  // 0: no batches measured in the engine's window
  for (const DelayEstimates::Compute& c : engine_->Delays().estimates.compute) {
    if (static_cast<size_t>(c.model) < ratio.size()) ratio[c.model] = std::max(ratio[c.model], c.ratio);
  }
  const double seconds = mon.at >= 0 ? ToSeconds(now - mon.at) : 0;
  for (size_t m = 0; m < models_.size(); ++m) {
    const ModelState& s = *models_[m];
    const ModelCounters& c = counters[m];
    const int64_t given = c.success + c.late + c.dropped + s.overloaded.load();
    VariantObservation seen;
    seen.loaded = s.control.load() == ModelState::kReady;
    seen.served_qps = seconds > 0 ? static_cast<double>(given - mon.given[m]) / seconds : 0;
    seen.saturation_qps = s.served.peak_rps;
    seen.profiled = s.served.latency;
    seen.latency = static_cast<Duration>(static_cast<double>(s.served.latency) * ratio[m]);
    mon.given[m] = given;
    mon.status[m] = {NextVariantState(mon.status[m].state, seen),
                     seen.saturation_qps > 0 ? seen.served_qps / seen.saturation_qps : 0};
  }
  mon.at = now;
}

std::vector<InferenceFrontend::VariantStatus> InferenceFrontend::VariantStatuses(const std::vector<int>& models) const {
  std::lock_guard<std::mutex> lock(monitor_->mu);
  ObserveVariants();
  std::vector<VariantStatus> out;
  for (int m : models) {
    if (options_.routed_status) {
      if (std::optional<Options::RoutedStatus> r = options_.routed_status(models_[m]->served.config.name)) {
        out.push_back({r->state, r->utilisation});
        continue;
      }
    }
    VariantStatus v = monitor_->status[m];
    // Loaded or unloaded since the last observation: as it is now.
    if (!model_ready(m)) {
      v.state = VariantState::kInactive;
    } else if (v.state == VariantState::kInactive) {
      v.state = VariantState::kActive;
    }
    out.push_back(v);
  }
  return out;
}

InferenceFrontend::TaskChoice InferenceFrontend::ChooseForTask(absl::string_view task, const std::vector<int>& variants,
                                                               double min_accuracy, Duration objective) const {
  if (options_.route_task) {
    if (std::optional<Options::RoutedTask> routed = options_.route_task(task, min_accuracy, objective)) {
      for (int m : variants) {
        if (models_[m]->served.config.name == routed->model) return TaskChoice{m, routed->meets, routed->note};
      }
    }
  }
  // A request's least latency: ℓ(1) and, per scheduled step, the margins
  // the scheduler plans with now (dispatch, response, slack, guard).
  const DelayPlan plan = engine_->Delays().plan;
  const Duration margins =
      plan.network.Dispatch(1) + plan.network.resp + plan.frontrun_slack + plan.head_guard;
  const std::vector<VariantStatus> status = VariantStatuses(variants);
  // Utilisation in one unit for all: the window's where every peak is
  // known, else items in flight per max batch.
  const bool peaks = std::all_of(variants.begin(), variants.end(), [&](int m) { return models_[m]->served.peak_rps > 0; });
  std::vector<SelectableVariant> selectable;
  for (size_t i = 0; i < variants.size(); ++i) {
    const ModelState& s = *models_[variants[i]];
    const ModelConfig& c = s.served.config;
    const Duration latency = s.served.latency + margins * static_cast<int64_t>(std::max<size_t>(1, c.steps.size()));
    // Items in flight per max batch also break ties (before the first
    // window every variant reads 0).
    const double in_flight = static_cast<double>(s.queued.load()) / std::max(1, c.max_batch_size);
    selectable.push_back({c.name, c.accuracy.value_or(0), latency, 0, 0, status[i].state,
                          peaks ? status[i].utilisation : in_flight, in_flight});
  }
  const VariantRequirements req{min_accuracy, objective > 0 ? objective : std::numeric_limits<Duration>::max()};
  const VariantChoice choice = SelectVariant(selectable, req);
  return TaskChoice{variants[choice.index], choice.meets, choice.note};
}

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
      R"({"model_name":"%s","model_version":"%d","success":%d,"late":%d,"dropped":%d,"error":%d,)"
      R"("rejected":%d,"overloaded":%d,"queued":%d,"reconstructed":%d,"batches":%d,"mean_batch_size":%.3f,"mean_queue_us":%.1f,)"
      R"("mean_compute_us":%.1f,"peak_rps":%.1f,"delays":%s%s})",
      s.served.config.name, s.served.version, c.success, c.late, c.dropped, c.error, s.rejected.load(), s.overloaded.load(),
      s.queued.load(), c.reconstructed,
      c.batches, c.batches ? static_cast<double>(c.batched_requests) / c.batches : 0.0,
      s.queue_seconds.sum() / timed * 1e6, s.compute_seconds.sum() / timed * 1e6, s.served.peak_rps,
      DelayStatsJson(engine_->Delays(), model), StepsJson(c));
}

std::string InferenceFrontend::PrometheusText() const {
  const std::vector<ModelCounters> counters = engine_->Counters();
  std::string out =
      "# HELP tutti_requests_total Inference requests by model and outcome.\n"
      "# TYPE tutti_requests_total counter\n";
  std::string batches = "# HELP tutti_batches_total Batches executed.\n# TYPE tutti_batches_total counter\n";
  std::string attainment =
      "# HELP tutti_slo_attainment Fraction of ended requests answered on time.\n"
      "# TYPE tutti_slo_attainment gauge\n";
  std::string queue =
      "# HELP tutti_queue_duration_seconds Arrival to batch start, answered requests.\n"
      "# TYPE tutti_queue_duration_seconds histogram\n";
  std::string compute =
      "# HELP tutti_compute_duration_seconds Batch start to finish, answered requests.\n"
      "# TYPE tutti_compute_duration_seconds histogram\n";
  std::string latency =
      "# HELP tutti_request_duration_seconds Arrival to finish, answered requests.\n"
      "# TYPE tutti_request_duration_seconds histogram\n";
  std::string sizes =
      "# HELP tutti_request_batch_size Size of the batch each answered request ran in.\n"
      "# TYPE tutti_request_batch_size histogram\n";
  std::string coding =
      "# HELP tutti_reconstructions_total Requests answered by a ParM reconstruction (also counted as success or "
      "late).\n# TYPE tutti_reconstructions_total counter\n";
  std::string parity =
      "# HELP tutti_parity_events_total ParM coding: groups encoded, late originals discarded, parity outputs "
      "dropped (nothing missing) and parity queries lost (dropped or failed).\n"
      "# TYPE tutti_parity_events_total counter\n";
  for (size_t m = 0; m < models_.size(); ++m) {
    const ModelCounters& c = counters[m];
    const ModelState& s = *models_[m];
    const std::string label = absl::StrFormat("model=\"%s\"", s.served.config.name);
    for (const auto& [outcome, n] : {std::pair<const char*, int64_t>{"success", c.success}, {"late", c.late},
                                     {"dropped", c.dropped}, {"error", c.error},
                                     {"rejected", s.rejected.load()}, {"overloaded", s.overloaded.load()}}) {
      absl::StrAppendFormat(&out, "tutti_requests_total{%s,outcome=\"%s\"} %d\n", label, outcome, n);
    }
    absl::StrAppendFormat(&batches, "tutti_batches_total{%s} %d\n", label, c.batches);
    const int64_t ended = c.success + c.late + c.dropped + c.error;
    absl::StrAppendFormat(&attainment, "tutti_slo_attainment{%s} %.6f\n", label,
                          ended ? static_cast<double>(c.success) / ended : 1.0);
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
      "# HELP tutti_graph_step_requests_total A graph's steps by outcome, each against its own deadline.\n"
      "# TYPE tutti_graph_step_requests_total counter\n"
      "# HELP tutti_graph_step_deadline_share When a graph's step is due: this share of the graph's objective "
      "after its arrival.\n# TYPE tutti_graph_step_deadline_share gauge\n";
  bool graphs = false;
  for (size_t m = 0; m < models_.size(); ++m) {
    for (size_t i = 0; i < counters[m].steps.size(); ++i) {
      graphs = true;
      const ModelCounters::Step& st = counters[m].steps[i];
      const std::string label = absl::StrFormat("model=\"%s\",step=\"%d\",step_model=\"%s\"",
                                                models_[m]->served.config.name, i, st.model);
      for (const auto& [outcome, n] : {std::pair<const char*, int64_t>{"success", st.success}, {"late", st.late},
                                       {"dropped", st.dropped}, {"error", st.error}}) {
        absl::StrAppendFormat(&steps, "tutti_graph_step_requests_total{%s,outcome=\"%s\"} %d\n", label, outcome, n);
      }
      absl::StrAppendFormat(&steps, "tutti_graph_step_deadline_share{%s} %.4f\n", label, st.deadline_share);
    }
  }
  if (!graphs) steps.clear();
  std::string busy =
      "# HELP tutti_executor_busy_fraction Fraction of time each executor spent running batches.\n"
      "# TYPE tutti_executor_busy_fraction gauge\n";
  const std::vector<double> fractions = engine_->BusyFractions();
  for (size_t g = 0; g < fractions.size(); ++g) {
    absl::StrAppendFormat(&busy, "tutti_executor_busy_fraction{executor=\"%d\"} %.6f\n", g, fractions[g]);
  }
  // INFaaS's variant states (VariantStatuses), of the models of a task.
  std::vector<int> variants;
  for (size_t m = 0; m < models_.size(); ++m) {
    if (!models_[m]->served.config.task.empty() && models_[m]->served.config.accuracy) variants.push_back(m);
  }
  std::string states;
  if (!variants.empty()) {
    states =
        "# HELP tutti_variant_state INFaaS's state of each task's variant: 1 for the state it is in.\n"
        "# TYPE tutti_variant_state gauge\n"
        "# HELP tutti_variant_utilisation Requests a variant was given over its peak, over the last window.\n"
        "# TYPE tutti_variant_utilisation gauge\n";
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
