// FrontendServer: the KServe v2 listeners of one process — HTTP (with the
// console at /console) and (optionally) gRPC — over an InferenceFrontend
// over an InferenceEngine.
// The embedded server runs one over its InferenceCore; a distributed
// frontend process runs one over a RemoteEngine.
#ifndef TUTTI_FRONTEND_FRONTEND_SERVER_H_
#define TUTTI_FRONTEND_FRONTEND_SERVER_H_

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "tutti/frontend/console_feed.h"
#include "tutti/frontend/console_service.h"
#include "tutti/frontend/frontend_options.h"
#include "tutti/frontend/grpc_server.h"
#include "tutti/frontend/http_server.h"
#include "tutti/frontend/inference_frontend.h"
#include "tutti/frontend/kserve_grpc_service.h"
#include "tutti/frontend/kserve_service.h"

namespace tutti {

class FrontendServer {
 public:
  // Starts listening; gRPC only if grpc.port >= 0. HTTP is served on `loop`
  // (see HttpServer::Start), or a loop of its own when null. `engine` must
  // outlive the server. Errors: an address that cannot be bound, TLS files
  // that are missing or wrong.
  static absl::StatusOr<std::unique_ptr<FrontendServer>> Start(InferenceEngine* engine,
                                                              std::vector<InferenceFrontend::ServedModel> models,
                                                              const FrontendOptions& options,
                                                              EventLoop* loop = nullptr);
  ~FrontendServer();  // Shutdown() if not done yet

  int port() const { return http_->port(); }
  int grpc_port() const { return grpc_ ? grpc_->port() : -1; }

  // Graceful: readiness turns false, new connections and requests are
  // refused (503 / UNAVAILABLE), the engine stops accepting, every accepted
  // request is answered and its response written (up to `write_timeout`),
  // calls are refused until none has come for kQuiet (clients take their
  // UNAVAILABLE or 503, not a closing listener's CANCELLED or reset; at
  // most `write_timeout`), then the listeners close. Idempotent.
  void Shutdown(Duration write_timeout = 5 * kSecond);
  static constexpr Duration kQuiet = 250 * kMillisecond;

 private:
  FrontendServer() = default;
  InferenceEngine* engine_ = nullptr;
  std::unique_ptr<InferenceFrontend> frontend_;
  std::unique_ptr<KserveService> service_;
  std::unique_ptr<ConsoleFeed> console_feed_;
  std::unique_ptr<ConsoleService> console_;
  std::unique_ptr<HttpServer> http_;
  std::unique_ptr<KserveGrpcService> grpc_service_;
  std::unique_ptr<GrpcServer> grpc_;
  bool shut_down_ = false;
};

}  // namespace tutti

#endif  // TUTTI_FRONTEND_FRONTEND_SERVER_H_
