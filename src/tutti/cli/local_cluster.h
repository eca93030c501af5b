// LocalCluster: a whole distributed Tutti on this machine, each part its own
// process — etcd (LocalEtcd, unless one is given), schedulers (the first
// leads, the others are hot spares), frontends and backends — started from
// the `tutti` binary with one repository and serve config. `tutti cluster`
// runs one; the distributed tests and benchmark start one and kill its
// processes to inject faults.
#ifndef TUTTI_CLI_LOCAL_CLUSTER_H_
#define TUTTI_CLI_LOCAL_CLUSTER_H_

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "tutti/core/child_process.h"
#include "tutti/etcd/local_etcd.h"
#include "tutti/net/tls.h"
#include "tutti/distributed/scheduler_node.h"

namespace tutti {

struct LocalClusterOptions {
  std::string tutti_binary;             // path of `tutti`
  std::string repo;
  std::string config;                   // serve config YAML ("" : defaults)
  std::string etcd;                     // "" : start a LocalEtcd
  std::string cluster = "tutti";
  int schedulers = 1;
  int frontends = 1;
  std::vector<int> backends;            // per executor group; empty: one per GPU of the config
  int http_port = 0;                    // frontend i: HTTP http_port + 2i, gRPC + 2i + 1; 0: any free ports
  int lease_ttl_s = 1;                  // schedulers' (how fast a dead leader is replaced) and frontends'
  // Backends': a backend that dies is noticed at once by its streams
  // ending; the lease catches only one that hangs. Longer: fewer
  // keep-alives for etcd to answer.
  int backend_lease_ttl_s = 3;
  // The internal streams between the processes: over Unix sockets (they
  // share this host) or TCP on 127.0.0.1 (as between hosts).
  bool unix_sockets = true;
  // Schedulers and backends run under SCHED_BATCH (ChildProcess::CpuPolicy):
  // on a host whose cores they share with the frontends, a message no
  // longer preempts its sender. Measured with bench/server_cpu.sh.
  bool batch_cpu_policy = true;
  // Mutual TLS among the processes and to the started etcd (one identity
  // for all of them; ProcessOptions::tls). cert "": plain.
  TlsOptions tls;
  bool echo = false;                    // copy the processes' output to stderr, prefixed
  // Act as the provider of backends for the leader's autoscaler, if the
  // config has `autoscale:` or `model_less:` (otherwise nothing is
  // followed): follow its state in etcd (ClusterKeys::autoscale) every
  // 250 ms, starting backends of a group while fewer than it wants are
  // running and stopping (SIGTERM) the group's spares — backends holding no
  // slot — while more are. Backends that die are replaced the same way.
  // Without `backends`, a config with `autoscale:` starts its initial
  // count; with `model_less:`, the variants' backends are left to the
  // provider, and Start() returns once it has started what the leader
  // wants first.
  bool follow_autoscale = false;
};

class LocalCluster {
 public:
  struct Frontend {
    std::unique_ptr<ChildProcess> process;
    int http_port = 0;
    int grpc_port = 0;
  };
  struct Backend {
    std::unique_ptr<ChildProcess> process;
    int group = 0;
    std::string id;  // its --id: "b<index>"
  };

  // Starts everything and waits until each process is ready (the first
  // scheduler leading, every backend registered, every frontend listening).
  // Errors carry the failing process's output.
  static absl::StatusOr<std::unique_ptr<LocalCluster>> Start(const LocalClusterOptions& options);
  ~LocalCluster();  // stops frontends, backends, schedulers, then etcd

  const std::string& etcd_endpoint() const { return etcd_endpoint_; }
  // Backend processes running now, of `group` (-1: of all; safe beside the
  // autoscale provider, unlike backends(), which it appends to).
  int running_backends(int group = -1) const;
  // Backend processes the autoscale provider started and stopped.
  int autoscale_starts() const { return autoscale_starts_; }
  int autoscale_stops() const { return autoscale_stops_; }
  std::vector<std::unique_ptr<ChildProcess>>& schedulers() { return schedulers_; }
  std::vector<Frontend>& frontends() { return frontends_; }
  std::vector<Backend>& backends() { return backends_; }

  absl::Status AddScheduler();
  absl::Status AddBackend(int group);
  // `count` backends of `group`, started together (each loads while the
  // others do); errors name the first that failed to register.
  absl::Status AddBackends(int group, int count);
  absl::Status AddFrontend();

 private:
  LocalCluster() = default;
  // The provider's loop (LocalClusterOptions::follow_autoscale), until stop_.
  void FollowAutoscale();
  // Stops (SIGTERM) one of `group`'s backends that `state` lists as spares, if any.
  void StopASpare(int group, const SchedulerNode::AutoscaleState& state, int running, int wanted);
  // The arguments of every process; `name` names its internal Unix socket.
  std::vector<std::string> CommonArgs(const std::string& command, const std::string& name) const;
  // Schedulers' and backends' (options_.batch_cpu_policy).
  ChildProcess::CpuPolicy InternalPolicy() const {
    return options_.batch_cpu_policy ? ChildProcess::CpuPolicy::kBatch : ChildProcess::CpuPolicy::kNormal;
  }

  LocalClusterOptions options_;
  std::unique_ptr<LocalEtcd> etcd_;
  std::string etcd_endpoint_;
  std::string socket_dir_;  // the processes' Unix sockets; "" : TCP
  std::vector<std::unique_ptr<ChildProcess>> schedulers_;
  std::vector<Frontend> frontends_;
  std::vector<Backend> backends_;  // appended to under backends_mu_; never shrinks (ids stay unique)
  mutable std::mutex backends_mu_;
  int next_backend_ = 0;  // the next backend's index (its id "b<index>"); under backends_mu_
  std::atomic<bool> stop_{false};
  std::atomic<bool> settled_{false};  // the provider once saw every group run what the leader wants
  std::atomic<int> autoscale_starts_{0}, autoscale_stops_{0};
  std::thread provider_;
};

}  // namespace tutti

#endif  // TUTTI_CLI_LOCAL_CLUSTER_H_
