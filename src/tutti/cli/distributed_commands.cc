// Distributed mode: tutti scheduler | frontend | backend (one process each,
// coordinated through etcd), and tutti cluster (all of them, and an etcd,
// on this machine).
#include <signal.h>
#include <unistd.h>

#include <iostream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "tutti/cli/command_util.h"
#include "tutti/cli/stop_signals.h"
#include "tutti/cli/local_cluster.h"
#include "tutti/server/processes.h"
#include "tutti/executors/torch_executor.h"

namespace tutti::cli {
namespace {

// Mutual TLS among a cluster's processes and to etcd.
void AddClusterTlsFlags(FlagSet& flags, TlsOptions* tls) {
  flags.String("tls-cert", &tls->cert_file, "PEM certificate of this process, from the cluster's CA: mutual TLS on "
                                            "the internal streams and to etcd");
  flags.String("tls-key", &tls->key_file, "PEM private key of --tls-cert");
  flags.String("tls-ca", &tls->client_ca_file, "PEM CA of the cluster: peers (and etcd) must hold a certificate "
                                               "from it");
}

// Flags every distributed process takes, and the cluster they describe.
struct Common {
  std::string repo_dir = "demo_repository";
  std::string config_path;
  ProcessOptions process;

  void AddFlags(FlagSet& flags) {
    flags.String("etcd", &process.etcd,
                 "etcd client endpoint host:port, or an etcd cluster's members IP:port,IP:port,… (default "
                 "127.0.0.1:2379)");
    flags.String("cluster", &process.cluster, "cluster name: keys under /tutti/<name>/ in etcd (default tutti)");
    flags.String("repo", &repo_dir, "model repository directory (the same for every process)");
    flags.String("config", &config_path, "serve config YAML (the same for every process)");
    flags.String("address", &process.address, "address of this process's internal listener: an IP address, or "
                                              "unix:/path for a Unix socket (default 127.0.0.1)");
    flags.Int("internal-port", &process.port, "port of the internal listener (default 0: any free port)");
    flags.Int("lease-ttl-s", &process.lease_ttl_s, "etcd lease TTL in seconds: a dead process is noticed this fast "
                                                   "(default 1)");
    AddClusterTlsFlags(flags, &process.tls);
  }

  // Filled by Load(): the repository, the resolved config and the cluster
  // layout they describe (which points into `repo`).
  std::unique_ptr<ModelRepository> repo;
  ServerConfig config;
  ClusterLayout layout;

  absl::Status Load() {
    absl::StatusOr<ModelRepository> r = ModelRepository::Open(repo_dir);
    if (!r.ok()) return r.status();
    repo = std::make_unique<ModelRepository>(*std::move(r));
    absl::StatusOr<ServerConfig> c = ReadServerConfigFile(config_path);
    if (c.ok() && c->model_less) {  // and the task's generated variants
      absl::StatusOr<ModelRepository> served = ServedRepository(*repo, *c);
      if (!served.ok()) return served.status();
      repo = std::make_unique<ModelRepository>(*std::move(served));
    }
    if (c.ok()) c = ResolveServerConfig(*std::move(c), *repo);
    if (!c.ok()) return c.status();
    config = *std::move(c);
    absl::StatusOr<ClusterLayout> l = LayOutCluster(*repo, config);
    if (!l.ok()) return l.status();
    layout = *std::move(l);
    return absl::OkStatus();
  }
};

}  // namespace

int SchedulerCommand(const Args& args) {
  Common common;
  FlagSet flags("tutti scheduler --etcd HOST:PORT [--repo DIR] [--config FILE] [flags]",
                "A distributed-mode scheduler. It campaigns for leadership in etcd; the leader schedules\n"
                "the requests the frontends submit onto the backends registered in etcd, the others\n"
                "stand by as hot spares and take over when the leader's lease expires.");
  common.AddFlags(flags);
  if (int rc = ParseOrExit(flags, args); rc >= 0) return rc;
  StopSignals signals;
  RaiseFileLimit();
  if (absl::Status s = common.Load(); !s.ok()) return Fail(s);
  ServerConfig& config = common.config;
  ClusterLayout& layout = common.layout;
  absl::StatusOr<std::unique_ptr<SchedulerProcess>> p = SchedulerProcess::Start(layout, config, common.process);
  if (!p.ok()) return Fail(p.status());
  std::cout << absl::StrFormat("tutti scheduler %s: campaigning in etcd %s (cluster '%s'), policy %s, %d GPU slots\n",
                               (*p)->address(), common.process.etcd, common.process.cluster, config.policy,
                               layout.spec.num_gpus())
            << std::flush;
  const int sig = signals.Wait(0);
  std::cerr << StopSignals::Describe(sig) << ": scheduler stopping\n";
  p->reset();
  return 0;
}

int FrontendCommand(const Args& args) {
  Common common;
  int http_port = 8000, grpc_port = 8001;
  std::string http_address = "127.0.0.1";
  FlagSet flags("tutti frontend --etcd HOST:PORT [--repo DIR] [--config FILE] [flags]",
                "A distributed-mode frontend: KServe v2 over HTTP and gRPC. It keeps each request's input,\n"
                "sends its metadata to the leading scheduler (found in etcd), sends the input to the backend\n"
                "the scheduler plans it on, and answers it with the output the backend sends back, or with\n"
                "an error: dropped (deadline), or retryable while no scheduler leads.");
  common.AddFlags(flags);
  flags.String("http-address", &http_address, "KServe listen address (default 127.0.0.1)");
  flags.Int("http-port", &http_port, "KServe v2 HTTP port (default 8000; 0: any free port)");
  flags.Int("grpc-port", &grpc_port, "KServe v2 gRPC port (default 8001; 0: any free port; -1: off)");
  if (int rc = ParseOrExit(flags, args); rc >= 0) return rc;
  StopSignals signals;
  RaiseFileLimit();
  if (absl::Status s = common.Load(); !s.ok()) return Fail(s);
  ServerConfig& config = common.config;
  ClusterLayout& layout = common.layout;
  config.http.address = config.grpc.address = http_address;
  config.http.port = http_port;
  config.grpc.port = grpc_port;
  std::vector<std::string> names;
  for (const ModelSpec& m : layout.spec.models) names.push_back(m.name);
  // An admin's POST /v2/tutti/shutdown stops this frontend as SIGTERM does.
  common.process.on_shutdown_request = [] { kill(getpid(), SIGTERM); };
  absl::StatusOr<std::unique_ptr<FrontendProcess>> p =
      FrontendProcess::Start(std::move(layout), config, common.process);
  if (!p.ok()) return Fail(p.status());
  std::cout << absl::StrFormat("tutti frontend %s: KServe v2 HTTP on %s:%d, gRPC on %s:%d; leader %s\n",
                               (*p)->name(), http_address, (*p)->http_port(), http_address, (*p)->grpc_port(),
                               (*p)->engine().leader().empty() ? "none yet" : (*p)->engine().leader())
            << std::flush;
  const int sig = signals.Wait(0);
  std::cerr << StopSignals::Describe(sig) << ": frontend answering " << (*p)->engine().in_flight()
            << " requests in flight, then stopping\n";
  (*p)->Shutdown();
  std::vector<OutcomeCounts> counts;
  for (const ModelCounters& c : (*p)->engine().Counters()) counts.push_back(c);
  PrintFinalCounts(names, counts, std::cerr);
  p->reset();
  return 0;
}

int BackendCommand(const Args& args) {
  Common common;
  int group = 0;
  std::string id;
  FlagSet flags("tutti backend --etcd HOST:PORT [--repo DIR] [--config FILE] [--group N] [flags]",
                "A distributed-mode backend: one executor of the config's executor group N (a GPU, an\n"
                "emulated GPU or a CPU worker). It registers in etcd under a lease and joins the leading\n"
                "scheduler on a stream; it runs the batches the scheduler plans, with the inputs the\n"
                "frontends send it, and sends them the outputs.");
  common.AddFlags(flags);
  flags.Int("group", &group, "executor group of the config (default 0: the first)");
  flags.String("id", &id, "backend id in etcd (default: <pid>-g<group>)");
  flags.Int("metrics-port", &common.process.metrics_port,
            "serve GET /metrics (Prometheus: this backend and its replication figures) on this port (0: any free "
            "port; -1: none)");
  if (int rc = ParseOrExit(flags, args); rc >= 0) return rc;
  StopSignals signals;
  RaiseFileLimit();
  if (absl::Status s = common.Load(); !s.ok()) return Fail(s);
  ServerConfig& config = common.config;
  ClusterLayout& layout = common.layout;
  SetTorchThreads(config.torch_threads);
  SetInjectedNondeterminism(config.inject_nondeterminism);
  absl::StatusOr<std::unique_ptr<BackendProcess>> p =
      BackendProcess::Start(layout, config, group, id, common.process);
  if (!p.ok()) return Fail(p.status());
  const ExecutorGroupConfig& g = config.executors[group];
  std::cout << absl::StrFormat("tutti backend %s: %s executor of group %d (%s) on %s: registered in etcd %s\n",
                               (*p)->id(), g.kind, group, absl::StrJoin(g.models, ", "), (*p)->address(),
                               common.process.etcd)
            << std::flush;
  if ((*p)->metrics_port() >= 0) {
    std::cout << absl::StrFormat("tutti backend %s: metrics at %s://%s:%d/metrics\n", (*p)->id(),
                                 common.process.tls.cert_file.empty() ? "http" : "https",
                                 absl::StartsWith(common.process.address, "unix:") ? "127.0.0.1" : common.process.address,
                                 (*p)->metrics_port())
              << std::flush;
  }
  const int sig = signals.Wait(0);
  std::cerr << StopSignals::Describe(sig) << ": backend leaving the cluster\n";
  if (const std::string r = (*p)->ReplicationSummary(); !r.empty()) {
    std::cout << "tutti backend " << (*p)->id() << ": " << r << "\n" << std::flush;
  }
  p->reset();
  return 0;
}

int ClusterCommand(const Args& args) {
  LocalClusterOptions options;
  options.repo = "demo_repository";
  std::string backends;
  double duration_s = 0;
  options.http_port = 8000;
  FlagSet flags("tutti cluster [--repo DIR] [--config FILE] [flags]",
                "Runs a whole distributed Tutti on this machine, each part its own process: an etcd\n"
                "(unless --etcd), schedulers (one leader, the rest hot spares), frontends and backends.\n"
                "Frontend i listens on KServe v2 HTTP port P+2i and gRPC port P+2i+1. With a config's\n"
                "autoscale: or model_less:, it starts and stops backend processes as the leading\n"
                "scheduler asks (with model_less:, one executor group per variant).");
  flags.String("repo", &options.repo, "model repository directory");
  flags.String("config", &options.config, "serve config YAML");
  flags.String("etcd", &options.etcd, "use this etcd (host:port) instead of starting one");
  flags.String("cluster", &options.cluster, "cluster name in etcd (default tutti)");
  flags.Int("schedulers", &options.schedulers, "scheduler processes: 1 leader + hot spares (default 1)");
  flags.Int("frontends", &options.frontends, "frontend processes (default 1)");
  flags.String("backends", &backends, "backend processes per executor group, e.g. 8 or 1,2 (default: the config's "
                                      "counts, doubled for groups with stateful models: a backup per primary)");
  flags.Int("port", &options.http_port, "P: first frontend's HTTP port (default 8000; 0: any free ports)");
  flags.Int("lease-ttl-s", &options.lease_ttl_s, "schedulers' etcd lease TTL in seconds: how fast a spare "
                                                 "replaces a dead leader (default 1)");
  flags.Int("backend-lease-ttl-s", &options.backend_lease_ttl_s,
            "backends' etcd lease TTL in seconds (default 3; a backend that dies is noticed at once by its "
            "streams, the lease catches one that hangs)");
  std::string transport = "unix";
  flags.String("transport", &transport, "internal streams between the processes: unix (Unix sockets; they share "
                                        "this host) or tcp (127.0.0.1, as between hosts) (default unix)");
  flags.Bool("batch-cpu-policy", &options.batch_cpu_policy,
             "run schedulers and backends under SCHED_BATCH, so that on cores they share with the frontends "
             "a message does not preempt its sender");
  flags.Double("duration-s", &duration_s, "stop after this many seconds (0: run until signalled)");
  AddClusterTlsFlags(flags, &options.tls);
  if (int rc = ParseOrExit(flags, args); rc >= 0) return rc;
  if (transport != "unix" && transport != "tcp") {
    return Fail(absl::InvalidArgumentError(absl::StrCat("--transport: '", transport, "' is not unix or tcp")));
  }
  options.unix_sockets = transport == "unix";
  for (absl::string_view n : absl::StrSplit(backends, ',', absl::SkipEmpty())) {
    int count = 0;
    if (!absl::SimpleAtoi(n, &count) || count < 0) {
      return Fail(absl::InvalidArgumentError(absl::StrCat("--backends: '", n, "' is not a count")));
    }
    options.backends.push_back(count);
  }
  StopSignals signals;
  RaiseFileLimit();
  char self[4096];
  const ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (len <= 0) return Fail(absl::InternalError("cannot find the tutti binary (/proc/self/exe)"));
  options.tutti_binary = std::string(self, len);
  options.echo = true;
  options.follow_autoscale = true;  // a config with autoscale: backends come and go as the leader asks
  std::cerr << "starting etcd, schedulers, backends and frontends…\n";
  absl::StatusOr<std::unique_ptr<LocalCluster>> cluster = LocalCluster::Start(options);
  if (!cluster.ok()) return Fail(cluster.status());
  std::cout << absl::StrFormat("Tutti cluster '%s' is up: etcd %s, %d schedulers, %d backends, %d frontends\n",
                               options.cluster, (*cluster)->etcd_endpoint(), (*cluster)->schedulers().size(),
                               (*cluster)->backends().size(), (*cluster)->frontends().size());
  for (const LocalCluster::Frontend& f : (*cluster)->frontends()) {
    std::cout << absl::StrFormat("  frontend: http://127.0.0.1:%d (KServe v2 HTTP), 127.0.0.1:%d (gRPC)\n",
                                 f.http_port, f.grpc_port);
  }
  std::cout << "Stop with Ctrl-C (SIGINT) or SIGTERM." << std::endl;
  const int sig = signals.Wait(duration_s);
  std::cerr << StopSignals::Describe(sig) << ": stopping the cluster\n";
  cluster->reset();
  return 0;
}

}  // namespace tutti::cli
