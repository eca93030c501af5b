#include "tutti/cli/local_cluster.h"

#include <stdlib.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <thread>
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
  TUTTI_ASSIGN_OR_RETURN(repo, ServedRepository(repo, config));  // with model_less: and the task's variants
  TUTTI_ASSIGN_OR_RETURN(config, ResolveServerConfig(std::move(config), repo));
  const bool follow = options.follow_autoscale && (config.autoscale || config.model_less);
  std::vector<int> backends = options.backends;
  if (backends.empty()) {  // one per GPU of the config, and a backup for each of a stateful group's
    TUTTI_ASSIGN_OR_RETURN(const ClusterLayout layout, LayOutCluster(repo, config));
    const std::vector<bool> stateful = StatefulGroups(layout);
    for (size_t g = 0; g < config.executors.size(); ++g) {
      backends.push_back(stateful[g] ? 2 * config.executors[g].count : config.executors[g].count);
    }
    if (follow && config.autoscale) {  // what the autoscaler starts with
      backends[0] = config.autoscale->initial_gpus > 0 ? config.autoscale->initial_gpus : config.autoscale->min_gpus;
    }
    if (follow && layout.model_less) {  // the variants' groups (the last): as the leader asks, once it leads
      for (size_t g = backends.size() - layout.model_less->variants.size(); g < backends.size(); ++g) backends[g] = 0;
    }
  }
  for (int i = 0; i < options.schedulers; ++i) TUTTI_RETURN_IF_ERROR(c->AddScheduler());
  for (size_t g = 0; g < backends.size(); ++g) {
    for (int i = 0; i < backends[g]; ++i) TUTTI_RETURN_IF_ERROR(c->AddBackend(static_cast<int>(g)));
  }
  for (int i = 0; i < options.frontends; ++i) TUTTI_RETURN_IF_ERROR(c->AddFrontend());
  if (follow) c->provider_ = std::thread([cluster = c.get()] { cluster->FollowAutoscale(); });
  if (follow && config.model_less) {  // ready once the backends the leader starts with are
    const auto until = std::chrono::steady_clock::now() + std::chrono::nanoseconds(kReadyTimeout);
    while (!c->settled_) {
      if (std::chrono::steady_clock::now() > until) {
        return absl::DeadlineExceededError("the model-less variants' first backends did not come up");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  return c;
}

int LocalCluster::running_backends(int group) const {
  std::lock_guard<std::mutex> lock(backends_mu_);
  int n = 0;
  for (const Backend& b : backends_) n += !b.process->exited() && (group < 0 || b.group == group);
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
    // Per group: the first's `wanted` without model-less groups.
    const std::vector<int> wanted = state->groups.empty() ? std::vector<int>{state->wanted} : state->groups;
    bool settled = true;
    for (int g = 0; g < static_cast<int>(wanted.size()) && !stop_; ++g) {
      if (wanted[g] < 0) continue;  // not scaled
      const int running = running_backends(g);
      settled = settled && running == wanted[g];
      if (running < wanted[g]) {
        std::cerr << absl::StrFormat("autoscale provider: group %d: %d backends running, %d wanted: starting %d\n",
                                     g, running, wanted[g], wanted[g] - running);
        if (absl::Status s = AddBackends(g, wanted[g] - running); !s.ok()) {
          std::cerr << "autoscale provider: " << s.message() << "\n";
        }
        autoscale_starts_ += wanted[g] - running;
        continue;
      }
      if (running > wanted[g]) StopASpare(g, *state, running, wanted[g]);
    }
    if (settled) settled_ = true;
  }
}

void LocalCluster::StopASpare(int group, const SchedulerNode::AutoscaleState& state, int running, int wanted) {
  // A spare holds no slot: stopping it loses nothing.
  ChildProcess* spare = nullptr;
  std::string id;
  {
    std::lock_guard<std::mutex> lock(backends_mu_);
    for (const Backend& b : backends_) {
      if (b.group == group && !b.process->exited() && absl::c_linear_search(state.spares, b.id)) {
        spare = b.process.get();
        id = b.id;
        break;
      }
    }
  }
  if (spare == nullptr) return;  // the surplus is still draining its slots
  std::cerr << absl::StrFormat("autoscale provider: group %d: %d backends running, %d wanted: stopping spare %s\n",
                               group, running, wanted, id);
  ++autoscale_stops_;  // counted first: Terminate() returns once it has exited
  spare->Terminate();
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

absl::Status LocalCluster::AddBackend(int group) { return AddBackends(group, 1); }

absl::Status LocalCluster::AddBackends(int group, int count) {
  // All started at once, then each waited for: they load side by side.
  std::vector<Backend> started;
  {
    std::lock_guard<std::mutex> lock(backends_mu_);
    for (int k = 0; k < count; ++k) {
      const int n = next_backend_++;
      const std::string id = absl::StrCat("b", n);
      std::vector<std::string> args = CommonArgs("backend", absl::StrCat("backend-", n));
      args.insert(args.end(), {"--group", absl::StrCat(group), "--id", id});
      TUTTI_ASSIGN_OR_RETURN(
          std::unique_ptr<ChildProcess> p,
          ChildProcess::Start(args, options_.echo ? absl::StrCat("[backend ", n, "] ") : "", InternalPolicy()));
      started.push_back({std::move(p), group, id});
    }
  }
  absl::Status status;
  for (Backend& b : started) {
    absl::StatusOr<std::string> ready = b.process->WaitForOutput(": registered", kReadyTimeout);
    if (!ready.ok() && status.ok()) status = Explain(ready.status(), absl::StrCat("backend ", b.id));
  }
  std::lock_guard<std::mutex> lock(backends_mu_);
  for (Backend& b : started) backends_.push_back(std::move(b));
  return status;
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
