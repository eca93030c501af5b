// Server: one Tutti serving process — the KServe v2 HTTP and gRPC frontends, the
// scheduler on the given clock, and the executors of a resolved
// ServerConfig, over the models of a repository. `tutti serve` runs one; the
// end-to-end tests start one on a free port.
#ifndef TUTTI_SERVER_SERVER_H_
#define TUTTI_SERVER_SERVER_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "tutti/autoscale/autoscaler.h"
#include "tutti/autoscale/task_autoscaler.h"
#include "tutti/core/clock.h"
#include "tutti/frontend/frontend_server.h"
#include "tutti/graphs/graph_engine.h"
#include "tutti/repository/model_repository.h"
#include "tutti/sequences/sequence_engine.h"
#include "tutti/deployment/server_config.h"
#include "tutti/serving/sharded_core.h"

namespace tutti {

class Server {
 public:
  // Loads the models (latest versions), builds the executors and starts
  // listening. `config` must be resolved (ResolveServerConfig) against
  // `repo` (with model_less: the ServedRepository). By default
  // one event loop (config.http.threads threads) serves the connections and
  // is the clock of the scheduler and the executors (see EventLoop); a
  // `clock` given instead must advance by itself (torch executors run in
  // real time) and outlive the server. `on_shutdown_request` runs when an
  // admin asks for a shutdown (POST /v2/tutti/shutdown); null: not offered.
  // Errors: weights that fail to load, a port in use, token or TLS files
  // missing or wrong, ….
  static absl::StatusOr<std::unique_ptr<Server>> Start(const ModelRepository& repo, const ServerConfig& config,
                                                      Clock* clock = nullptr,
                                                      std::function<void()> on_shutdown_request = nullptr);
  ~Server();  // Shutdown() if not done yet

  int port() const { return listeners_->port(); }
  // The gRPC port; -1 when the config turns gRPC off.
  int grpc_port() const { return listeners_->grpc_port(); }
  // A few lines: the models with their objectives, the executor groups.
  std::string Describe() const;
  ShardedCore& core() { return *core_; }

  // Graceful: readiness turns false, no new connections or requests are
  // accepted (those that come get 503 or UNAVAILABLE), every accepted request is answered
  // and its response written (up to `write_timeout`), then the listener
  // closes and the event loop stops. Idempotent.
  void Shutdown(Duration write_timeout = 5 * kSecond);

 private:
  Server() = default;
  // Closed-loop autoscaling over the core's executors (config.autoscale).
  static void StartAutoscaler(const AutoscaleOptions& options, Clock* clock, Server* server);
  // INFaaS over config.model_less's variants: a TaskAutoscaler that routes
  // the task's model-less requests (through `frontend`'s route_task) and
  // takes the variants' executors up and down.
  static void StartTaskAutoscaler(const ModelLessTask& task, const ServerConfig& config, Clock* clock, Server* server,
                                  InferenceFrontendOptions* frontend);

  std::string description_;
  std::unique_ptr<EventLoop> loop_;  // null when given a clock; outlives the rest
  std::unique_ptr<Tracer> tracer_;  // null: no tracing; outlives what records spans
  std::unique_ptr<ShardedCore> core_;
  std::unique_ptr<SequenceEngine> sequences_;  // null: no stateful model served
  std::unique_ptr<GraphEngine> graphs_;  // null: no graph served
  std::unique_ptr<FrontendServer> listeners_;
  std::unique_ptr<Autoscaler> autoscaler_;  // null: no autoscaling (stopped before the rest goes)
  std::unique_ptr<TaskAutoscaler> task_scaler_;  // null: no model_less (stopped before the rest goes)
  bool shut_down_ = false;
};

}  // namespace tutti

#endif  // TUTTI_SERVER_SERVER_H_
