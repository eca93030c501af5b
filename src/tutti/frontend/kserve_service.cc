#include "tutti/frontend/kserve_service.h"

#include <optional>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "tutti/core/user_text.h"
#include "tutti/codec/kserve_json.h"

namespace tutti {
namespace {

HttpResponse Json(int status, std::string body) { return HttpResponse{status, std::move(body)}; }
HttpResponse Error(int status, absl::string_view message) { return Json(status, WriteError(message)); }

int HttpStatusOf(const absl::Status& s) {
  switch (s.code()) {
    case absl::StatusCode::kInvalidArgument:
      return 400;
    case absl::StatusCode::kUnauthenticated:
      return 401;
    case absl::StatusCode::kPermissionDenied:
      return 403;
    case absl::StatusCode::kNotFound:
      return 404;
    case absl::StatusCode::kDeadlineExceeded:
    case absl::StatusCode::kCancelled:  // its `timeout` passed before it ran
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kResourceExhausted:
      return 503;
    case absl::StatusCode::kUnimplemented:
      return 501;
    case absl::StatusCode::kAborted:
      return 409;
    default:
      return 500;
  }
}

HttpResponse StatusError(const absl::Status& s) {
  HttpResponse r = Error(HttpStatusOf(s), s.message());
  if (s.code() == absl::StatusCode::kUnauthenticated) r.headers.push_back({"WWW-Authenticate", "Bearer"});
  return r;
}

// Which access an HTTP route needs (access.h); paths that match no route
// need inference access, so that a client without a token learns nothing of
// the models.
Api ApiOf(const std::vector<std::string>& parts) {
  if (parts.size() == 1 && parts[0] == "metrics") return Api::kAdmin;
  if (parts.size() >= 2 && parts[1] == "health") return Api::kHealth;
  if (parts.size() >= 2 && parts[1] == "repository") return Api::kAdmin;
  if (parts.size() >= 2 && parts[1] == "tutti") return parts.size() == 3 && parts[2] == "shutdown" ? Api::kShutdown : Api::kAdmin;
  if (parts.size() >= 3 && parts[1] == "models" && (parts.back() == "ready" || parts.back() == "stats")) {
    return parts.back() == "ready" ? Api::kHealth : Api::kAdmin;
  }
  if (parts.size() >= 2 && (parts[1] == "models" || parts[1] == "tasks")) {
    return parts.back() == "infer" ? Api::kInference : Api::kMetadata;
  }
  return Api::kMetadata;
}

}  // namespace

KserveService::KserveService(InferenceFrontend* frontend) : frontend_(frontend) {}

void KserveService::Handle(HttpRequest request, Respond respond) {
  std::string path = request.target.substr(0, request.target.find('?'));
  // One spelling per route: an empty segment (`//`, a trailing `/`) is
  // refused everywhere rather than read as a route it resembles.
  if (path.empty() || path[0] != '/' || absl::StrContains(path, "//") || (path.size() > 1 && path.back() == '/')) {
    return respond(Error(404, absl::StrCat("unknown path ", QuoteUserText(path), " (empty path segment)")));
  }
  std::vector<std::string> parts = absl::StrSplit(path, '/', absl::SkipEmpty());
  if (absl::Status s = frontend_->Authorize(ApiOf(parts), request.Header("Authorization")); !s.ok()) {
    return respond(StatusError(s));
  }
  const bool get = request.method == "GET";
  if (path == "/metrics") {
    if (!get) return respond(Error(405, "use GET"));
    return respond(HttpResponse{200, frontend_->PrometheusText(), "text/plain; version=0.0.4"});
  }
  if (parts.empty() || parts[0] != "v2") return respond(Error(404, absl::StrCat("unknown path ", QuoteUserText(path))));
  const int ready = frontend_->ready() ? 200 : 400;
  if (parts.size() == 1) return respond(get ? Json(200, WriteServerMetadata()) : Error(405, "use GET"));
  if (parts[1] == "health" && parts.size() == 3) {
    if (!get) return respond(Error(405, "use GET"));
    if (parts[2] == "live") return respond(HttpResponse{200, ""});
    if (parts[2] == "ready") return respond(HttpResponse{ready, ""});
  }
  if (parts[1] == "repository") return Repository(parts, request, std::move(respond));
  if (parts[1] == "tasks" && (parts.size() == 3 || (parts.size() == 4 && parts[3] == "infer"))) {
    return Task(parts, request, std::move(respond));
  }
  if (path == "/v2/tutti/shutdown") {
    if (request.method != "POST") return respond(Error(405, "use POST"));
    if (absl::Status s = frontend_->RequestShutdown(); !s.ok()) return respond(StatusError(s));
    return respond(Json(200, R"({"shutting_down":true})"));
  }
  if (parts[1] != "models" || parts.size() < 3) return respond(Error(404, absl::StrCat("unknown path ", QuoteUserText(path))));
  if (parts.size() == 3 && parts[2] == "stats") {  // every model's (Triton's statistics extension)
    if (!get) return respond(Error(405, "use GET"));
    return respond(Json(200, frontend_->StatisticsJson(frontend_->ListedModels())));
  }
  size_t next = 3;
  std::string version;
  if (parts.size() >= 5 && parts[3] == "versions") {
    version = parts[4];
    next = 5;
  }
  absl::StatusOr<int> model = frontend_->FindModel(parts[2], version);
  if (!model.ok()) return respond(Error(404, model.status().message()));
  const std::string action = next < parts.size() ? parts[next] : "";
  if (next + 1 < parts.size() ||
      (action != "" && action != "ready" && action != "infer" && action != "stats" && action != "config")) {
    return respond(Error(404, absl::StrCat("unknown path ", QuoteUserText(path))));
  }
  if (action == "infer") {
    if (request.method != "POST") return respond(Error(405, "use POST for inference"));
    return Infer(*model, request, std::move(respond));
  }
  if (!get) return respond(Error(405, "use GET"));
  if (action == "ready") return respond(HttpResponse{frontend_->model_ready(*model) ? 200 : 400, ""});
  if (action == "stats") return respond(Json(200, frontend_->StatisticsJson({*model})));
  if (action == "config") return respond(Json(200, WriteModelConfig(frontend_->served(*model).config)));
  const InferenceFrontend::ServedModel& m = frontend_->served(*model);
  respond(Json(200, WriteModelMetadata(m.config, {m.version})));
}

// Triton's model repository extension: POST /v2/repository/index and
// POST /v2/repository/models/{m}/load|unload.
void KserveService::Repository(const std::vector<std::string>& parts, const HttpRequest& request, Respond respond) {
  if (request.method != "POST") return respond(Error(405, "use POST"));
  if (parts.size() == 3 && parts[2] == "index") {
    absl::StatusOr<bool> ready_only = ParseRepositoryIndexRequest(request.body);
    if (!ready_only.ok()) return respond(StatusError(ready_only.status()));
    std::vector<RepositoryIndexEntry> index;
    for (int m : frontend_->ListedModels()) {
      if (*ready_only && !frontend_->model_ready(m)) continue;
      InferenceFrontend::ModelStatus status = frontend_->Status(m);
      index.push_back({frontend_->served(m).config.name, frontend_->served(m).version, std::move(status.state),
                       std::move(status.reason)});
    }
    return respond(Json(200, WriteRepositoryIndex(index)));
  }
  if (parts.size() != 5 || parts[2] != "models" || (parts[4] != "load" && parts[4] != "unload")) {
    return respond(Error(404, absl::StrCat("unknown path ", QuoteUserText(absl::StrJoin(parts, "/")))));
  }
  absl::StatusOr<int> model = frontend_->FindModel(parts[3]);
  if (!model.ok()) return respond(StatusError(model.status()));
  absl::StatusOr<RepositoryModelRequest> params = ParseRepositoryModelRequest(request.body);
  if (!params.ok()) return respond(StatusError(params.status()));
  if (parts[4] == "load") {
    frontend_->Load(*model);
    return respond(HttpResponse{200, ""});
  }
  frontend_->UnloadWithDependents(*model, params->unload_dependents, [respond = std::move(respond)](absl::Status s) {
    respond(s.ok() ? HttpResponse{200, ""} : StatusError(s));
  });
}

void KserveService::Infer(int model, const HttpRequest& request, Respond respond) {
  absl::StatusOr<InferRequest> parsed = Parse(model, request);
  if (!parsed.ok()) return respond(Error(400, parsed.status().message()));
  Run(model, *std::move(parsed), "", std::move(respond));
}

absl::StatusOr<InferRequest> KserveService::Parse(int model, const HttpRequest& request) {
  std::optional<int64_t> json_length;
  if (const std::string h = request.Header("Inference-Header-Content-Length"); !h.empty()) {
    int64_t n = 0;
    if (!absl::SimpleAtoi(h, &n)) {
      frontend_->CountRejected(model);
      return absl::InvalidArgumentError(
          absl::StrCat("Inference-Header-Content-Length ", QuoteUserText(h), " is not a number"));
    }
    json_length = n;
  }
  absl::StatusOr<InferRequest> parsed = ParseInferRequest(request.body, frontend_->served(model).config, json_length);
  if (!parsed.ok()) {
    frontend_->CountRejected(model);
  } else {
    parsed->cancel = request.gone;  // its client closing the connection withdraws it
    if (const std::string h = request.Header("traceparent"); !h.empty()) parsed->traceparent = ParseTraceparent(h);
  }
  return parsed;
}

void KserveService::Task(const std::vector<std::string>& parts, const HttpRequest& request, Respond respond) {
  const std::string& task = parts[2];
  const std::vector<int> variants = frontend_->TaskVariants(task);
  if (variants.empty()) {
    return respond(Error(404, absl::StrCat("no loaded model serves task ", QuoteUserText(task))));
  }
  if (parts.size() == 3) {  // the task's variants, as the selection sees them
    if (request.method != "GET") return respond(Error(405, "use GET"));
    const std::vector<InferenceFrontend::VariantStatus> status = frontend_->VariantStatuses(variants);
    std::vector<TaskVariantEntry> entries;
    for (size_t i = 0; i < variants.size(); ++i) {
      const InferenceFrontend::ServedModel& s = frontend_->served(variants[i]);
      entries.push_back({s.config.name, s.config.accuracy.value_or(0), ToMillis(s.latency),
                         VariantStateName(status[i].state), status[i].utilisation, s.peak_rps});
    }
    return respond(Json(200, WriteTaskVariants(task, entries)));
  }
  if (request.method != "POST") return respond(Error(405, "use POST for inference"));
  // Parsed against the task's first variant: its variants share their input.
  absl::StatusOr<InferRequest> parsed = Parse(variants[0], request);
  if (!parsed.ok()) return respond(Error(400, parsed.status().message()));
  const InferenceFrontend::TaskChoice choice =
      frontend_->ChooseForTask(task, variants, parsed->min_accuracy, Millis(parsed->objective_ms));
  Run(choice.model, *std::move(parsed), WriteTaskParameters(task, choice.meets, choice.note), std::move(respond));
}

void KserveService::Run(int model, InferRequest request, std::string parameters, Respond respond) {
  const InferenceFrontend::ServedModel& served = frontend_->served(model);
  auto done = [frontend = frontend_, &served, id = request.id, binary = request.binary_output,
               answer = request.answer, parameters = std::move(parameters),
               respond = std::move(respond)](absl::StatusOr<InferenceFrontend::InferResult> r) {
    if (!r.ok()) return respond(StatusError(r.status()));
    HttpResponse response;
    response.on_written = [frontend, written = r->written] { frontend->AnswerWritten(written); };
    // Serialized on the connection's thread, just before it is written: its
    // tutti_server_us then covers all the time the server held the request.
    response.prepare = [frontend, &served, id, binary, answer, parameters, r = *std::move(r)](HttpResponse* out) {
      const std::string params = absl::StrFormat(
          R"({%s"reconstructed":%s,"tutti_emulated":%s,"tutti_late":%s,"tutti_batch_size":%d,"tutti_queue_us":%.1f,)"
          R"("tutti_compute_us":%.1f,"tutti_server_us":%.1f})",
          parameters, r.reconstructed ? "true" : "false", r.emulated ? "true" : "false", r.late ? "true" : "false", r.max_batch,
          ToMicros(r.max_queue), ToMicros(r.max_compute), ToMicros(frontend->ServerTime(r)));
      InferResponseBody body = WriteInferResponse(served.config, served.version, id, r.outputs, params, binary, answer);
      out->body = std::move(body.body);
      if (body.json_length) {
        out->content_type = "application/octet-stream";
        out->headers.push_back({"Inference-Header-Content-Length", std::to_string(*body.json_length)});
      }
    };
    respond(std::move(response));
  };
  frontend_->Infer(model, std::move(request), std::move(done));
}

}  // namespace tutti
