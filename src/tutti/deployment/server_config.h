// ServerConfig: what `tutti serve --config FILE` reads — the scheduling
// policy, the HTTP and gRPC listeners, and the executors with the models each holds.
//
//   policy: adaptive                 # adaptive | deferred | eager | timeout | nexus
//   drop: lazy                       # lazy | early (Nexus's early drop)
//   adaptive_epoch_s: 1              # `adaptive`: how often each sub-cluster chooses deferred,
//   adaptive_window_s: 2             # scarce or eager, from replays of this much of its
//   adaptive_memory: 5               # arrivals, summed over this many epochs; ties broken at
//   adaptive_stress: 1.25            # this many times the load (adaptive_scheduler.h)
//   deferral: auto                   # `adaptive`: a batch waits for batch-mates only while it
//                                    # pays: latency (a fixed pool: idle executors answer at
//                                    # once) | consolidate (GPU time saved at gpu_ms_price);
//                                    # auto: consolidate when `autoscale:` is set
//   gpu_ms_price: 100                # ms of one request's latency worth a GPU-ms saved
//   frontrun_slack_ms: 2             # timer margin for `deferred` (a floor: see delay_model)
//   head_guard_share: 0.1            # `deferred`: a lone head ends this share of its objective
//                                    # early (see SchedulerOptions)
//   network_us: {ctrl: 0, data_per_request: 0, resp: 0}
//                                    # delays the scheduler plans with (Symphony
//                                    # appendix D): to the executor, and from a
//                                    # batch's end to the client's receipt; floors
//                                    # of the measured ones
//   delay_model: {measure: true, quantile: 0.999, timer_quantile: 0.9, window_s: 10,
//                 overload_margins: true}
//                                    # how they are measured (config/delay_model_reader.h)
//   early_drop_window: 0             # `drop: early`: Nexus's window, in requests, for every
//                                    # model; 0: from each model's GPUs (batch_policy.h)
//   await_completion: false          # give an executor work only once it is free
//                                    # (not just predicted free): see SchedulerOptions
//   max_batches_in_flight: 3         # otherwise, an executor takes a batch only while it
//                                    # holds fewer not done (0: no limit): SchedulerOptions::max_in_flight
//   default_objective_ms: 100        # for models without latency_objective_ms
//   graph_split: dp                  # graphs' steps share the objective by Nexus's latency
//                                    # split (dp) or evenly (even)
//   graph_step_overhead_ms: 2        # the split's allowance per step beyond its compute
//   prefix_batching: true            # builtin models of a torch executor group whose
//                                    # leading layers are identical (stage_hashes) run
//                                    # them once per batch for all (Nexus §6.3)
//   replication: {mode: nspb,        # stateful models' states: none | nspb (HAMS) | remus |
//                 checkpoint_every: 100,  # checkpoint (replication/replicated_executor.h)
//                 detect_after_ms: 500,   # a batch the primary leaves unanswered this long:
//                                         # it is dead, the backup takes over (0: no detector;
//                                         # distributed: past its planned end, by the leader)
//                 link_rtt_us: 0,         # in one process: the modelled link to the backup
//                                         # (a one-sided write's round trip; 0: shared memory)
//                 inject_nondeterminism: false}  # stateful models' sums in a random order
//   torch_threads: 1                 # intra-op threads per torch executor
//   scheduler_shards: 1              # the data plane on this many cores: each shard whole
//                                    # sub-clusters (executor groups) under a lock of its own
//                                    # (serving/sharded_core.h); at most the sub-clusters
//   http: {address: 127.0.0.1, port: 8000, threads: 2,
//          max_body_mb: 64, max_header_kb: 64, read_timeout_s: 10,
//          max_connections: 16384,
//          cancel_on_disconnect: true}  # a client closing its connection withdraws its request
//   grpc: {address: 127.0.0.1, port: 8001,   # KServe v2 gRPC; port -1: off
//          max_message_mb: 64}
//   tls: {cert: server.pem, key: server.key, # TLS on both listeners
//         client_ca: ca.pem}                 # optional: clients need a certificate from it
//   auth: {inference_tokens_file: FILE,      # bearer tokens, one per line (frontend/access.h)
//          admin_tokens_file: FILE}
//   tracing: {sampling_ratio: 0.01,          # W3C/OpenTelemetry tracing (tracing/tracer.h): the
//             file: spans.jsonl,             # share of requests without a traceparent traced; the
//             otlp_endpoint: http://localhost:4318/v1/traces,  # OTLP/JSON file and/or
//             service_name: tutti,           # OTLP/HTTP collector their spans go to; the
//             link: "http://localhost:16686/trace/{trace_id}"}  # console links slow ones there
//   max_queue_size: 16384                    # per model: items waiting or running; more are
//                                            # refused at once (503 / RESOURCE_EXHAUSTED); 0: no limit
//   autoscale: {interval_s: 10, headroom: 0.2, min_gpus: 1, max_gpus: 0,
//               initial_gpus: 0, provision_delay_s: 30, trend_window_s: 60}
//                                    # closed-loop autoscaling of the one executor
//                                    # group's executors (config/autoscale_reader.h):
//                                    # executors beyond those up take no work
//   model_less: {task: fashion-mnist, accuracy: 0.9, objective_ms: 10,
//                pools: {cpu: 2, inf1: 4, v100: 2}, interval_s: 1, slack: 1.05, solver: ilp}
//                                    # INFaaS: the task's variants are generated (every
//                                    # stateless model of it with an accuracy and a cpu
//                                    # profile, on each hardware kind: repository/variants.h),
//                                    # each served in an executor group of its own (its
//                                    # kind's pool of executors: torch for cpu, emulated for
//                                    # inf1 and v100), model-less requests of the task are
//                                    # routed and the variants scaled by a TaskAutoscaler
//                                    # (config/model_less_reader.h); in distributed mode,
//                                    # the leader scales and frontends route
//   executors:                       # each group is one sub-cluster
//     - {kind: torch, count: 1, profile: cpu, models: [mlp, lenet5]}
//     - {kind: emulated, count: 8, profile: a100, models: [resnet50]}
//   coding:                          # ParM: protect a model with a parity model
//     - {model: mlp, parity_model: mlp-parity-k2-sum, reconstruct_delay_ms: 0}
//
// A group of `count` executors of `kind` holds every model listed in it;
// each served model is in exactly one group. `profile` names the latency
// profile (from the models' configs) the scheduler plans with — and, for
// emulated executors, the one they emulate. Without `executors`, every
// non-emulated model of the repository goes on one torch executor with the
// `cpu` profile (a stateful one on a torch executor of its own, whose
// states a backup replicates), and each emulated model on one emulated executor of its
// first profile; parity models (they serve only with `coding`) and graphs are left out.
//
// `coding` turns ParM on for a model: its batches are encoded into parity
// queries for `parity_model` (a model trained by `tutti train-parity` for
// it, served in its own executor group: m/k instances for m of the model),
// and a slow prediction is answered with a reconstruction — at once, or
// after `reconstruct_delay_ms` if the original has not come by then.
#ifndef TUTTI_DEPLOYMENT_SERVER_CONFIG_H_
#define TUTTI_DEPLOYMENT_SERVER_CONFIG_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tutti/config/model_less_reader.h"
#include "tutti/delays/delay_model.h"
#include "tutti/planner/scaling.h"
#include "tutti/frontend/frontend_options.h"
#include "tutti/replication/replicated_executor.h"
#include "tutti/tracing/tracer.h"
#include "tutti/repository/model_repository.h"
#include "tutti/repository/variants.h"
#include "tutti/scheduler/cluster_spec.h"
#include "tutti/scheduler/scheduler.h"

namespace tutti {

struct ExecutorGroupConfig {
  std::string kind;  // "torch" | "emulated"
  int count = 1;
  std::string profile;
  std::vector<std::string> models;
  // torch, > 0: every batch takes at least this long, as on an accelerator
  // whose batch time this is (SlowdownExecutor's pace: emulated time over
  // real outputs) — set by `tutti bench stateful --accelerator-us`, read
  // from no config file.
  Duration pace = 0;
  // More models than memory: each executor holds this budget (`memory_gb`,
  // `load_gb_per_s`, `load_overhead_ms`), a model's weights are 4 bytes per
  // parameter of its config, and the `loads` policy plans what each holds
  // (ClusterSpec::memory). A torch executor's load takes its model's
  // measured load_ms (plus the overhead). One group only. `memory_gb: auto`
  // parses to gpu_bytes 0, which ResolveServerConfig sets to the emulated
  // GPU's memory.
  std::optional<MemoryBudget> memory;
};

struct CodingConfig {
  std::string model;
  std::string parity_model;
  Duration reconstruct_delay = 0;
};

struct AuthConfig {
  std::string inference_tokens_file, admin_tokens_file;  // "": none
};

struct ServerConfig {
  std::string policy = "adaptive";
  SchedulerOptions scheduler{
      .frontrun_slack = 2 * kMillisecond, .head_guard_share = 0.1, .max_in_flight = 3,
      .adaptive_replay_thread = true};
  NetworkDelays network;
  DelayModelOptions delays;
  Duration default_objective = 100 * kMillisecond;
  int torch_threads = 1;
  int scheduler_shards = 1;
  HttpServerOptions http;  // tls: set on both listeners by `tls:`
  GrpcServerOptions grpc;
  AuthConfig auth;
  int64_t max_queue_size = 16384;
  int early_drop_window = 0;
  bool even_graph_split = false;  // graph_split: even
  bool prefix_batching = true;
  Duration graph_step_overhead = 2 * kMillisecond;
  // Distributed mode: how long a frontend may hold a request's metadata
  // (and its answers' delay samples) so that several share one message to
  // the scheduler (distributed/remote_engine.h). 0: each goes at once (a
  // hold adds up to its length to a request's latency at light load).
  Duration metadata_hold = 0;
  std::vector<ExecutorGroupConfig> executors;  // empty: the defaults above
  std::vector<CodingConfig> coding;
  // Groups with stateful models: how their states are replicated
  // (replication/replicated_executor.h), and whether stateful
  // architectures inject nondeterminism (experiments and tests).
  ReplicationOptions replication;
  bool inject_nondeterminism = false;
  // Closed-loop autoscaling over the executors (autoscale/autoscaler.h);
  // one executor group only (ResolveServerConfig checks).
  std::optional<AutoscaleOptions> autoscale;
  // Model-less autoscaling of one task's generated variants (INFaaS).
  std::optional<ModelLessOptions> model_less;
  // Request tracing; none without.
  std::optional<TracerOptions> tracing;
};

// Parses a serve config. InvalidArgument names the field: unknown fields,
// wrong types, an unknown policy or executor kind, a count below 1, ….
absl::StatusOr<ServerConfig> ParseServerConfig(const std::string& yaml_text);
// The serve config in the file at `path` ("" : the built-in defaults), not
// yet resolved. Errors name the file.
absl::StatusOr<ServerConfig> ReadServerConfigFile(const std::string& path);

// The frontend's options from `config`, its token files read. Errors: a
// token file is missing or malformed.
absl::StatusOr<FrontendOptions> ReadFrontendOptions(const ServerConfig& config);

// The repository a server with `config` serves: `repo` and, with
// model_less, the task's generated variants (ModelVersion::variant_of
// set; their objective the task's). Errors: no model of the task can have variants, or a variant's
// name is taken.
absl::StatusOr<ModelRepository> ServedRepository(const ModelRepository& repo, const ServerConfig& config);
// config.model_less's variants, in the order ResolveServerConfig gives
// them executor groups (after the config's own); none without model_less.
// NotFound when no model of the task can have variants.
absl::StatusOr<std::vector<ModelVariant>> ModelLessVariants(const ModelRepository& repo, const ServerConfig& config);
// `variant` as the TaskAutoscaler sees it, for queries due `objective`
// after arrival: ℓ(1), and what one instance answers in time by Nexus's rule
// (ServedModel::peak_rps's: the largest batch with ℓ(b) ≤ objective / 2;
// with none, batch 1's). Its slots (first_gpu, max_instances) are the caller's.
TaskVariant ToTaskVariant(const ModelVariant& variant, Duration objective);
// config.model_less's task as a TaskAutoscaler runs it, in embedded and
// distributed mode alike: the variants (ModelLessVariants' order), each on
// its executor group's slots (GPU ids of the resolved config), the task's
// requirements, and the options with `variants:` as the allowed ones.
// REQUIRES: `config` resolved (ResolveServerConfig) with model_less.
absl::StatusOr<ModelLessTask> MakeModelLessTask(const ModelRepository& repo, const ServerConfig& config);

// Fills in the default executors from `repo` and checks the config against
// it: every model exists, is in one group only, has the group's profile, and
// torch groups hold no emulated models; every coded model and its parity
// model are served, and the parity model was trained for that model. Errors
// name the model and group. With model_less, `repo` must be the
// ServedRepository, and each generated variant gets a group of its own,
// after the config's (the defaults leave the variants out).
absl::StatusOr<ServerConfig> ResolveServerConfig(ServerConfig config, const ModelRepository& repo);

}  // namespace tutti

#endif  // TUTTI_DEPLOYMENT_SERVER_CONFIG_H_
