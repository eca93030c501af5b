#include "tutti/server/server.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "tutti/core/status_macros.h"
#include "tutti/executors/emulated_executor.h"
#include "tutti/executors/torch_executor.h"

namespace tutti {
namespace {

// One executor of `group`, holding its models in the group's order.
absl::StatusOr<std::unique_ptr<Executor>> MakeExecutor(const ExecutorGroupConfig& group,
                                                       const std::vector<const ModelVersion*>& models,
                                                       Clock* clock) {
  if (group.kind == "emulated") {
    std::vector<EmulatedExecutor::Model> emulated;
    for (const ModelVersion* v : models) {
      emulated.push_back({v->config.profiles.at(group.profile), v->config.outputs[0].ElementCount()});
    }
    return std::make_unique<EmulatedExecutor>(clock, std::move(emulated));
  }
  std::vector<std::unique_ptr<TorchModel>> loaded;
  for (const ModelVersion* v : models) {
    TUTTI_ASSIGN_OR_RETURN(std::unique_ptr<TorchModel> m, TorchModel::Load(*v));
    loaded.push_back(std::move(m));
  }
  return std::make_unique<TorchExecutor>(clock, std::move(loaded));
}

}  // namespace

absl::StatusOr<std::unique_ptr<Server>> Server::Start(const ModelRepository& repo, const ServerConfig& config,
                                                      Clock* clock) {
  std::unique_ptr<Server> server(new Server());
  SetTorchThreads(config.torch_threads);
  ClusterSpec spec;
  std::vector<InferenceCore::ModelShape> shapes;
  std::vector<InferenceFrontend::ServedModel> served;
  std::vector<std::unique_ptr<Executor>> executors;
  std::string& d = server->description_;
  for (const ExecutorGroupConfig& group : config.executors) {
    SubCluster sub;
    sub.num_gpus = group.count;
    std::vector<const ModelVersion*> versions;
    std::vector<std::string> names;
    for (const std::string& name : group.models) {
      TUTTI_ASSIGN_OR_RETURN(const ModelVersion* v, repo.Find(name));
      const ModelConfig& m = v->config;
      if (m.inputs.size() != 1 || m.outputs.size() != 1) {
        return absl::InvalidArgumentError(absl::StrCat("model '", name, "': Tutti serves models with one input "
                                                       "and one output tensor"));
      }
      const Duration slo = m.latency_objective_ms ? Millis(*m.latency_objective_ms) : config.default_objective;
      sub.models.push_back(static_cast<ModelId>(spec.models.size()));
      spec.models.push_back(ModelSpec{name, m.profiles.at(group.profile), slo});
      shapes.push_back({m.inputs[0].ElementCount(), m.outputs[0].ElementCount()});
      served.push_back({m, v->version});
      versions.push_back(v);
      const LatencyProfile& p = m.profiles.at(group.profile);
      names.push_back(absl::StrFormat("%s v%d (%s; objective %.1f ms; l(1) %.2f ms, l(%d) %.2f ms)", name, v->version,
                                      PlatformName(m.platform), ToMillis(slo), ToMillis(p.Latency(1)),
                                      p.max_batch(), ToMillis(p.Latency(p.max_batch()))));
    }
    for (int i = 0; i < group.count; ++i) {
      TUTTI_ASSIGN_OR_RETURN(std::unique_ptr<Executor> e, MakeExecutor(group, versions, clock));
      executors.push_back(std::move(e));
    }
    absl::StrAppendFormat(&d, "  %d x %s executor (profile %s):\n    %s\n", group.count, group.kind, group.profile,
                          absl::StrJoin(names, "\n    "));
    spec.sub_clusters.push_back(std::move(sub));
  }
  InferenceCore::Options options{config.policy, config.scheduler, {}};
  for (const CodingConfig& c : config.coding) {
    auto id = [&](const std::string& name) {
      for (size_t m = 0; m < spec.models.size(); ++m) {
        if (spec.models[m].name == name) return static_cast<ModelId>(m);
      }
      return ModelId{-1};
    };
    const ModelConfig& parity = (*repo.Find(c.parity_model))->config;
    TUTTI_ASSIGN_OR_RETURN(ParityCodec codec,
                           ParityCodec::Create(parity.parity->encoder, parity.parity->k, parity.inputs[0].shape));
    options.coding.push_back({id(c.model), id(c.parity_model), std::move(codec), c.reconstruct_delay});
    absl::StrAppendFormat(&d, "  ParM: %s protected by %s (k %d, %s encoder)\n", c.model, c.parity_model,
                          parity.parity->k, ParityEncoderName(parity.parity->encoder));
  }
  TUTTI_ASSIGN_OR_RETURN(server->core_, InferenceCore::Create(std::move(spec), std::move(shapes),
                                                              std::move(executors), options, clock));
  server->frontend_ = std::make_unique<InferenceFrontend>(server->core_.get(), std::move(served));
  server->service_ = std::make_unique<KserveService>(server->frontend_.get());
  TUTTI_ASSIGN_OR_RETURN(server->http_, HttpServer::Start(config.http, server->service_.get()));
  if (config.grpc.port >= 0) {
    server->grpc_service_ = std::make_unique<KserveGrpcService>(server->frontend_.get());
    TUTTI_ASSIGN_OR_RETURN(server->grpc_, GrpcServer::Start(config.grpc, {server->grpc_service_.get()}));
  }
  d = absl::StrCat("policy ", config.policy, ", ", server->core_->spec().num_gpus(), " executors\n", d);
  return server;
}

std::string Server::Describe() const { return description_; }

void Server::Shutdown(Duration write_timeout) {
  if (shut_down_) return;
  shut_down_ = true;
  frontend_->StopAccepting();
  http_->StopAccepting();
  core_->StopAccepting();
  core_->WaitIdle();
  if (grpc_) grpc_->Shutdown(write_timeout);
  http_->Drain(write_timeout);
  http_->Stop();
}

Server::~Server() {
  if (http_) Shutdown();
}

}  // namespace tutti
