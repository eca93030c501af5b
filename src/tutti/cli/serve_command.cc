// tutti serve: one serving process over a model repository.

#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <iostream>

#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "tutti/cli/command_util.h"
#include "tutti/cli/stop_signals.h"
#include "tutti/server/server.h"

namespace tutti::cli {
namespace {

// The curl commands printed at startup; they work as printed.
void PrintExamples(const ModelRepository& repo, const ServerConfig& config, int port, std::ostream& out) {
  const std::string host = absl::StrFormat("%s:%d", config.http.address == "0.0.0.0" ? "127.0.0.1"
                                                                                       : config.http.address,
                                           port);
  // The example request is one Fashion-MNIST image: shown with the first
  // served model that takes one, outside any sequence.
  std::string model = config.executors[0].models[0], takes_image;
  for (const ExecutorGroupConfig& g : config.executors) {
    for (const std::string& name : g.models) {
      absl::StatusOr<const ModelVersion*> v = repo.Find(name);
      if (takes_image.empty() && v.ok() && !(*v)->config.stateful() && !(*v)->config.inputs.empty() &&
          (*v)->config.inputs[0].shape == std::vector<int64_t>{1, 28, 28}) {
        takes_image = name;
      }
    }
  }
  if (!takes_image.empty()) model = takes_image;
  out << "Try:\n"
      << absl::StrFormat("  curl -s -o /dev/null -w '%%{http_code}\\n' %s/v2/health/ready\n", host)
      << absl::StrFormat("  curl -s %s/v2/models/%s\n", host, model);
  const std::string example = (std::filesystem::path(repo.root()) / kExampleRequestFile).string();
  if (std::filesystem::exists(example) && !takes_image.empty()) {
    out << absl::StrFormat("  curl -s -X POST %s/v2/models/%s/infer -H 'Content-Type: application/json' -d @%s\n",
                           host, model, example);
  }
  out << absl::StrFormat("  curl -s %s/metrics\n", host)
      << absl::StrFormat("The live console, in a browser: %s://%s/console\n",
                         config.http.tls.enabled() ? "https" : "http", host);
  if (config.http.tls.enabled() || !config.auth.inference_tokens_file.empty() || !config.auth.admin_tokens_file.empty()) {
    out << "  (with TLS: https:// and --cacert <the CA of the certificate>; with tokens: -H 'Authorization: Bearer "
           "<token>', an admin token for /metrics and the console)\n";
  }
}

}  // namespace

int ServeCommand(const Args& args) {
  std::string repo_dir = "demo_repository", config_path, address, policy;
  std::string tls_cert, tls_key, tls_client_ca, inference_tokens, admin_tokens, trace_file, trace_endpoint,
      trace_link;
  double trace_ratio = 0;
  int port = 8000, grpc_port = 8001, scheduler_shards = 1;
  int64_t max_queue_size = 16384;
  double duration_s = 0;
  FlagSet flags("tutti serve --repo DIR [--config FILE] [flags]",
                "Serves the models of a repository over the KServe v2 protocol, HTTP and gRPC:\n"
                "frontends, scheduler and executors in one process. The serve config (YAML) chooses the\n"
                "policy, the listener and the executors; without one, every model with weights\n"
                "runs on one torch (CPU) executor. SIGINT/SIGTERM stop gracefully: no new\n"
                "requests, every accepted one answered, later calls refused (UNAVAILABLE, 503)\n"
                "until none has come for 250 ms, then the listeners close. See the README for\n"
                "the config format.");
  flags.String("repo", &repo_dir, "model repository directory");
  flags.String("config", &config_path, "serve config YAML (default: built-in defaults)");
  flags.String("address", &address, "listen address (overrides the config; default 127.0.0.1)");
  flags.Int("port", &port, "KServe v2 HTTP port (overrides the config's; 0: any free port)");
  flags.Int("grpc-port", &grpc_port, "KServe v2 gRPC port (overrides the config's; 0: any free; -1: off)");
  flags.String("policy", &policy, "scheduling policy (overrides the config; default adaptive)");
  flags.Int("scheduler-shards", &scheduler_shards,
            "schedule on this many cores, each shard whole executor groups (overrides the config's "
            "scheduler_shards; at most the groups)");
  flags.Double("duration-s", &duration_s, "stop gracefully after this many seconds (0: run until signalled)");
  flags.String("tls-cert", &tls_cert, "PEM certificate chain: TLS on both listeners (overrides the config's tls)");
  flags.String("tls-key", &tls_key, "PEM private key of --tls-cert");
  flags.String("tls-client-ca", &tls_client_ca, "PEM CA certificates: clients must present a certificate from one");
  flags.String("inference-tokens-file", &inference_tokens,
               "bearer tokens for inference and metadata, one per line (overrides the config's auth)");
  flags.String("admin-tokens-file", &admin_tokens,
               "bearer tokens for statistics, /metrics, the repository index and POST /v2/tutti/shutdown");
  flags.Int64("max-queue-size", &max_queue_size,
              "per model: items waiting or running before requests are refused (503 / RESOURCE_EXHAUSTED); 0: no "
              "limit (overrides the config's)");
  flags.String("trace-file", &trace_file,
               "trace requests (W3C traceparent, OpenTelemetry): append their spans to this file as OTLP/JSON "
               "lines (overrides the config's tracing.file)");
  flags.String("trace-endpoint", &trace_endpoint,
               "trace requests: POST their spans to this OTLP/HTTP collector, e.g. http://localhost:4318/v1/traces");
  flags.String("trace-link", &trace_link,
               "with tracing: where the console links a slow request's trace, {trace_id} standing for its id, e.g. "
               "http://localhost:16686/trace/{trace_id} (a Jaeger UI)");
  flags.Double("trace-ratio", &trace_ratio,
               "with tracing: the share of requests without a traceparent that start a trace, 0 to 1 (default 0: "
               "only those whose caller samples them)");
  if (int rc = ParseOrExit(flags, args); rc >= 0) return rc;

  absl::StatusOr<ModelRepository> repo = ModelRepository::Open(repo_dir);
  if (!repo.ok()) return Fail(repo.status());
  absl::StatusOr<ServerConfig> config = ReadServerConfigFile(config_path);
  if (!config.ok()) return Fail(config.status());
  if (!address.empty()) config->http.address = address;
  if (flags.WasSet("port")) config->http.port = port;
  if (flags.WasSet("grpc-port")) config->grpc.port = grpc_port;
  if (!address.empty()) config->grpc.address = address;
  if (!policy.empty()) config->policy = policy;
  if (flags.WasSet("scheduler-shards")) {
    if (scheduler_shards < 1) return Fail(absl::InvalidArgumentError("--scheduler-shards must be at least 1"));
    config->scheduler_shards = scheduler_shards;
  }
  if (!tls_cert.empty() || !tls_key.empty() || !tls_client_ca.empty()) {
    config->http.tls = TlsOptions{tls_cert, tls_key, tls_client_ca};
    config->grpc.tls = config->http.tls;
  }
  if (!inference_tokens.empty()) config->auth.inference_tokens_file = inference_tokens;
  if (!admin_tokens.empty()) config->auth.admin_tokens_file = admin_tokens;
  if (flags.WasSet("max-queue-size")) {
    if (max_queue_size < 0) return Fail(absl::InvalidArgumentError("--max-queue-size must not be negative"));
    config->max_queue_size = max_queue_size;
  }
  if (!trace_file.empty() || !trace_endpoint.empty() || flags.WasSet("trace-ratio")) {
    TracerOptions& t = config->tracing ? *config->tracing : config->tracing.emplace();
    if (!trace_file.empty()) t.file = trace_file;
    if (!trace_endpoint.empty()) t.otlp_endpoint = trace_endpoint;
    if (flags.WasSet("trace-ratio")) t.sampling_ratio = trace_ratio;
  }
  if (!trace_link.empty()) {
    if (!config->tracing) return Fail(absl::InvalidArgumentError("--trace-link needs tracing: --trace-file or --trace-endpoint"));
    if (!absl::StrContains(trace_link, "{trace_id}")) {
      return Fail(absl::InvalidArgumentError("--trace-link must contain {trace_id}"));
    }
    config->tracing->link = trace_link;
  }
  repo = ServedRepository(*repo, *config);  // with model_less: and the task's generated variants
  if (!repo.ok()) return Fail(repo.status());
  config = ResolveServerConfig(*std::move(config), *repo);
  if (!config.ok()) return Fail(config.status());

  StopSignals signals;  // before any thread starts
  RaiseFileLimit();     // one descriptor per connection
  std::cerr << "loading models…\n";
  // An admin's POST /v2/tutti/shutdown stops the server as SIGTERM does.
  absl::StatusOr<std::unique_ptr<Server>> server =
      Server::Start(*repo, *config, /*clock=*/nullptr, [] { kill(getpid(), SIGTERM); });
  if (!server.ok()) return Fail(server.status());
  const char* scheme = config->http.tls.enabled() ? "https" : "http";
  std::cout << absl::StrFormat("Tutti is serving %s on %s://%s:%d — %s", repo_dir, scheme, config->http.address,
                               (*server)->port(), (*server)->Describe());
  if ((*server)->grpc_port() >= 0) {
    std::cout << absl::StrFormat("KServe v2 gRPC (inference.GRPCInferenceService) on %s:%d\n", config->grpc.address,
                                 (*server)->grpc_port());
  }
  PrintExamples(*repo, *config, (*server)->port(), std::cout);
  std::cout << "Stop with Ctrl-C (SIGINT) or SIGTERM." << std::endl;

  const int sig = signals.Wait(duration_s);
  std::cerr << absl::StrFormat("%s: shutting down — answering %d requests in flight…\n",
                               StopSignals::Describe(sig), (*server)->core().in_flight());
  (*server)->Shutdown();
  std::vector<std::string> names;
  std::vector<OutcomeCounts> counts;
  for (const ModelSpec& m : (*server)->core().spec().models) names.push_back(m.name);
  for (const ModelCounters& c : (*server)->core().Counters()) counts.push_back(c);
  PrintFinalCounts(names, counts, std::cerr);
  std::cerr << "stopped.\n";
  return 0;
}

}  // namespace tutti::cli
