#include "tutti/server/server.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "tutti/core/status_macros.h"
#include "tutti/executors/torch_executor.h"
#include "tutti/server/layout_runtime.h"

namespace tutti {

absl::StatusOr<std::unique_ptr<Server>> Server::Start(const ModelRepository& repo, const ServerConfig& config,
                                                      Clock* clock,
                                                      std::function<void()> on_shutdown_request) {
  std::unique_ptr<Server> server(new Server());
  if (clock == nullptr) {
    server->loop_ = std::make_unique<EventLoop>(config.http.threads, "tutti-loop");
    clock = server->loop_.get();
  }
  SetTorchThreads(config.torch_threads);
  SetInjectedNondeterminism(config.inject_nondeterminism);
  TUTTI_ASSIGN_OR_RETURN(ClusterLayout layout, LayOutCluster(repo, config));
  ClusterSpec& spec = layout.spec;
  std::string& d = server->description_;
  d = layout.description;
  std::vector<std::unique_ptr<Executor>> executors;
  std::vector<const ReplicatedExecutor*> replicated;  // owned by the core, which outlives the frontends
  for (size_t g = 0; g < config.executors.size(); ++g) {
    for (int i = 0; i < config.executors[g].count; ++i) {
      TUTTI_ASSIGN_OR_RETURN(std::unique_ptr<Executor> e,
                             MakeGroupExecutor(layout, config, g, clock, i == 0 ? &d : nullptr));
      if (const auto* r = dynamic_cast<const ReplicatedExecutor*>(e.get())) replicated.push_back(r);
      executors.push_back(std::move(e));
    }
  }
  InferenceCore::Options options{config.policy, config.scheduler, config.delays, {}};
  TUTTI_ASSIGN_OR_RETURN(options.stages, MakeStages(layout, config, &d));
  TUTTI_ASSIGN_OR_RETURN(server->core_, InferenceCore::Create(spec, std::move(layout.shapes),
                                                              std::move(executors), options, clock));
  InferenceEngine* engine = server->core_.get();
  server->sequences_ = ServeSequences(engine, spec, layout, clock);
  if (server->sequences_) engine = server->sequences_.get();
  TUTTI_ASSIGN_OR_RETURN(server->graphs_, ServeGraphs(engine, spec, &layout));
  if (server->graphs_) engine = server->graphs_.get();
  TUTTI_ASSIGN_OR_RETURN(FrontendOptions frontend, ReadFrontendOptions(config));
  frontend.frontend.shutdown = std::move(on_shutdown_request);
  if (!replicated.empty()) {
    frontend.frontend.extra_metrics = [replicated] { return ReplicationPrometheusText(replicated); };
  }
  frontend.console.cluster = [json = absl::StrFormat(R"({"mode":"embedded","policy":"%s"})", config.policy)] {
    return json;
  };
  TUTTI_ASSIGN_OR_RETURN(server->listeners_,
                         FrontendServer::Start(engine, std::move(layout.served), frontend, server->loop_.get()));
  d = absl::StrCat("policy ", config.policy, ", ", server->core_->spec().num_gpus(), " executors\n", d);
  return server;
}

std::string Server::Describe() const { return description_; }

void Server::Shutdown(Duration write_timeout) {
  if (shut_down_) return;
  shut_down_ = true;
  if (listeners_) listeners_->Shutdown(write_timeout);
  if (loop_) loop_->Stop();
}

Server::~Server() { Shutdown(); }

}  // namespace tutti
