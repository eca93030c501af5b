#include "tutti/frontend/frontend_server.h"

#include <utility>

#include "tutti/core/status_macros.h"

namespace tutti {

absl::StatusOr<std::unique_ptr<FrontendServer>> FrontendServer::Start(
    InferenceEngine* engine, std::vector<InferenceFrontend::ServedModel> models, const FrontendOptions& options,
    EventLoop* loop) {
  std::unique_ptr<FrontendServer> s(new FrontendServer());
  s->engine_ = engine;
  s->frontend_ = std::make_unique<InferenceFrontend>(engine, std::move(models), options.frontend);
  s->service_ = std::make_unique<KserveService>(s->frontend_.get());
  s->console_feed_ = std::make_unique<ConsoleFeed>(s->frontend_.get(), options.console);
  s->console_ = std::make_unique<ConsoleService>(s->frontend_.get(), s->console_feed_.get(), s->service_.get());
  TUTTI_ASSIGN_OR_RETURN(s->http_, HttpServer::Start(options.http, s->console_.get(), loop));
  if (options.grpc.port >= 0) {
    s->grpc_service_ = std::make_unique<KserveGrpcService>(s->frontend_.get());
    TUTTI_ASSIGN_OR_RETURN(s->grpc_, GrpcServer::Start(options.grpc, {s->grpc_service_.get()}));
  }
  return s;
}

void FrontendServer::Shutdown(Duration write_timeout) {
  if (shut_down_) return;
  shut_down_ = true;
  frontend_->StopAccepting();
  console_feed_->Stop();  // its pages' connections close with the listener's others
  http_->StopAccepting();
  engine_->StopAccepting();
  engine_->WaitIdle();
  frontend_->AwaitQuiet(kQuiet, write_timeout);
  if (grpc_) grpc_->Shutdown(write_timeout);
  http_->Drain(write_timeout);
  http_->Stop();
}

FrontendServer::~FrontendServer() {
  if (http_) Shutdown();
}

}  // namespace tutti
