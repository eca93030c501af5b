// The three processes of distributed mode, as `tutti scheduler`, `tutti
// frontend` and `tutti backend` run them: each wires its node to etcd and
// to its gRPC listener. All read the same repository and serve config, so
// they agree on model ids and GPU slots (ClusterLayout).
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
#ifndef TUTTI_DISTRIBUTED_PROCESSES_H_
#define TUTTI_DISTRIBUTED_PROCESSES_H_

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "tutti/core/clock.h"
#include "tutti/distributed/backend_node.h"
#include "tutti/distributed/etcd_client.h"
#include "tutti/distributed/remote_engine.h"
#include "tutti/distributed/scheduler_node.h"
#include "tutti/frontend/frontend_server.h"
#include "tutti/server/cluster_layout.h"
#include "tutti/server/server_config.h"

namespace tutti {

struct ProcessOptions {
  std::string etcd = "127.0.0.1:2379";  // host:port of an etcd client URL
  std::string cluster = "tutti";        // keys under /tutti/<cluster>/
  std::string address = "127.0.0.1";    // where this process's internal gRPC service listens
  int port = 0;                         // 0: any free port
  int lease_ttl_s = 1;                  // etcd lease: how fast a dead process is noticed
};

class SchedulerProcess {
 public:
  // Starts the internal listener and campaigns in the background.
  // Errors: etcd unreachable, the port cannot be bound, a policy without
  // membership support (nexus), ParM coding (embedded mode only: the
  // serving core holds its coding groups).
  static absl::StatusOr<std::unique_ptr<SchedulerProcess>> Start(const ClusterLayout& layout,
                                                                const ServerConfig& config,
                                                                const ProcessOptions& options, Clock* clock);
  ~SchedulerProcess();  // stops campaigning or leading; revokes its lease

  const std::string& address() const { return address_; }

 private:
  SchedulerProcess() = default;
  void Campaign(ClusterKeys keys);

  std::string address_;
  std::unique_ptr<EtcdClient> etcd_;
  int64_t lease_ = 0;
  std::unique_ptr<EtcdClient::Background> keep_alive_;
  std::unique_ptr<SchedulerNode> node_;
  std::unique_ptr<GrpcServer> grpc_;
  std::atomic<bool> stop_{false};
  std::unique_ptr<EtcdClient::Background> watch_;  // backends, while leading
  std::thread campaign_;
};

class FrontendProcess {
 public:
  // Starts the KServe listeners (config.http, config.grpc) and follows the
  // leader. Errors: etcd unreachable, a port in use.
  static absl::StatusOr<std::unique_ptr<FrontendProcess>> Start(ClusterLayout layout, const ServerConfig& config,
                                                               const ProcessOptions& options, Clock* clock);
  ~FrontendProcess();

  int http_port() const { return listeners_->port(); }
  int grpc_port() const { return listeners_->grpc_port(); }
  // Its name among the frontends: host-pid.
  const std::string& name() const { return name_; }
  RemoteEngine& engine() { return *engine_; }
  // Graceful, as FrontendServer::Shutdown. Idempotent.
  void Shutdown();

 private:
  FrontendProcess() = default;
  std::string name_;
  std::unique_ptr<EtcdClient> etcd_;
  std::unique_ptr<RemoteEngine> engine_;
  std::unique_ptr<FrontendServer> listeners_;
  std::unique_ptr<EtcdClient::Background> watch_;  // the leader key
};

class BackendProcess {
 public:
  // Builds one executor of executor group `group` (loading its models) and
  // registers as `id` ("" : host-pid). Errors: etcd unreachable, no such
  // group, weights that fail to load, a port in use.
  static absl::StatusOr<std::unique_ptr<BackendProcess>> Start(const ClusterLayout& layout,
                                                              const ServerConfig& config, int group, std::string id,
                                                              const ProcessOptions& options, Clock* clock);
  ~BackendProcess();  // leaves the cluster (revokes its lease), then finishes the batches it holds

  const std::string& address() const { return address_; }
  const std::string& id() const { return id_; }

 private:
  BackendProcess() = default;
  std::string id_;
  std::string address_;
  std::unique_ptr<EtcdClient> etcd_;
  int64_t lease_ = 0;
  std::unique_ptr<EtcdClient::Background> keep_alive_;
  std::unique_ptr<BackendNode> node_;
  std::unique_ptr<GrpcServer> grpc_;
  std::unique_ptr<EtcdClient::Background> watch_;  // the leader key
};

}  // namespace tutti

#endif  // TUTTI_DISTRIBUTED_PROCESSES_H_
