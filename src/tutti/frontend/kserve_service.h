// KserveService: the KServe v2 / Open Inference Protocol REST routes over an
// InferenceFrontend (readiness follows the frontend's).
//
//   GET  /v2/health/live, /v2/health/ready      200 / 400, empty body
//   GET  /v2                                    server metadata
//   GET  /v2/models/{m}[/versions/{v}]          model metadata
//   GET  /v2/models/{m}[/versions/{v}]/ready    200 / 400
//   POST /v2/models/{m}[/versions/{v}]/infer    inference (JSON)
//   GET  /v2/models/{m}/stats                   counts and durations
//   GET  /metrics                               Prometheus text
//
// Errors are {"error": "…"}: 400 for a bad request, 404 for an unknown
// model, version or path, 405 for a wrong method, 503 when a latency
// objective cannot be met or the server is shutting down, 500 for an
// execution failure.
#ifndef TUTTI_FRONTEND_KSERVE_SERVICE_H_
#define TUTTI_FRONTEND_KSERVE_SERVICE_H_

#include "tutti/frontend/http_server.h"
#include "tutti/frontend/inference_frontend.h"

namespace tutti {

class KserveService final : public HttpHandler {
 public:
  // `frontend` must outlive this.
  explicit KserveService(InferenceFrontend* frontend);

  void Handle(HttpRequest request, Respond respond) override;

 private:
  void Infer(int model, const HttpRequest& request, Respond respond);
  // POST /v2/tasks/{task}/infer (model-less, INFaaS) and GET /v2/tasks/{task}.
  void Task(const std::vector<std::string>& parts, const HttpRequest& request, Respond respond);
  // The request parsed for `model` (counted as rejected when it is bad).
  absl::StatusOr<InferRequest> Parse(int model, const HttpRequest& request);
  // Runs a parsed request; `parameters` are members added to the answer's.
  void Run(int model, InferRequest request, std::string parameters, Respond respond);
  void Repository(const std::vector<std::string>& parts, const HttpRequest& request, Respond respond);

  InferenceFrontend* const frontend_;
};

}  // namespace tutti

#endif  // TUTTI_FRONTEND_KSERVE_SERVICE_H_
