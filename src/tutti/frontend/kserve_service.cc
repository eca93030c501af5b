#include "tutti/frontend/kserve_service.h"

#include <mutex>
#include <optional>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "tutti/frontend/kserve_json.h"
#include "tutti/frontend/prometheus.h"

namespace tutti {

struct KserveService::ModelState {
  ServedModel served;
  std::atomic<int64_t> rejected{0};  // refused before scheduling (bad input)
  // Over answered items: arrival → batch start, batch start → finish, and
  // the size of the batch each ran in.
  PromHistogram queue_seconds{PromHistogram::SecondsBounds()};
  PromHistogram compute_seconds{PromHistogram::SecondsBounds()};
  PromHistogram batch_size{PromHistogram::BatchBounds()};
};

namespace {

HttpResponse Json(int status, std::string body) { return HttpResponse{status, std::move(body)}; }
HttpResponse Error(int status, absl::string_view message) { return Json(status, WriteError(message)); }

int HttpStatusOf(const absl::Status& s) {
  switch (s.code()) {
    case absl::StatusCode::kInvalidArgument:
      return 400;
    case absl::StatusCode::kNotFound:
      return 404;
    case absl::StatusCode::kDeadlineExceeded:
    case absl::StatusCode::kUnavailable:
      return 503;
    default:
      return 500;
  }
}

// Everything an infer request waits on: one slot per item.
struct PendingInfer {
  std::mutex mu;
  std::vector<std::vector<float>> outputs;
  int remaining = 0;
  absl::Status first_error;
  bool emulated = false, late = false, reconstructed = false;
  int max_batch = 0;
  Duration max_queue = 0, max_compute = 0;
};

}  // namespace

KserveService::KserveService(InferenceCore* core, std::vector<ServedModel> models) : core_(core) {
  for (ServedModel& m : models) {
    auto state = std::make_unique<ModelState>();
    state->served = std::move(m);
    models_.push_back(std::move(state));
  }
}

void KserveService::Handle(HttpRequest request, Respond respond) {
  std::string path = request.target.substr(0, request.target.find('?'));
  if (path == "/metrics") {
    if (request.method != "GET") return respond(Error(405, "use GET"));
    return respond(HttpResponse{200, Metrics(), "text/plain; version=0.0.4"});
  }
  std::vector<std::string> parts = absl::StrSplit(path, '/', absl::SkipEmpty());
  if (parts.empty() || parts[0] != "v2") return respond(Error(404, absl::StrCat("unknown path ", path)));
  const bool get = request.method == "GET";
  if (parts.size() == 1) return respond(get ? Json(200, WriteServerMetadata()) : Error(405, "use GET"));
  if (parts[1] == "health" && parts.size() == 3) {
    if (!get) return respond(Error(405, "use GET"));
    if (parts[2] == "live") return respond(HttpResponse{200, ""});
    if (parts[2] == "ready") return respond(HttpResponse{ready_ ? 200 : 400, ""});
  }
  if (parts[1] != "models" || parts.size() < 3) return respond(Error(404, absl::StrCat("unknown path ", path)));
  int model = -1;
  for (size_t i = 0; i < models_.size(); ++i) {
    if (models_[i]->served.config.name == parts[2]) model = static_cast<int>(i);
  }
  if (model < 0) return respond(Error(404, absl::StrCat("unknown model '", parts[2], "'")));
  size_t next = 3;
  if (parts.size() >= 5 && parts[3] == "versions") {
    int64_t v = 0;
    if (!absl::SimpleAtoi(parts[4], &v) || v != models_[model]->served.version) {
      return respond(Error(404, absl::StrCat("model '", parts[2], "' has no version '", parts[4],
                                             "' (serving version ", models_[model]->served.version, ")")));
    }
    next = 5;
  }
  const std::string action = next < parts.size() ? parts[next] : "";
  if (next + 1 < parts.size() || (action != "" && action != "ready" && action != "infer" && action != "stats")) {
    return respond(Error(404, absl::StrCat("unknown path ", path)));
  }
  if (action == "infer") {
    if (request.method != "POST") return respond(Error(405, "use POST for inference"));
    return Infer(model, request, std::move(respond));
  }
  if (!get) return respond(Error(405, "use GET"));
  if (action == "ready") return respond(HttpResponse{ready_ ? 200 : 400, ""});
  if (action == "stats") return respond(Json(200, Stats(model)));
  const ServedModel& m = models_[model]->served;
  respond(Json(200, WriteModelMetadata(m.config, {m.version})));
}

void KserveService::Infer(int model, const HttpRequest& request, Respond respond) {
  ModelState& state = *models_[model];
  const ModelConfig& config = state.served.config;
  std::optional<int64_t> json_length;
  if (const std::string h = request.Header("Inference-Header-Content-Length"); !h.empty()) {
    int64_t n = 0;
    if (!absl::SimpleAtoi(h, &n)) {
      ++state.rejected;
      return respond(Error(400, absl::StrCat("Inference-Header-Content-Length '", h, "' is not a number")));
    }
    json_length = n;
  }
  absl::StatusOr<InferRequest> parsed = ParseInferRequest(request.body, config, json_length);
  if (!parsed.ok()) {
    ++state.rejected;
    return respond(Error(400, parsed.status().message()));
  }
  const int64_t per_item = config.inputs[0].ElementCount();
  const Duration objective = Millis(parsed->objective_ms);
  auto pending = std::make_shared<PendingInfer>();
  pending->outputs.resize(parsed->batch);
  pending->remaining = parsed->batch;
  auto finish = [&state, pending, id = parsed->id, binary = parsed->binary_output, respond](int item,
                                                                                          InferenceOutcome o) {
    bool last;
    {
      std::lock_guard<std::mutex> lock(pending->mu);
      if (o.status.ok()) {
        pending->outputs[item] = std::move(o.output);
        pending->emulated |= o.emulated;
        pending->late |= o.late;
        pending->reconstructed |= o.reconstructed;
        pending->max_batch = std::max(pending->max_batch, o.batch_size);
        pending->max_queue = std::max(pending->max_queue, o.started - o.arrival);
        pending->max_compute = std::max(pending->max_compute, o.finished - o.started);
        state.queue_seconds.Observe(ToSeconds(o.started - o.arrival));
        state.compute_seconds.Observe(ToSeconds(o.finished - o.started));
        state.batch_size.Observe(o.batch_size);
      } else if (pending->first_error.ok()) {
        pending->first_error = o.status;
      }
      last = --pending->remaining == 0;
    }
    if (!last) return;
    if (!pending->first_error.ok()) {
      return respond(Error(HttpStatusOf(pending->first_error), pending->first_error.message()));
    }
    const std::string params = absl::StrFormat(
        R"({"reconstructed":%s,"tutti_emulated":%s,"tutti_late":%s,"tutti_batch_size":%d,"tutti_queue_us":%.1f,)"
        R"("tutti_compute_us":%.1f})",
        pending->reconstructed ? "true" : "false", pending->emulated ? "true" : "false",
        pending->late ? "true" : "false", pending->max_batch,
        ToMicros(pending->max_queue), ToMicros(pending->max_compute));
    InferResponseBody body =
        WriteInferResponse(state.served.config, state.served.version, id, pending->outputs, params, binary);
    HttpResponse response{200, std::move(body.body)};
    if (body.json_length) {
      response.content_type = "application/octet-stream";
      response.headers.push_back({"Inference-Header-Content-Length", std::to_string(*body.json_length)});
    }
    respond(std::move(response));
  };
  for (int i = 0; i < parsed->batch; ++i) {
    std::vector<float> item(parsed->data.begin() + i * per_item, parsed->data.begin() + (i + 1) * per_item);
    absl::Status s = core_->Submit(model, std::move(item), objective,
                                   [finish, i](InferenceOutcome o) { finish(i, std::move(o)); });
    if (!s.ok()) finish(i, InferenceOutcome{s});  // refused: answer that item with the error
  }
}

KserveService::~KserveService() = default;

std::string KserveService::Stats(int model) const {
  const ModelCounters c = core_->Counters()[model];
  const ModelState& s = *models_[model];
  const double timed = static_cast<double>(std::max<int64_t>(1, s.queue_seconds.count()));
  return absl::StrFormat(
      R"({"model_name":"%s","model_version":"%d","success":%d,"late":%d,"dropped":%d,"error":%d,)"
      R"("rejected":%d,"reconstructed":%d,"batches":%d,"mean_batch_size":%.3f,"mean_queue_us":%.1f,)"
      R"("mean_compute_us":%.1f})",
      s.served.config.name, s.served.version, c.success, c.late, c.dropped, c.error, s.rejected.load(), c.reconstructed,
      c.batches, c.batches ? static_cast<double>(c.batched_requests) / c.batches : 0.0,
      s.queue_seconds.sum() / timed * 1e6, s.compute_seconds.sum() / timed * 1e6);
}

std::string KserveService::Metrics() const {
  const std::vector<ModelCounters> counters = core_->Counters();
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
                                     {"rejected", s.rejected.load()}}) {
      absl::StrAppendFormat(&out, "tutti_requests_total{%s,outcome=\"%s\"} %d\n", label, outcome, n);
    }
    absl::StrAppendFormat(&batches, "tutti_batches_total{%s} %d\n", label, c.batches);
    const int64_t ended = c.success + c.late + c.dropped + c.error;
    absl::StrAppendFormat(&attainment, "tutti_slo_attainment{%s} %.6f\n", label,
                          ended ? static_cast<double>(c.success) / ended : 1.0);
    s.queue_seconds.AppendTo(&queue, "tutti_queue_duration_seconds", label);
    s.compute_seconds.AppendTo(&compute, "tutti_compute_duration_seconds", label);
    s.batch_size.AppendTo(&sizes, "tutti_request_batch_size", label);
    absl::StrAppendFormat(&coding, "tutti_reconstructions_total{%s} %d\n", label, c.reconstructed);
    if (c.coding.groups == 0) continue;
    for (const auto& [event, n] : {std::pair<const char*, int64_t>{"group", c.coding.groups},
                                   {"discarded_original", c.coding.discarded_originals},
                                   {"dropped_parity", c.coding.dropped_parities},
                                   {"lost_parity", c.coding.lost_parities}}) {
      absl::StrAppendFormat(&parity, "tutti_parity_events_total{%s,event=\"%s\"} %d\n", label, event, n);
    }
  }
  std::string busy =
      "# HELP tutti_executor_busy_fraction Fraction of time each executor spent running batches.\n"
      "# TYPE tutti_executor_busy_fraction gauge\n";
  const std::vector<double> fractions = core_->BusyFractions();
  for (size_t g = 0; g < fractions.size(); ++g) {
    absl::StrAppendFormat(&busy, "tutti_executor_busy_fraction{executor=\"%d\"} %.6f\n", g, fractions[g]);
  }
  return out + batches + attainment + queue + compute + sizes + coding + parity + busy;
}

}  // namespace tutti
