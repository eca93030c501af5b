// KserveService: the KServe v2 / Open Inference Protocol REST routes, served
// from an InferenceCore.
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
// execution failure. A request's N items are scheduled individually; the
// response waits for all of them.
#ifndef TUTTI_FRONTEND_KSERVE_SERVICE_H_
#define TUTTI_FRONTEND_KSERVE_SERVICE_H_

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "tutti/frontend/http_server.h"
#include "tutti/repository/model_config.h"
#include "tutti/serving/inference_core.h"

namespace tutti {

class KserveService final : public HttpHandler {
 public:
  struct ServedModel {
    ModelConfig config;
    int64_t version = 1;
  };

  // models[i] is the core's model i. `core` must outlive this.
  KserveService(InferenceCore* core, std::vector<ServedModel> models);
  ~KserveService() override;

  void Handle(HttpRequest request, Respond respond) override;

  // Ready until StopAccepting(): then /v2/health/ready says 400.
  void StopAccepting() { ready_ = false; }

 private:
  struct ModelState;
  void Infer(int model, const HttpRequest& request, Respond respond);
  std::string Stats(int model) const;
  std::string Metrics() const;

  InferenceCore* const core_;
  std::vector<std::unique_ptr<ModelState>> models_;
  std::atomic<bool> ready_{true};
};

}  // namespace tutti

#endif  // TUTTI_FRONTEND_KSERVE_SERVICE_H_
