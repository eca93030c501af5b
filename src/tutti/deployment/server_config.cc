#include "tutti/deployment/server_config.h"

#include <algorithm>
#include <map>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "tutti/autoscale/autoscaler.h"
#include "tutti/config/adaptive_reader.h"
#include "tutti/config/autoscale_reader.h"
#include "tutti/config/model_less_reader.h"
#include "tutti/planner/latency_split.h"
#include "tutti/repository/variants.h"
#include "tutti/config/delay_model_reader.h"
#include "tutti/config/scheduler_reader.h"
#include "tutti/config/network_delays_reader.h"
#include "tutti/core/zoo_profiles.h"
#include "tutti/core/yaml_map_reader.h"
#include "tutti/core/file_util.h"
#include "tutti/core/status_macros.h"

namespace tutti {
namespace {

absl::StatusOr<std::vector<std::string>> StringList(MapReader& r, absl::string_view key) {
  std::vector<std::string> out;
  YAML::Node n = r.Get(key);
  if (!n.IsDefined() || n.IsNull()) return out;
  if (!n.IsSequence()) return Invalid(r.FieldPath(key), "expected a list of names");
  for (const auto& x : n) {
    if (!x.IsScalar()) return Invalid(r.FieldPath(key), "expected a list of names");
    out.push_back(x.Scalar());
  }
  return out;
}

absl::Status ParseHttp(const YAML::Node& node, HttpServerOptions* http) {
  MapReader r(node, "http");
  TUTTI_RETURN_IF_ERROR(r.CheckIsMap());
  TUTTI_ASSIGN_OR_RETURN(auto address, r.OptionalScalar<std::string>("address", "a string"));
  TUTTI_ASSIGN_OR_RETURN(auto port, r.OptionalScalar<int>("port", "an integer"));
  TUTTI_ASSIGN_OR_RETURN(auto threads, r.OptionalScalar<int>("threads", "an integer"));
  TUTTI_ASSIGN_OR_RETURN(auto body_mb, r.OptionalScalar<double>("max_body_mb", "a number"));
  TUTTI_ASSIGN_OR_RETURN(auto timeout_s, r.OptionalScalar<double>("read_timeout_s", "a number"));
  TUTTI_ASSIGN_OR_RETURN(auto header_kb, r.OptionalScalar<double>("max_header_kb", "a number"));
  TUTTI_ASSIGN_OR_RETURN(auto connections, r.OptionalScalar<int>("max_connections", "an integer"));
  TUTTI_ASSIGN_OR_RETURN(auto cancel, r.OptionalScalar<bool>("cancel_on_disconnect", "true or false"));
  TUTTI_RETURN_IF_ERROR(r.CheckNoUnknownFields());
  if (port && (*port < 0 || *port > 65535)) return Invalid("http.port", "must be in [0, 65535]");
  if (threads && *threads < 1) return Invalid("http.threads", "must be at least 1");
  if (body_mb && !(*body_mb > 0)) return Invalid("http.max_body_mb", "must be positive");
  if (timeout_s && !(*timeout_s > 0)) return Invalid("http.read_timeout_s", "must be positive");
  if (header_kb && !(*header_kb >= 1)) return Invalid("http.max_header_kb", "must be at least 1");
  if (connections && *connections < 1) return Invalid("http.max_connections", "must be at least 1");
  if (address) http->address = *address;
  if (port) http->port = *port;
  if (threads) http->threads = *threads;
  if (body_mb) http->max_body_bytes = static_cast<size_t>(*body_mb * (1 << 20));
  if (timeout_s) http->read_timeout = Seconds(*timeout_s);
  if (header_kb) http->max_header_bytes = static_cast<size_t>(*header_kb * 1024);
  if (connections) http->max_connections = *connections;
  if (cancel) http->cancel_on_disconnect = *cancel;
  return absl::OkStatus();
}

absl::Status ParseGrpc(const YAML::Node& node, GrpcServerOptions* grpc) {
  MapReader r(node, "grpc");
  TUTTI_RETURN_IF_ERROR(r.CheckIsMap());
  TUTTI_ASSIGN_OR_RETURN(auto address, r.OptionalScalar<std::string>("address", "a string"));
  TUTTI_ASSIGN_OR_RETURN(auto port, r.OptionalScalar<int>("port", "an integer"));
  TUTTI_ASSIGN_OR_RETURN(auto message_mb, r.OptionalScalar<int>("max_message_mb", "an integer"));
  TUTTI_RETURN_IF_ERROR(r.CheckNoUnknownFields());
  if (port && (*port < -1 || *port > 65535)) return Invalid("grpc.port", "must be in [0, 65535], or -1 for off");
  if (message_mb && (*message_mb < 1 || *message_mb > 2047)) return Invalid("grpc.max_message_mb", "must be in [1, 2047]");
  if (address) grpc->address = *address;
  if (port) grpc->port = *port;
  if (message_mb) grpc->max_message_mb = *message_mb;
  return absl::OkStatus();
}

absl::Status ParseTls(const YAML::Node& node, TlsOptions* tls) {
  MapReader r(node, "tls");
  TUTTI_RETURN_IF_ERROR(r.CheckIsMap());
  TUTTI_ASSIGN_OR_RETURN(auto cert, r.OptionalScalar<std::string>("cert", "a file path"));
  TUTTI_ASSIGN_OR_RETURN(auto key, r.OptionalScalar<std::string>("key", "a file path"));
  TUTTI_ASSIGN_OR_RETURN(auto client_ca, r.OptionalScalar<std::string>("client_ca", "a file path"));
  TUTTI_RETURN_IF_ERROR(r.CheckNoUnknownFields());
  tls->cert_file = cert.value_or("");
  tls->key_file = key.value_or("");
  tls->client_ca_file = client_ca.value_or("");
  if (tls->cert_file.empty() != tls->key_file.empty()) return Invalid("tls", "set both cert and key");
  if (tls->cert_file.empty() && !tls->client_ca_file.empty()) return Invalid("tls.client_ca", "needs cert and key");
  return absl::OkStatus();
}

absl::StatusOr<TracerOptions> ParseTracing(const YAML::Node& node) {
  MapReader r(node, "tracing");
  TUTTI_RETURN_IF_ERROR(r.CheckIsMap());
  TracerOptions t;
  TUTTI_ASSIGN_OR_RETURN(auto ratio, r.OptionalScalar<double>("sampling_ratio", "a number in [0, 1]"));
  TUTTI_ASSIGN_OR_RETURN(auto file, r.OptionalScalar<std::string>("file", "a file path"));
  TUTTI_ASSIGN_OR_RETURN(auto endpoint, r.OptionalScalar<std::string>("otlp_endpoint", "an http:// URL"));
  TUTTI_ASSIGN_OR_RETURN(auto service, r.OptionalScalar<std::string>("service_name", "a string"));
  TUTTI_ASSIGN_OR_RETURN(auto link, r.OptionalScalar<std::string>("link", "a URL with {trace_id} in it"));
  TUTTI_RETURN_IF_ERROR(r.CheckNoUnknownFields());
  if (link && !absl::StrContains(*link, "{trace_id}")) {
    return Invalid("tracing.link", "must contain {trace_id}, e.g. http://localhost:16686/trace/{trace_id}");
  }
  if (ratio && !(*ratio >= 0 && *ratio <= 1)) return Invalid("tracing.sampling_ratio", "must be in [0, 1]");
  if (!file && !endpoint) return Invalid("tracing", "set file, otlp_endpoint or both: where the spans go");
  if (endpoint && !absl::StartsWith(*endpoint, "http://")) {
    return Invalid("tracing.otlp_endpoint", "must be an http:// URL, e.g. http://localhost:4318/v1/traces");
  }
  t.sampling_ratio = ratio.value_or(t.sampling_ratio);
  t.file = file.value_or("");
  t.otlp_endpoint = endpoint.value_or("");
  t.service_name = service.value_or(t.service_name);
  t.link = link.value_or("");
  return t;
}

absl::Status ParseAuth(const YAML::Node& node, AuthConfig* auth) {
  MapReader r(node, "auth");
  TUTTI_RETURN_IF_ERROR(r.CheckIsMap());
  TUTTI_ASSIGN_OR_RETURN(auto inference, r.OptionalScalar<std::string>("inference_tokens_file", "a file path"));
  TUTTI_ASSIGN_OR_RETURN(auto admin, r.OptionalScalar<std::string>("admin_tokens_file", "a file path"));
  TUTTI_RETURN_IF_ERROR(r.CheckNoUnknownFields());
  auth->inference_tokens_file = inference.value_or("");
  auth->admin_tokens_file = admin.value_or("");
  return absl::OkStatus();
}

absl::StatusOr<ExecutorGroupConfig> ParseGroup(const YAML::Node& node, size_t i) {
  MapReader r(node, absl::StrCat("executors[", i, "]"));
  TUTTI_RETURN_IF_ERROR(r.CheckIsMap());
  ExecutorGroupConfig g;
  TUTTI_ASSIGN_OR_RETURN(g.kind, r.RequireScalar<std::string>("kind", "a string"));
  TUTTI_ASSIGN_OR_RETURN(auto count, r.OptionalScalar<int>("count", "an integer"));
  TUTTI_ASSIGN_OR_RETURN(auto profile, r.OptionalScalar<std::string>("profile", "a string"));
  TUTTI_ASSIGN_OR_RETURN(g.models, StringList(r, "models"));
  // `auto`: the emulated GPU's own memory (resolved with its profile).
  const YAML::Node memory_node = r.Get("memory_gb");
  const bool memory_auto = memory_node.IsScalar() && memory_node.Scalar() == "auto";
  std::optional<double> memory_gb;
  if (memory_auto) {
    memory_gb = 0;
  } else {
    TUTTI_ASSIGN_OR_RETURN(memory_gb, r.OptionalScalar<double>("memory_gb", "a number or auto"));
  }
  TUTTI_ASSIGN_OR_RETURN(auto gbps, r.OptionalScalar<double>("load_gb_per_s", "a number"));
  TUTTI_ASSIGN_OR_RETURN(auto overhead, r.OptionalScalar<double>("load_overhead_ms", "a number"));
  TUTTI_RETURN_IF_ERROR(r.CheckNoUnknownFields());
  if (memory_gb) {
    if (!memory_auto && !(*memory_gb > 0)) return Invalid(r.FieldPath("memory_gb"), "must be positive or auto");
    if (memory_auto && g.kind != "emulated") {
      return Invalid(r.FieldPath("memory_gb"), "auto is an emulated GPU's memory: give a torch executor's in GB");
    }
    if (gbps && !(*gbps > 0)) return Invalid(r.FieldPath("load_gb_per_s"), "must be positive");
    if (overhead && !(*overhead >= 0)) return Invalid(r.FieldPath("load_overhead_ms"), "must not be negative");
    MemoryBudget m;
    m.gpu_bytes = static_cast<int64_t>(*memory_gb * 1e9);
    if (gbps) m.bytes_per_s = *gbps * 1e9;
    if (overhead) m.overhead = Millis(*overhead);
    g.memory = m;
  } else if (gbps || overhead) {
    return Invalid(r.FieldPath(gbps ? "load_gb_per_s" : "load_overhead_ms"), "needs memory_gb");
  }
  if (g.kind != "torch" && g.kind != "emulated") {
    return Invalid(r.FieldPath("kind"), absl::StrCat("unknown executor kind '", g.kind,
                                                     "' (expected torch or emulated)"));
  }
  g.count = count.value_or(1);
  if (g.count < 1) return Invalid(r.FieldPath("count"), "must be at least 1");
  g.profile = profile.value_or(g.kind == "torch" ? "cpu" : "");
  if (g.models.empty()) return Invalid(r.FieldPath("models"), "list at least one model");
  return g;
}

absl::StatusOr<CodingConfig> ParseCoding(const YAML::Node& node, size_t i) {
  MapReader r(node, absl::StrCat("coding[", i, "]"));
  TUTTI_RETURN_IF_ERROR(r.CheckIsMap());
  CodingConfig c;
  TUTTI_ASSIGN_OR_RETURN(c.model, r.RequireScalar<std::string>("model", "a model name"));
  TUTTI_ASSIGN_OR_RETURN(c.parity_model, r.RequireScalar<std::string>("parity_model", "a model name"));
  TUTTI_ASSIGN_OR_RETURN(auto delay, r.OptionalScalar<double>("reconstruct_delay_ms", "a number"));
  TUTTI_RETURN_IF_ERROR(r.CheckNoUnknownFields());
  if (delay && *delay < 0) return Invalid(r.FieldPath("reconstruct_delay_ms"), "must not be negative");
  if (delay) c.reconstruct_delay = Millis(*delay);
  return c;
}

absl::StatusOr<ServerConfig> ParseRoot(const YAML::Node& root) {
  MapReader r(root, "");
  TUTTI_RETURN_IF_ERROR(r.CheckIsMap());
  ServerConfig c;
  TUTTI_ASSIGN_OR_RETURN(SchedulerFields scheduler, ReadSchedulerFields(r, &c.scheduler));
  if (scheduler.policy) c.policy = *scheduler.policy;
  TUTTI_ASSIGN_OR_RETURN(auto objective, r.OptionalScalar<double>("default_objective_ms", "a number"));
  TUTTI_ASSIGN_OR_RETURN(auto threads, r.OptionalScalar<int>("torch_threads", "an integer"));
  TUTTI_ASSIGN_OR_RETURN(auto shards, r.OptionalScalar<int>("scheduler_shards", "an integer"));
  TUTTI_ASSIGN_OR_RETURN(auto await, r.OptionalScalar<bool>("await_completion", "true or false"));
  TUTTI_ASSIGN_OR_RETURN(auto in_flight, r.OptionalScalar<int>("max_batches_in_flight", "an integer"));
  if (in_flight && *in_flight < 0) return Invalid("max_batches_in_flight", "must not be negative (0: no limit)");
  if (in_flight) c.scheduler.max_in_flight = *in_flight;
  TUTTI_ASSIGN_OR_RETURN(auto window, r.OptionalScalar<int>("early_drop_window", "an integer"));
  TUTTI_ASSIGN_OR_RETURN(auto split, r.OptionalScalar<std::string>("graph_split", "dp or even"));
  if (split && *split != "dp" && *split != "even") {
    return Invalid("graph_split", absl::StrCat("unknown split '", *split, "' (expected dp or even)"));
  }
  c.even_graph_split = split.value_or("dp") == "even";
  TUTTI_ASSIGN_OR_RETURN(auto prefix, r.OptionalScalar<bool>("prefix_batching", "true or false"));
  c.prefix_batching = prefix.value_or(true);
  TUTTI_ASSIGN_OR_RETURN(auto step_overhead, r.OptionalScalar<double>("graph_step_overhead_ms", "a number"));
  if (step_overhead && !(*step_overhead >= 0)) return Invalid("graph_step_overhead_ms", "must not be negative");
  if (step_overhead) c.graph_step_overhead = static_cast<Duration>(*step_overhead * kMillisecond);
  TUTTI_ASSIGN_OR_RETURN(auto hold, r.OptionalScalar<double>("metadata_hold_ms", "a number"));
  if (hold && !(*hold >= 0)) return Invalid("metadata_hold_ms", "must not be negative");
  if (hold) c.metadata_hold = static_cast<Duration>(*hold * kMillisecond);
  if (YAML::Node rep = r.Get("replication"); rep.IsDefined() && !rep.IsNull()) {
    MapReader rr(rep, "replication");
    TUTTI_RETURN_IF_ERROR(rr.CheckIsMap());
    TUTTI_ASSIGN_OR_RETURN(auto mode, rr.OptionalScalar<std::string>("mode", "none, nspb, remus or checkpoint"));
    TUTTI_ASSIGN_OR_RETURN(auto every, rr.OptionalScalar<int>("checkpoint_every", "an integer"));
    TUTTI_ASSIGN_OR_RETURN(auto noise, rr.OptionalScalar<bool>("inject_nondeterminism", "true or false"));
    TUTTI_ASSIGN_OR_RETURN(auto detect, rr.OptionalScalar<double>("detect_after_ms", "a number"));
    if (detect && !(*detect >= 0)) return Invalid("replication.detect_after_ms", "must not be negative (0: no detector)");
    if (detect) c.replication.detect_after = static_cast<Duration>(*detect * kMillisecond);
    TUTTI_ASSIGN_OR_RETURN(auto rtt, rr.OptionalScalar<double>("link_rtt_us", "a number"));
    if (rtt && !(*rtt >= 0)) return Invalid("replication.link_rtt_us", "must not be negative (0: shared memory)");
    if (rtt) c.replication.link_rtt = static_cast<Duration>(*rtt * kMicrosecond);
    TUTTI_RETURN_IF_ERROR(rr.CheckNoUnknownFields());
    if (mode) {
      absl::StatusOr<ReplicationMode> m = ParseReplicationMode(*mode);
      if (!m.ok()) return Invalid("replication.mode", m.status().message());
      c.replication.mode = *m;
    }
    if (every && *every < 1) return Invalid("replication.checkpoint_every", "must be at least 1");
    if (every) c.replication.checkpoint_every = *every;
    c.inject_nondeterminism = noise.value_or(false);
  }
  if (window && *window < 0) return Invalid("early_drop_window", "must not be negative");
  c.early_drop_window = window.value_or(0);
  TUTTI_ASSIGN_OR_RETURN(auto queue_size, r.OptionalScalar<int64_t>("max_queue_size", "an integer"));
  c.scheduler.await_completion = await.value_or(false);
  if (queue_size && *queue_size < 0) return Invalid("max_queue_size", "must not be negative (0: no limit)");
  if (queue_size) c.max_queue_size = *queue_size;
  if (YAML::Node tls = r.Get("tls"); tls.IsDefined()) {
    TUTTI_RETURN_IF_ERROR(ParseTls(tls, &c.http.tls));
    c.grpc.tls = c.http.tls;
  }
  if (YAML::Node auth = r.Get("auth"); auth.IsDefined()) TUTTI_RETURN_IF_ERROR(ParseAuth(auth, &c.auth));
  if (YAML::Node tracing = r.Get("tracing"); tracing.IsDefined()) {
    TUTTI_ASSIGN_OR_RETURN(c.tracing, ParseTracing(tracing));
  }
  if (YAML::Node http = r.Get("http"); http.IsDefined()) TUTTI_RETURN_IF_ERROR(ParseHttp(http, &c.http));
  if (YAML::Node grpc = r.Get("grpc"); grpc.IsDefined()) TUTTI_RETURN_IF_ERROR(ParseGrpc(grpc, &c.grpc));
  if (YAML::Node net = r.Get("network_us"); net.IsDefined()) {
    TUTTI_ASSIGN_OR_RETURN(c.network, ReadNetworkDelays(net, "network_us"));
  }
  if (YAML::Node d = r.Get("delay_model"); d.IsDefined()) {
    TUTTI_ASSIGN_OR_RETURN(c.delays, ReadDelayModelOptions(d, "delay_model"));
  }
  if (YAML::Node autoscale = r.Get("autoscale"); autoscale.IsDefined()) {
    TUTTI_ASSIGN_OR_RETURN(c.autoscale, ReadAutoscaleOptions(autoscale, "autoscale"));
  }
  if (YAML::Node model_less = r.Get("model_less"); model_less.IsDefined()) {
    TUTTI_ASSIGN_OR_RETURN(c.model_less, ReadModelLessOptions(model_less, "model_less"));
  }
  if (YAML::Node groups = r.Get("executors"); groups.IsDefined()) {
    if (!groups.IsSequence()) return Invalid("executors", "expected a list of executor groups");
    for (size_t i = 0; i < groups.size(); ++i) {
      TUTTI_ASSIGN_OR_RETURN(ExecutorGroupConfig g, ParseGroup(groups[i], i));
      c.executors.push_back(std::move(g));
    }
  }
  if (YAML::Node coding = r.Get("coding"); coding.IsDefined()) {
    if (!coding.IsSequence()) return Invalid("coding", "expected a list of {model, parity_model}");
    for (size_t i = 0; i < coding.size(); ++i) {
      TUTTI_ASSIGN_OR_RETURN(CodingConfig cc, ParseCoding(coding[i], i));
      c.coding.push_back(std::move(cc));
    }
  }
  TUTTI_RETURN_IF_ERROR(r.CheckNoUnknownFields());
  c.scheduler.deferral = scheduler.deferral.value_or(DefaultDeferral(c.autoscale.has_value()));
  if (objective && !(*objective > 0)) return Invalid("default_objective_ms", "must be positive");
  if (objective) c.default_objective = Millis(*objective);
  if (threads && *threads < 1) return Invalid("torch_threads", "must be at least 1");
  if (threads) c.torch_threads = *threads;
  if (shards && *shards < 1) return Invalid("scheduler_shards", "must be at least 1");
  if (shards) c.scheduler_shards = *shards;
  return c;
}

}  // namespace

absl::StatusOr<ServerConfig> ParseServerConfig(const std::string& yaml_text) {
  TUTTI_ASSIGN_OR_RETURN(YAML::Node root, LoadYaml(yaml_text));
  try {
    return ParseRoot(root);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("malformed serve config: ", e.what()));
  }
}

absl::StatusOr<ModelRepository> ServedRepository(const ModelRepository& repo, const ServerConfig& config) {
  if (!config.model_less) return repo;
  TUTTI_ASSIGN_OR_RETURN(std::vector<ModelVariant> variants, ModelLessVariants(repo, config));
  std::vector<ModelVersion> versions;
  for (const ModelVariant& v : variants) {
    versions.push_back(VariantVersion(repo, v));
    // A request that names no objective has the task's.
    versions.back().config.latency_objective_ms =
        ToMillis(config.model_less->objective.value_or(config.default_objective));
  }
  return repo.With(std::move(versions));
}

absl::StatusOr<std::vector<ModelVariant>> ModelLessVariants(const ModelRepository& repo, const ServerConfig& config) {
  if (!config.model_less) return std::vector<ModelVariant>{};
  absl::StatusOr<std::vector<ModelVariant>> v =
      GenerateTaskVariants(repo, config.model_less->task,
                           config.model_less->hardware.empty() ? BuiltinHardwareKinds() : config.model_less->hardware);
  if (!v.ok()) return absl::Status(v.status().code(), absl::StrCat("model_less: ", v.status().message()));
  return v;
}

TaskVariant ToTaskVariant(const ModelVariant& v, Duration objective) {
  // One too slow for any batch in time answers one query per ℓ(1) (the
  // selection and the ILP leave it out once ℓ(1) exceeds the objective).
  const double in_time = ThroughputWithin(v.profile, objective / 2);
  return {v.name, v.hardware, v.accuracy, v.profile.Latency(1),
          in_time > 0 ? in_time : 1 / ToSeconds(v.profile.Latency(1)), v.cost, v.load_latency};
}

absl::StatusOr<ModelLessTask> MakeModelLessTask(const ModelRepository& repo, const ServerConfig& config) {
  const ModelLessOptions& ml = *config.model_less;
  const Duration objective = ml.objective.value_or(config.default_objective);
  TUTTI_ASSIGN_OR_RETURN(const std::vector<ModelVariant> generated, ModelLessVariants(repo, config));
  ModelLessTask task{{}, {ml.accuracy, objective, 0}, ml.autoscale};
  for (const ModelVariant& v : generated) {  // each in a group of its own (ResolveServerConfig's)
    int first = 0;
    for (const ExecutorGroupConfig& g : config.executors) {
      if (g.models.size() == 1 && g.models[0] == v.name) {
        task.variants.push_back(ToTaskVariant(v, objective));
        task.variants.back().first_gpu = first;
        task.variants.back().max_instances = g.count;
        break;
      }
      first += g.count;
    }
  }
  for (const std::string& name : ml.variants) {  // ResolveServerConfig checked the names
    for (size_t j = 0; j < task.variants.size(); ++j) {
      if (task.variants[j].name == name) task.options.allowed.push_back(static_cast<int>(j));
    }
  }
  TUTTI_RETURN_IF_ERROR(TaskAutoscaler::Validate(task.variants, task.requirements, task.options));
  return task;
}

absl::StatusOr<ServerConfig> ResolveServerConfig(ServerConfig config, const ModelRepository& repo) {
  if (config.executors.empty()) {
    ExecutorGroupConfig torch{"torch", 1, "cpu", {}};
    for (const std::string& name : repo.ModelNames()) {
      const ModelVersion& version = **repo.Find(name);
      const ModelConfig& m = version.config;
      if (m.parity) continue;  // serves only under a `coding:` entry
      if (!version.variant_of.empty()) continue;  // a generated variant: in a group of its own (below)
      if (m.platform == Platform::kEnsemble) continue;  // a graph runs no executor of its own
      if (m.stateful() && m.platform != Platform::kEmulated) {
        config.executors.push_back({"torch", 1, "cpu", {name}});  // its own, replicated
      } else if (m.platform != Platform::kEmulated) {
        torch.models.push_back(name);
      } else {
        config.executors.push_back({"emulated", 1, m.profiles.begin()->first, {name}});
      }
    }
    if (!torch.models.empty()) config.executors.insert(config.executors.begin(), torch);
    if (config.executors.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("the model repository ", repo.root(),
                                                     " has no models to serve"));
    }
  }
  if (config.model_less) {
    // Each generated variant in a group of its own: its hardware kind's
    // executors, as many as the kind's pool.
    TUTTI_ASSIGN_OR_RETURN(const std::vector<ModelVariant> variants, ModelLessVariants(repo, config));
    for (const ModelVariant& v : variants) {
      if (!repo.Find(v.name).ok()) {
        return absl::FailedPreconditionError(absl::StrCat("model_less: the repository lacks the generated variant '",
                                                          v.name, "' (open it through ServedRepository)"));
      }
      const auto pool = config.model_less->autoscale.pools.find(v.hardware);
      config.executors.push_back({v.executor, pool == config.model_less->autoscale.pools.end() ? 1 : pool->second,
                                  v.hardware, {v.name}});
    }
    for (const std::string& name : config.model_less->variants) {
      if (std::none_of(variants.begin(), variants.end(), [&](const ModelVariant& v) { return v.name == name; })) {
        return absl::InvalidArgumentError(absl::StrCat("model_less.variants: '", name, "' is not a variant of task '",
                                                       config.model_less->task, "' (see `tutti models --variants`)"));
      }
    }
    if (config.autoscale) return absl::InvalidArgumentError("model_less and autoscale: choose one");
  }
  std::map<std::string, size_t> group_of;
  for (size_t i = 0; i < config.executors.size(); ++i) {
    ExecutorGroupConfig& g = config.executors[i];
    const std::string where = absl::StrCat("executors[", i, "]");
    for (const std::string& name : g.models) {
      absl::StatusOr<const ModelVersion*> v = repo.Find(name);
      if (!v.ok()) return absl::NotFoundError(absl::StrCat(where, ": ", v.status().message()));
      const ModelConfig& m = (*v)->config;
      if (!group_of.emplace(name, i).second) {
        return absl::InvalidArgumentError(absl::StrCat(where, ": model '", name, "' is already in executors[",
                                                       group_of[name], "]; a model is in one group only"));
      }
      if (m.platform == Platform::kEnsemble) {
        return absl::InvalidArgumentError(absl::StrCat(where, ": '", name, "' is a graph (platform ensemble): it runs "
                                                       "no executor of its own: put its steps' models in executor "
                                                       "groups, and it is served over them"));
      }
      if (g.kind == "torch" && m.platform == Platform::kEmulated) {
        return absl::InvalidArgumentError(absl::StrCat(where, ": model '", name,
                                                       "' is platform emulated and has no weights; "
                                                       "put it on an emulated executor"));
      }
      if (m.stateful() && (g.kind != "torch" || g.count != 1)) {
        return absl::InvalidArgumentError(absl::StrCat(
            where, ": model '", name, "' is stateful: its group must be one torch executor (count: 1), whose "
            "states a backup replicates (replication:)"));
      }
      if (g.profile.empty()) g.profile = m.profiles.empty() ? "" : m.profiles.begin()->first;
      if (!m.profiles.contains(g.profile)) {
        return absl::InvalidArgumentError(absl::StrCat(
            where, ": model '", name, "' has no '", g.profile, "' latency profile",
            g.kind == "torch" ? " (measure one with `tutti profile`)" : "",
            m.profiles.empty() ? "" : absl::StrCat("; it has: ", absl::StrJoin(m.profiles, ", ",
                                                                               [](std::string* out, const auto& kv) {
                                                                                 out->append(kv.first);
                                                                               }))));
      }
    }
  }
  std::set<std::string> coded;
  for (size_t i = 0; i < config.coding.size(); ++i) {
    const CodingConfig& c = config.coding[i];
    const std::string where = absl::StrCat("coding[", i, "]");
    for (const std::string* name : {&c.model, &c.parity_model}) {
      if (!group_of.contains(*name)) {
        return absl::InvalidArgumentError(absl::StrCat(where, ": model '", *name, "' is not served; list it in an "
                                                       "executor group"));
      }
    }
    const ModelConfig& parity = (*repo.Find(c.parity_model))->config;
    if (!parity.parity || parity.parity->deployed != c.model) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": '", c.parity_model, "' is not a parity model of '",
                                                     c.model, "' (train one with `tutti train-parity --deployed ",
                                                     c.model, "`)"));
    }
    if (!coded.insert(c.model).second) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": model '", c.model, "' is coded twice"));
    }
  }
  for (size_t i = 0; i < config.executors.size(); ++i) {
    ExecutorGroupConfig& g = config.executors[i];
    if (!g.memory || g.memory->gpu_bytes > 0) continue;
    const std::optional<int64_t> bytes = ZooGpuMemoryBytes(g.profile);
    if (!bytes) {
      return absl::InvalidArgumentError(absl::StrCat("executors[", i, "].memory_gb: auto knows the memory of ",
                                                     absl::StrJoin(ZooGpuNames(), ", "), ", not of profile '",
                                                     g.profile, "': give it in GB"));
    }
    g.memory->gpu_bytes = *bytes;
  }
  const bool budget = std::any_of(config.executors.begin(), config.executors.end(),
                                  [](const ExecutorGroupConfig& g) { return g.memory.has_value(); });
  if (budget && (config.executors.size() != 1 || config.policy != "loads")) {
    return absl::InvalidArgumentError(absl::StrCat(
        "executors[].memory_gb: a memory budget needs one executor group and `policy: loads`, which plans loads "
        "(the config has ", config.executors.size(), " group(s) and policy ", config.policy, ")"));
  }
  if (config.autoscale) {
    if (config.executors.size() != 1 || !config.coding.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("autoscale: scales one executor group, the config has ",
                                                     config.executors.size(), config.coding.empty() ? "" : " and coding"));
    }
    if (absl::Status s = Autoscaler::Validate(*config.autoscale, config.executors[0].count); !s.ok()) return s;
  }
  // A compute-then-update model's batches pass their update stage one at a
  // time (replication/replicated_executor.h): its group awaits completion.
  config.scheduler.await_sub_clusters.assign(config.executors.size(), false);
  for (size_t g = 0; g < config.executors.size(); ++g) {
    for (const std::string& name : config.executors[g].models) {
      if (!(*repo.Find(name))->config.model_state_shape.empty()) config.scheduler.await_sub_clusters[g] = true;
    }
  }
  return config;
}

absl::StatusOr<FrontendOptions> ReadFrontendOptions(const ServerConfig& config) {
  FrontendOptions out{config.http, config.grpc, {.max_queue_size = config.max_queue_size}};
  if (!config.auth.inference_tokens_file.empty()) {
    TUTTI_ASSIGN_OR_RETURN(out.frontend.access.inference_tokens, ReadTokenFile(config.auth.inference_tokens_file));
  }
  if (!config.auth.admin_tokens_file.empty()) {
    TUTTI_ASSIGN_OR_RETURN(out.frontend.access.admin_tokens, ReadTokenFile(config.auth.admin_tokens_file));
  }
  return out;
}

absl::StatusOr<ServerConfig> ReadServerConfigFile(const std::string& path) {
  if (path.empty()) return ServerConfig{};
  TUTTI_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  absl::StatusOr<ServerConfig> config = ParseServerConfig(text);
  if (!config.ok()) return absl::InvalidArgumentError(absl::StrCat(path, ": ", config.status().message()));
  return config;
}

}  // namespace tutti
