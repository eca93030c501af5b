// The three processes of distributed mode, as `tutti scheduler`, `tutti
// frontend` and `tutti backend` run them: each wires its node to etcd and
// to Tutti's wire (distributed/links.h). All read the same repository and
// serve config, so they agree on model ids and GPU slots (ClusterLayout).
//
// Each process runs one EventLoop: its clock, its streams and (frontend)
// its HTTP connections. The scheduler's and a backend's loop has one
// thread, so their timers and messages never wait for another thread.
//
//   scheduler  campaigns for leadership under a lease; while leading, takes
//              the streams of frontends and backends and schedules; a
//              backend whose etcd key goes (lease expired) is removed
//   frontend   KServe v2 HTTP and gRPC; follows the leader key in etcd and
//              keeps a stream to the leader
//   backend    one executor of a group; registers under a lease, follows the
//              leader key and keeps a stream to the leader
//
// A process whose etcd lease is lost exits (status 3): it can no longer
// be sure it is a member, and a supervisor restarts it.
#ifndef TUTTI_SERVER_PROCESSES_H_
#define TUTTI_SERVER_PROCESSES_H_

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "tutti/autoscale/task_router.h"
#include "tutti/core/clock.h"
#include "tutti/distributed/backend_node.h"
#include "tutti/distributed/replica_node.h"
#include "tutti/etcd/etcd_client.h"
#include "tutti/distributed/links.h"
#include "tutti/distributed/remote_engine.h"
#include "tutti/distributed/scheduler_node.h"
#include "tutti/frontend/frontend_server.h"
#include "tutti/net/event_loop.h"
#include "tutti/net/tls.h"
#include "tutti/net/wire.h"
#include "tutti/server/layout_runtime.h"
#include "tutti/deployment/server_config.h"

namespace tutti {

// Where a cluster keeps its state in etcd, under /tutti/<cluster>/:
//   backends/<id>  "<group> <address>", under the backend's lease
//   leader         "<address>" of the leading scheduler, under its lease
//   autoscale      the leader's autoscaling state (FormatAutoscale), under
//                  its lease: what a provider of backends follows
struct ClusterKeys {
  std::string root;  // "/tutti/<cluster>/"
  explicit ClusterKeys(const std::string& cluster) : root("/tutti/" + cluster + "/") {}
  std::string backends() const { return root + "backends/"; }
  std::string backend(const std::string& id) const { return backends() + id; }
  std::string leader() const { return root + "leader"; }
  std::string autoscale() const { return root + "autoscale"; }
  std::string schedulers() const { return root + "schedulers/"; }
  std::string scheduler(const std::string& address) const { return schedulers() + address; }
};

// The autoscale key's value: "wanted N\nup N\nspares ID …\n" and, model-less,
// "groups N …\n" (wanted per executor group; -1: not scaled), and back
// (InvalidArgument naming what is wrong).
std::string FormatAutoscale(const SchedulerNode::AutoscaleState& state);
absl::StatusOr<SchedulerNode::AutoscaleState> ParseAutoscale(const std::string& text);

struct ProcessOptions {
  std::string etcd = "127.0.0.1:2379";  // host:port of an etcd client URL
  std::string cluster = "tutti";        // keys under /tutti/<cluster>/
  // Where this process's internal listener is: an IP address with `port`
  // (0: any free port), or "unix:/path" (a Unix socket, for peers on the
  // same host).
  std::string address = "127.0.0.1";
  int port = 0;
  int lease_ttl_s = 1;                  // etcd lease: how fast a dead process is noticed
  // A backend's: serve GET /metrics (Prometheus text: who it is and, for a
  // stateful group, its replication figures) over HTTP — HTTPS under `tls`
  // — on `address` (127.0.0.1 for a Unix socket's) at this port (0: any
  // free port; -1: no such listener).
  int metrics_port = -1;
  Duration etcd_timeout = 5 * kSecond;  // for etcd's first answer
  // A frontend's: runs when an admin asks for a shutdown (POST
  // /v2/tutti/shutdown); null: not offered.
  std::function<void()> on_shutdown_request;
  // Mutual TLS among the cluster's processes and to etcd: this process's
  // certificate and key, and the cluster's CA (client_ca_file), which
  // signed every process's certificate and etcd's. A process without one
  // is refused by the others (and by etcd with --client-cert-auth): it can
  // neither register nor take or send plans. cert "": plain.
  TlsOptions tls;
};

class SchedulerProcess {
 public:
  // Starts the internal listener and campaigns in the background. While
  // leading with config.autoscale, publishes the autoscaling state under
  // the autoscale key whenever it changes (checked every 250 ms).
  // Errors: etcd unreachable, the port cannot be bound, a policy without
  // membership support (nexus), ParM coding (embedded mode only: the
  // serving core holds its coding groups).
  static absl::StatusOr<std::unique_ptr<SchedulerProcess>> Start(const ClusterLayout& layout,
                                                                const ServerConfig& config,
                                                                const ProcessOptions& options);
  ~SchedulerProcess();  // stops campaigning or leading; revokes its lease

  const std::string& address() const { return address_; }

 private:
  SchedulerProcess() = default;
  void Campaign(ClusterKeys keys);
  void PublishAutoscaling(const ClusterKeys& keys);  // until stop_

  std::unique_ptr<EventLoop> loop_;
  std::unique_ptr<Tracer> tracer_;  // null: no tracing; outlives node_
  std::string address_;
  std::unique_ptr<EtcdClient> etcd_;
  int64_t lease_ = 0;
  std::unique_ptr<EtcdClient::Background> keep_alive_;
  std::unique_ptr<SchedulerNode> node_;
  std::unique_ptr<WireListener> listener_;
  std::atomic<bool> stop_{false};
  std::unique_ptr<EtcdClient::Background> watch_;  // backends, while leading
  std::thread campaign_;
};

class FrontendProcess {
 public:
  // Starts the KServe listeners (config.http, config.grpc) and follows the
  // leader. Errors: etcd unreachable, a port in use.
  static absl::StatusOr<std::unique_ptr<FrontendProcess>> Start(ClusterLayout layout, const ServerConfig& config,
                                                               const ProcessOptions& options);
  ~FrontendProcess();

  int http_port() const { return listeners_->port(); }
  int grpc_port() const { return listeners_->grpc_port(); }
  // Its name among the frontends: host-pid.
  const std::string& name() const { return name_; }
  RemoteEngine& engine() { return *engine_; }
  // Graceful, as FrontendServer::Shutdown. Idempotent.
  void Shutdown();

 private:
  // What the console shows of the cluster (ConsoleFeed::Options::cluster):
  // this frontend, the scheduler leader it follows, the live backends.
  std::string ConsoleJson(const ClusterKeys& keys) const;
  // /metrics lines of the leader's autoscaling state ("" : none published).
  std::string AutoscaleMetrics() const;
  FrontendProcess() = default;
  std::unique_ptr<EventLoop> loop_;
  std::unique_ptr<WireConnector> connector_;
  std::string name_;
  std::unique_ptr<EtcdClient> etcd_;
  std::unique_ptr<Tracer> tracer_;  // null: no tracing; outlives what records spans
  std::unique_ptr<RemoteEngine> engine_;
  std::unique_ptr<SequenceEngine> sequences_;  // over engine_, under graphs_
  std::unique_ptr<GraphEngine> graphs_;  // over engine_; null: no graph served
  std::unique_ptr<FrontendServer> listeners_;
  std::unique_ptr<EtcdClient::Background> watch_;  // the leader key
  std::unique_ptr<EtcdClient::Background> autoscale_watch_;  // the autoscale key, into autoscale_
  mutable std::mutex autoscale_mu_;
  std::string autoscale_;
  // Model-less: routes the task (null: no model_less); the leader's last
  // routing state and cost, for /metrics (under autoscale_mu_).
  std::unique_ptr<TaskRouter> router_;
  TaskRoutingState task_state_;
  double task_cost_ = 0;
};

class BackendProcess {
 public:
  // Builds one executor of executor group `group` (loading its models) and
  // registers as `id` ("" : host-pid). Errors: etcd unreachable, no such
  // group, weights that fail to load, a port in use.
  static absl::StatusOr<std::unique_ptr<BackendProcess>> Start(const ClusterLayout& layout,
                                                              const ServerConfig& config, int group, std::string id,
                                                              const ProcessOptions& options);
  ~BackendProcess();  // leaves the cluster (revokes its lease), then finishes the batches it holds

  const std::string& address() const { return address_; }
  const std::string& id() const { return id_; }
  // A stateful group's backend: what its replication did, one line ("" otherwise).
  std::string ReplicationSummary() const;
  // Its /metrics text (ProcessOptions::metrics_port), and the listener's
  // port (-1: none).
  std::string MetricsText() const;
  int metrics_port() const { return metrics_ ? metrics_->port() : -1; }

 private:
  BackendProcess() = default;
  std::unique_ptr<EventLoop> loop_;
  std::unique_ptr<Tracer> tracer_;  // null: no tracing; outlives node_
  std::unique_ptr<WireConnector> connector_;
  std::string id_;
  std::string address_;
  std::unique_ptr<EtcdClient> etcd_;
  int64_t lease_ = 0;
  std::unique_ptr<EtcdClient::Background> keep_alive_;
  std::unique_ptr<BackendNode> node_;
  std::unique_ptr<ReplicaNode> replica_;  // a stateful group's: over node_'s executor, slot_
  const ReplicatedExecutor* slot_ = nullptr;
  std::unique_ptr<WireListener> listener_;
  std::unique_ptr<EtcdClient::Background> watch_;  // the leader key
  int group_ = 0;
  std::unique_ptr<HttpHandler> metrics_handler_;
  std::unique_ptr<HttpServer> metrics_;  // over metrics_handler_
};

}  // namespace tutti

#endif  // TUTTI_SERVER_PROCESSES_H_
