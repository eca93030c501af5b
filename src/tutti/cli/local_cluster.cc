#include "tutti/cli/local_cluster.h"

#include <stdlib.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <utility>

#include "absl/algorithm/container.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tutti/core/status_macros.h"
#include "tutti/etcd/etcd_client.h"
#include "tutti/server/processes.h"
#include "tutti/repository/model_repository.h"
#include "tutti/deployment/cluster_layout.h"
#include "tutti/deployment/server_config.h"

namespace tutti {
namespace {

constexpr Duration kReadyTimeout = 60 * kSecond;

absl::Status Explain(const absl::Status& s, const std::string& what) {
  return absl::Status(s.code(), absl::StrCat(what, ": ", s.message()));
}

}  // namespace

std::vector<std::string> LocalCluster::CommonArgs(const std::string& command, const std::string& name) const {
  const int ttl = command == "backend" ? options_.backend_lease_ttl_s : options_.lease_ttl_s;
  std::vector<std::string> args = {options_.tutti_binary, command, "--etcd", etcd_endpoint_, "--cluster",
                                   options_.cluster, "--repo", options_.repo, "--lease-ttl-s", absl::StrCat(ttl)};
  if (!socket_dir_.empty()) {
    args.push_back("--address");
    args.push_back(absl::StrCat("unix:", socket_dir_, "/", name, ".sock"));
  }
  if (!options_.config.empty()) {
    args.push_back("--config");
    args.push_back(options_.config);
  }
  if (options_.tls.enabled()) {
    for (const std::string& a : {std::string("--tls-cert"), options_.tls.cert_file, std::string("--tls-key"),
                                 options_.tls.key_file, std::string("--tls-ca"), options_.tls.client_ca_file}) {
      args.push_back(a);
    }
  }
  return args;
}

absl::StatusOr<std::unique_ptr<LocalCluster>> LocalCluster::Start(const LocalClusterOptions& options) {
  std::unique_ptr<LocalCluster> c(new LocalCluster());
  c->options_ = options;
  if (options.etcd.empty()) {
    TUTTI_ASSIGN_OR_RETURN(c->etcd_, LocalEtcd::Start("/usr/bin/etcd", options.tls));
    c->etcd_endpoint_ = c->etcd_->endpoint();
  } else {
    c->etcd_endpoint_ = options.etcd;
  }
  if (options.unix_sockets) {
    std::string dir = (std::filesystem::temp_directory_path() / "tutti-cluster-XXXXXX").string();
    if (mkdtemp(dir.data()) == nullptr) return absl::InternalError("cannot create a directory for the sockets");
    c->socket_dir_ = dir;
  }
  TUTTI_ASSIGN_OR_RETURN(ModelRepository repo, ModelRepository::Open(options.repo));
  TUTTI_ASSIGN_OR_RETURN(ServerConfig config, ReadServerConfigFile(options.config));
  TUTTI_ASSIGN_OR_RETURN(config, ResolveServerConfig(std::move(config), repo));
  const bool follow = options.follow_autoscale && config.autoscale.has_value();
  std::vector<int> backends = options.backends;
  if (backends.empty()) {  // one per GPU of the config, and a backup for each of a stateful group's
    TUTTI_ASSIGN_OR_RETURN(const ClusterLayout layout, LayOutCluster(repo, config));
    const std::vector<bool> stateful = StatefulGroups(layout);
    for (size_t g = 0; g < config.executors.size(); ++g) {
      backends.push_back(stateful[g] ? 2 * config.executors[g].count : config.executors[g].count);
    }
    if (follow) {  // what the autoscaler starts with
      backends[0] = config.autoscale->initial_gpus > 0 ? config.autoscale->initial_gpus : config.autoscale->min_gpus;
    }
  }
  for (int i = 0; i < options.schedulers; ++i) TUTTI_RETURN_IF_ERROR(c->AddScheduler());
  for (size_t g = 0; g < backends.size(); ++g) {
    for (int i = 0; i < backends[g]; ++i) TUTTI_RETURN_IF_ERROR(c->AddBackend(static_cast<int>(g)));
  }
  for (int i = 0; i < options.frontends; ++i) TUTTI_RETURN_IF_ERROR(c->AddFrontend());
  if (follow) c->provider_ = std::thread([cluster = c.get()] { cluster->FollowAutoscale(); });
  return c;
}

int LocalCluster::running_backends() const {
  std::lock_guard<std::mutex> lock(backends_mu_);
  int n = 0;
  for (const Backend& b : backends_) n += !b.process->exited();
  return n;
}

void LocalCluster::FollowAutoscale() {
  absl::StatusOr<std::unique_ptr<EtcdClient>> etcd = EtcdClient::Connect(etcd_endpoint_, 5 * kSecond, options_.tls);
  if (!etcd.ok()) {
    std::cerr << "autoscale provider: cannot reach etcd: " << etcd.status().message() << "\n";
    return;
  }
  const std::string key = ClusterKeys(options_.cluster).autoscale();
  for (; !stop_; std::this_thread::sleep_for(std::chrono::milliseconds(250))) {
    absl::StatusOr<std::optional<EtcdClient::KeyValue>> kv = (*etcd)->Get(key);
    if (!kv.ok() || !kv->has_value()) continue;  // no leader, or not autoscaling
    absl::StatusOr<SchedulerNode::AutoscaleState> state = ParseAutoscale((*kv)->value);
    if (!state.ok()) {
      std::cerr << "autoscale provider: " << state.status().message() << "\n";
      continue;
    }
    const int running = running_backends();
    if (running < state->wanted) {
      std::cerr << absl::StrFormat("autoscale provider: %d backends running, %d wanted: starting one\n", running,
                                   state->wanted);
      if (absl::Status s = AddBackend(0); !s.ok()) {
        std::cerr << "autoscale provider: " << s.message() << "\n";
      } else {
        ++autoscale_starts_;
      }
      continue;
    }
    if (running <= state->wanted) continue;
    // A spare holds no slot: stopping it loses nothing.
    ChildProcess* spare = nullptr;
    std::string id;
    {
      std::lock_guard<std::mutex> lock(backends_mu_);
      for (const Backend& b : backends_) {
        if (!b.process->exited() && absl::c_linear_search(state->spares, b.id)) {
          spare = b.process.get();
          id = b.id;
          break;
        }
      }
    }
    if (spare == nullptr) continue;  // the surplus is still draining its slots
    std::cerr << absl::StrFormat("autoscale provider: %d backends running, %d wanted: stopping spare %s\n", running,
                                 state->wanted, id);
    spare->Terminate();
    ++autoscale_stops_;
  }
}

absl::Status LocalCluster::AddScheduler() {
  const int n = static_cast<int>(schedulers_.size());
  TUTTI_ASSIGN_OR_RETURN(std::unique_ptr<ChildProcess> p,
                         ChildProcess::Start(CommonArgs("scheduler", absl::StrCat("scheduler-", n)),
                                             options_.echo ? absl::StrCat("[scheduler ", n, "] ") : "", InternalPolicy()));
  absl::StatusOr<std::string> ready = p->WaitForOutput(schedulers_.empty() ? ": leading" : ": standing by", kReadyTimeout);
  if (!ready.ok()) return Explain(ready.status(), absl::StrCat("scheduler ", n));
  schedulers_.push_back(std::move(p));
  return absl::OkStatus();
}

absl::Status LocalCluster::AddBackend(int group) {
  int n = 0;
  {
    std::lock_guard<std::mutex> lock(backends_mu_);
    n = static_cast<int>(backends_.size());
  }
  const std::string id = absl::StrCat("b", n);
  std::vector<std::string> args = CommonArgs("backend", absl::StrCat("backend-", n));
  args.insert(args.end(), {"--group", absl::StrCat(group), "--id", id});
  TUTTI_ASSIGN_OR_RETURN(std::unique_ptr<ChildProcess> p,
                         ChildProcess::Start(args, options_.echo ? absl::StrCat("[backend ", n, "] ") : "", InternalPolicy()));
  absl::StatusOr<std::string> ready = p->WaitForOutput(": registered", kReadyTimeout);
  if (!ready.ok()) return Explain(ready.status(), absl::StrCat("backend ", n));
  std::lock_guard<std::mutex> lock(backends_mu_);
  backends_.push_back({std::move(p), group, id});
  return absl::OkStatus();
}

absl::Status LocalCluster::AddFrontend() {
  const int n = static_cast<int>(frontends_.size());
  std::vector<std::string> args = CommonArgs("frontend", absl::StrCat("frontend-", n));
  const int http = options_.http_port > 0 ? options_.http_port + 2 * n : 0;
  const int grpc = options_.http_port > 0 ? options_.http_port + 2 * n + 1 : 0;
  args.insert(args.end(), {"--http-port", absl::StrCat(http), "--grpc-port", absl::StrCat(grpc)});
  TUTTI_ASSIGN_OR_RETURN(std::unique_ptr<ChildProcess> p,
                         ChildProcess::Start(args, options_.echo ? absl::StrCat("[frontend ", n, "] ") : ""));
  absl::StatusOr<std::string> ready = p->WaitForOutput("KServe v2 HTTP on", kReadyTimeout);
  if (!ready.ok()) return Explain(ready.status(), absl::StrCat("frontend ", n));
  Frontend f;
  char host[64];
  if (std::sscanf(ready->c_str(), "tutti frontend %*s KServe v2 HTTP on %63[^:]:%d, gRPC on %*[^:]:%d", host,
                  &f.http_port, &f.grpc_port) != 3) {
    return absl::InternalError(absl::StrCat("frontend ", n, ": cannot read its ports from '", *ready, "'"));
  }
  f.process = std::move(p);
  frontends_.push_back(std::move(f));
  return absl::OkStatus();
}

LocalCluster::~LocalCluster() {
  stop_ = true;
  if (provider_.joinable()) provider_.join();
  for (Frontend& f : frontends_) f.process->Terminate();
  for (Backend& b : backends_) b.process->Terminate();
  for (auto& s : schedulers_) s->Terminate();
  etcd_.reset();
  if (!socket_dir_.empty()) {
    std::error_code ignored;
    std::filesystem::remove_all(socket_dir_, ignored);
  }
}

}  // namespace tutti
