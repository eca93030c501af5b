#include "tutti/deployment/server_config.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tutti/deployment/cluster_layout.h"
#include "tutti/testing/layout_fixture.h"
#include "tutti/testing/temp_dir.h"

namespace tutti {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::tutti::testing::TempDir;

std::string ParseError(const std::string& yaml) {
  absl::StatusOr<ServerConfig> c = ParseServerConfig(yaml);
  EXPECT_FALSE(c.ok()) << yaml;
  return c.ok() ? "" : std::string(c.status().message());
}

TEST(ServerConfigTest, ParsesEveryField) {
  absl::StatusOr<ServerConfig> c = ParseServerConfig(R"(
policy: eager
drop: early
frontrun_slack_ms: 2.5
network_us: {ctrl: 50, data_per_request: 2, resp: 800}
await_completion: true
max_batches_in_flight: 3
early_drop_window: 12
default_objective_ms: 40
torch_threads: 2
scheduler_shards: 2
http: {address: 0.0.0.0, port: 9000, threads: 3, max_body_mb: 1, read_timeout_s: 2, max_header_kb: 8,
       max_connections: 100}
grpc: {address: 0.0.0.0, port: 9001, max_message_mb: 8}
tls: {cert: s.pem, key: s.key, client_ca: ca.pem}
auth: {inference_tokens_file: i.txt, admin_tokens_file: a.txt}
max_queue_size: 64
executors:
  - {kind: torch, models: [mlp, lenet5]}
  - {kind: emulated, count: 8, profile: a100, models: [resnet50]}
coding:
  - {model: mlp, parity_model: mlp-parity, reconstruct_delay_ms: 1.5}
)");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->policy, "eager");
  EXPECT_EQ(c->scheduler.drop, DropPolicy::kEarly);
  EXPECT_EQ(c->scheduler.frontrun_slack, Micros(2500));
  EXPECT_EQ(c->network.ctrl, Micros(50));
  EXPECT_EQ(c->network.data_per_request, Micros(2));
  EXPECT_EQ(c->network.resp, Micros(800));
  EXPECT_TRUE(c->scheduler.await_completion);
  EXPECT_EQ(c->scheduler.max_in_flight, 3);
  EXPECT_EQ(c->early_drop_window, 12);
  EXPECT_EQ(c->default_objective, Millis(40));
  EXPECT_EQ(c->torch_threads, 2);
  EXPECT_EQ(c->scheduler_shards, 2);
  EXPECT_EQ(c->http.address, "0.0.0.0");
  EXPECT_EQ(c->http.port, 9000);
  EXPECT_EQ(c->http.threads, 3);
  EXPECT_EQ(c->http.max_body_bytes, 1u << 20);
  EXPECT_EQ(c->http.read_timeout, Seconds(2));
  EXPECT_EQ(c->grpc.address, "0.0.0.0");
  EXPECT_EQ(c->grpc.port, 9001);
  EXPECT_EQ(c->grpc.max_message_mb, 8);
  EXPECT_EQ(c->http.max_header_bytes, 8u << 10);
  EXPECT_EQ(c->http.max_connections, 100);
  for (const TlsOptions* tls : {&c->http.tls, &c->grpc.tls}) {  // both listeners
    EXPECT_EQ(tls->cert_file, "s.pem");
    EXPECT_EQ(tls->key_file, "s.key");
    EXPECT_EQ(tls->client_ca_file, "ca.pem");
  }
  EXPECT_EQ(c->auth.inference_tokens_file, "i.txt");
  EXPECT_EQ(c->auth.admin_tokens_file, "a.txt");
  EXPECT_EQ(c->max_queue_size, 64);
  ASSERT_EQ(c->executors.size(), 2u);
  EXPECT_EQ(c->executors[0].kind, "torch");
  EXPECT_EQ(c->executors[0].count, 1);
  EXPECT_EQ(c->executors[0].profile, "cpu");
  EXPECT_EQ(c->executors[0].models, (std::vector<std::string>{"mlp", "lenet5"}));
  EXPECT_EQ(c->executors[1].count, 8);
  EXPECT_EQ(c->executors[1].profile, "a100");
  ASSERT_EQ(c->coding.size(), 1u);
  EXPECT_EQ(c->coding[0].model, "mlp");
  EXPECT_EQ(c->coding[0].parity_model, "mlp-parity");
  EXPECT_EQ(c->coding[0].reconstruct_delay, Micros(1500));
}

TEST(ServerConfigTest, DefaultsNeedNoFile) {
  absl::StatusOr<ServerConfig> c = ParseServerConfig("{}");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->policy, "adaptive");
  EXPECT_EQ(c->scheduler.frontrun_slack, 2 * kMillisecond);
  EXPECT_EQ(c->scheduler.max_in_flight, 3);
  EXPECT_EQ(c->network.resp, 0);
  EXPECT_EQ(c->http.port, 8000);
  EXPECT_EQ(c->grpc.port, 8001);
  EXPECT_TRUE(c->executors.empty());
  EXPECT_FALSE(c->http.tls.enabled());
  EXPECT_EQ(c->max_queue_size, 16384);
  absl::StatusOr<FrontendOptions> frontend = ReadFrontendOptions(*c);
  ASSERT_TRUE(frontend.ok());
  EXPECT_TRUE(frontend->frontend.access.inference_tokens.empty());  // open, as before
}

TEST(ServerConfigTest, TheDelayModelIsConfigurable) {
  absl::StatusOr<ServerConfig> c = ParseServerConfig("{}");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->delays.overload_margins);
  EXPECT_EQ(c->delays.quantile, 0.999);
  c = ParseServerConfig("delay_model: {quantile: 0.99, overload_margins: false, max_share: 0.2}");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_FALSE(c->delays.overload_margins);
  EXPECT_EQ(c->delays.quantile, 0.99);
  EXPECT_EQ(c->delays.max_share, 0.2);
  EXPECT_THAT(ParseError("delay_model: {overload_margins: 3}"), HasSubstr("overload_margins"));
}

// The server replays on a thread of its own (scheduling never waits for it).
TEST(ServerConfigTest, TheAdaptivePolicyIsConfigurable) {
  absl::StatusOr<ServerConfig> c = ParseServerConfig("{}");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->scheduler.adaptive_replay_thread);
  EXPECT_EQ(c->scheduler.adaptive_epoch, kSecond);
  c = ParseServerConfig("{policy: adaptive, adaptive_epoch_s: 0.5, adaptive_window_s: 3, adaptive_memory: 2}");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->policy, "adaptive");
  EXPECT_EQ(c->scheduler.adaptive_epoch, 500 * kMillisecond);
  EXPECT_EQ(c->scheduler.adaptive_window, 3 * kSecond);
  EXPECT_EQ(c->scheduler.adaptive_memory, 2);
  EXPECT_THAT(ParseError("adaptive_window_s: 0"), HasSubstr("field 'adaptive_window_s': must be positive"));
  EXPECT_THAT(ParseError("adaptive_memory: 0"), HasSubstr("adaptive_memory"));
  EXPECT_THAT(ParseError("adaptive_stress: 0.5"), HasSubstr("adaptive_stress"));
}

TEST(ServerConfigTest, FrontendOptionsReadTheTokenFiles) {
  TempDir dir;
  ServerConfig c;
  c.auth.inference_tokens_file = dir.WriteFile("i.txt", "inference-token-0123456789\n");
  c.auth.admin_tokens_file = dir.path() + "/missing.txt";
  EXPECT_THAT(ReadFrontendOptions(c).status().message(), HasSubstr("missing.txt"));
  c.auth.admin_tokens_file = dir.WriteFile("a.txt", "admin-token-0123456789abcdef\n");
  c.max_queue_size = 7;
  absl::StatusOr<FrontendOptions> frontend = ReadFrontendOptions(c);
  ASSERT_TRUE(frontend.ok()) << frontend.status();
  EXPECT_EQ(frontend->frontend.access.inference_tokens, std::vector<std::string>{"inference-token-0123456789"});
  EXPECT_EQ(frontend->frontend.access.admin_tokens, std::vector<std::string>{"admin-token-0123456789abcdef"});
  EXPECT_EQ(frontend->frontend.max_queue_size, 7);
}

TEST(ServerConfigErrorTest, EachBadFieldIsNamed) {
  EXPECT_THAT(ParseError("tracing: {file: s.jsonl, link: 'http://jaeger/trace'}"),
              HasSubstr("field 'tracing.link': must contain {trace_id}"));
  EXPECT_THAT(ParseError("polcy: deferred"), HasSubstr("unknown field 'polcy'"));
  EXPECT_THAT(ParseError("policy: fifo"), HasSubstr("unknown policy 'fifo' (expected one of deferred, adaptive, eager"));
  EXPECT_THAT(ParseError("drop: sometimes"), HasSubstr("field 'drop': expected lazy or early"));
  EXPECT_THAT(ParseError("http: {port: 70000}"), HasSubstr("field 'http.port': must be in [0, 65535]"));
  EXPECT_THAT(ParseError("http: {prot: 1}"), HasSubstr("unknown field 'http.prot'"));
  EXPECT_THAT(ParseError("grpc: {port: -2}"), HasSubstr("field 'grpc.port': must be in [0, 65535], or -1 for off"));
  EXPECT_THAT(ParseError("grpc: {max_message_mb: 0}"), HasSubstr("field 'grpc.max_message_mb'"));
  EXPECT_THAT(ParseError("executors: [{kind: tpu, models: [a]}]"),
              HasSubstr("field 'executors[0].kind': unknown executor kind 'tpu' (expected torch or emulated)"));
  EXPECT_THAT(ParseError("executors: [{kind: torch, count: 0, models: [a]}]"),
              HasSubstr("field 'executors[0].count': must be at least 1"));
  EXPECT_THAT(ParseError("executors: [{kind: torch}]"), HasSubstr("'executors[0].models': list at least one"));
  EXPECT_THAT(ParseError("network_us: {resp: -1}"), HasSubstr("field 'network_us.resp': must not be negative"));
  EXPECT_THAT(ParseError("network_us: {response: 1}"), HasSubstr("unknown field 'network_us.response'"));
  EXPECT_THAT(ParseError("network_us: 5"), HasSubstr("'network_us' must be a mapping"));
  EXPECT_THAT(ParseError("torch_threads: many"), HasSubstr("field 'torch_threads': expected an integer"));
  EXPECT_THAT(ParseError("scheduler_shards: 0"), HasSubstr("scheduler_shards"));
  EXPECT_THAT(ParseError("await_completion: maybe"), HasSubstr("field 'await_completion': expected true or false"));
  EXPECT_THAT(ParseError("executors: [oops"), HasSubstr("line"));
  EXPECT_THAT(ParseError("tls: {cert: s.pem}"), HasSubstr("field 'tls': set both cert and key"));
  EXPECT_THAT(ParseError("tls: {client_ca: ca.pem}"), HasSubstr("field 'tls.client_ca': needs cert and key"));
  EXPECT_THAT(ParseError("auth: {tokens: x}"), HasSubstr("unknown field 'auth.tokens'"));
  EXPECT_THAT(ParseError("max_queue_size: -1"), HasSubstr("field 'max_queue_size': must not be negative"));
  EXPECT_THAT(ParseError("max_batches_in_flight: -1"),
              HasSubstr("field 'max_batches_in_flight': must not be negative"));
  EXPECT_THAT(ParseError("http: {max_connections: 0}"), HasSubstr("field 'http.max_connections'"));
  EXPECT_THAT(ParseError("coding: [{model: a}]"), HasSubstr("missing required field 'coding[0].parity_model'"));
  EXPECT_THAT(ParseError("replication: {mode: paxos}"),
              HasSubstr("field 'replication.mode': unknown replication mode 'paxos'"));
  EXPECT_THAT(ParseError("replication: {checkpoint_every: 0}"), HasSubstr("'replication.checkpoint_every'"));
  EXPECT_THAT(ParseError("replication: {modes: nspb}"), HasSubstr("unknown field 'replication.modes'"));
  EXPECT_THAT(ParseError("replication: {detect_after_ms: -1}"), HasSubstr("'replication.detect_after_ms'"));
  EXPECT_THAT(ParseError("replication: {link_rtt_us: -5}"), HasSubstr("'replication.link_rtt_us': must not be negative"));
  EXPECT_THAT(ParseError("coding: [{model: a, parity_model: b, reconstruct_delay_ms: -1}]"),
              HasSubstr("field 'coding[0].reconstruct_delay_ms': must not be negative"));
  EXPECT_THAT(ParseError("model_less: {accuracy: 0.9}"), HasSubstr("missing required field 'model_less.task'"));
  EXPECT_THAT(ParseError("model_less: {task: t, solver: gurobi}"), HasSubstr("field 'model_less.solver': ilp or greedy"));
  EXPECT_THAT(ParseError("model_less: {task: t, pools: {cpu: 0}}"), HasSubstr("field 'model_less.pools.cpu'"));
  EXPECT_THAT(ParseError("model_less: {task: t, slack: 0.5}"), HasSubstr("field 'model_less.slack': must be at least 1"));
  EXPECT_THAT(ParseError("model_less: {task: t, accuracy: 2}"), HasSubstr("field 'model_less.accuracy'"));
}

// testing/layout_fixture.h's repository, and "mlp-parity", a parity model
// for "mlp". Weights are not loaded here.
class ResolveTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::WriteMlpAndResnet50(dir_);
    dir_.WriteFile("mlp-parity/1/config.yaml", R"(name: mlp-parity
platform: builtin
architecture: mlp
max_batch_size: 8
inputs: [{name: image, datatype: FP32, shape: [1, 28, 28]}]
outputs: [{name: logits, datatype: FP32, shape: [10]}]
profiles: {cpu: {batch: [1, 8], latency_us: [100, 300]}}
parity: {deployed: mlp, k: 2, encoder: sum}
)");
    dir_.WriteFile("mlp-parity/1/model.pt", "weights");
    repo_ = *ModelRepository::Open(dir_.path());
  }
  // "mlp" of task fashion-mnist (accuracy 0.88), its cpu profile's latencies
  // at batches 1 and 8 `latency_us` (a YAML list), and the repository reopened.
  void WriteTaskMlp(const std::string& latency_us) {
    dir_.WriteFile("mlp/1/config.yaml", absl::StrCat(R"(name: mlp
platform: builtin
architecture: mlp
task: fashion-mnist
accuracy: 0.88
max_batch_size: 8
inputs: [{name: image, datatype: FP32, shape: [1, 28, 28]}]
outputs: [{name: logits, datatype: FP32, shape: [10]}]
profiles: {cpu: {batch: [1, 8], latency_us: )", latency_us, "}}\n"));
    repo_ = *ModelRepository::Open(dir_.path());
  }
  std::string ResolveError(const std::string& yaml) {
    absl::StatusOr<ServerConfig> c = ResolveServerConfig(*ParseServerConfig(yaml), repo_);
    EXPECT_FALSE(c.ok()) << yaml;
    return c.ok() ? "" : std::string(c.status().message());
  }
  TempDir dir_;
  ModelRepository repo_;
};

// model_less: the task's models with an accuracy and a cpu profile get a
// variant per hardware kind, each in a group of its own sized by its pool;
// the defaults leave the variants out of the shared torch group.
TEST_F(ResolveTest, ModelLessVariantsGetGroupsOfTheirOwn) {
  WriteTaskMlp("[100, 300]");
  const ServerConfig parsed =
      *ParseServerConfig("model_less: {task: fashion-mnist, objective_ms: 5, pools: {cpu: 2, inf1: 3}}");
  EXPECT_THAT(ResolveServerConfig(parsed, repo_).status().message(), HasSubstr("lacks the generated variant"));
  absl::StatusOr<ModelRepository> served = ServedRepository(repo_, parsed);
  ASSERT_TRUE(served.ok()) << served.status();
  const ModelVersion& inf1 = **served->Find("mlp@inf1");
  EXPECT_EQ(inf1.variant_of, "mlp");
  EXPECT_EQ(inf1.weights_path, (*repo_.Find("mlp"))->weights_path);
  EXPECT_EQ(inf1.config.latency_objective_ms, 5);
  absl::StatusOr<ServerConfig> c = ResolveServerConfig(parsed, *served);
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->executors.size(), 5u);
  EXPECT_EQ(c->executors[0].models, (std::vector<std::string>{"mlp"}));  // the registered model, by name
  EXPECT_EQ(c->executors[2].models, (std::vector<std::string>{"mlp@cpu"}));
  EXPECT_EQ(c->executors[2].kind, "torch");
  EXPECT_EQ(c->executors[2].count, 2);
  EXPECT_EQ(c->executors[3].models, (std::vector<std::string>{"mlp@inf1"}));
  EXPECT_EQ(c->executors[3].kind, "emulated");
  EXPECT_EQ(c->executors[3].profile, "inf1");
  EXPECT_EQ(c->executors[3].count, 3);
  EXPECT_EQ(c->executors[4].count, 1);  // v100: no pool given
  EXPECT_THAT(ServedRepository(repo_, *ParseServerConfig("model_less: {task: nothing}")).status().message(),
              HasSubstr("no model of task 'nothing'"));
  // A fixed-variant baseline names its variant; a name that is none is refused.
  const ServerConfig fixed = *ParseServerConfig("model_less: {task: fashion-mnist, variants: [mlp@inf1]}");
  EXPECT_TRUE(ResolveServerConfig(fixed, *served).ok());
  EXPECT_THAT(ResolveServerConfig(*ParseServerConfig("model_less: {task: fashion-mnist, variants: [mlp@tpu]}"), *served)
                  .status()
                  .message(),
              HasSubstr("model_less.variants: 'mlp@tpu' is not a variant"));
}

// Declared hardware kinds replace the built-in ones: an emulated kind's
// profile is the cpu profile scaled by its speed-ups, and the task as the
// autoscaler runs it has each variant on its group's slots.
TEST_F(ResolveTest, ModelLessHardwareKindsAreDeclaredAndTheTaskSitsOnTheirSlots) {
  WriteTaskMlp("[100, 800]");
  const ServerConfig parsed = *ParseServerConfig(R"(model_less:
  task: fashion-mnist
  objective_ms: 100
  pools: {slow: 3}
  hardware:
    - {name: cpu}
    - {name: slow, executor: emulated, latency_speedup: 0.1, throughput_speedup: 0.5, cost: 2, provision_s: 0.25}
)");
  absl::StatusOr<ModelRepository> served = ServedRepository(repo_, parsed);
  ASSERT_TRUE(served.ok()) << served.status();
  EXPECT_FALSE(served->Find("mlp@inf1").ok()) << "the built-in kinds are replaced";
  const LatencyProfile& slow = (*served->Find("mlp@slow"))->config.profiles.at("slow");
  EXPECT_EQ(slow.Latency(1), Millis(1));                        // 100 µs / 0.1
  EXPECT_EQ(slow.Latency(8), Millis(1) + 1400 * kMicrosecond);  // + 700 µs / 0.5
  absl::StatusOr<ServerConfig> c = ResolveServerConfig(parsed, *served);
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->executors.size(), 4u);  // mlp and resnet50 by name, mlp@cpu, mlp@slow
  EXPECT_EQ(c->executors[3].kind, "emulated");
  EXPECT_EQ(c->executors[3].count, 3);
  absl::StatusOr<ModelLessTask> task = MakeModelLessTask(*served, *c);
  ASSERT_TRUE(task.ok()) << task.status();
  ASSERT_EQ(task->variants.size(), 2u);
  EXPECT_EQ(task->variants[1].name, "mlp@slow");
  EXPECT_EQ(task->variants[1].first_gpu, 3);  // after mlp's, resnet50's and mlp@cpu's slots
  EXPECT_EQ(task->variants[1].max_instances, 3);
  EXPECT_EQ(task->variants[1].cost, 2);
  EXPECT_EQ(task->variants[1].load_latency, Millis(250));
  EXPECT_EQ(task->requirements.latency_objective, Millis(100));
  for (const char* bad : {"[{name: cpu, latency_speedup: 2}]", "[{name: a@b, executor: emulated}]",
                          "[{name: x, executor: gpu}]", "[{name: x, executor: emulated, cost: -1}]",
                          "[{name: x, executor: emulated}, {name: x, executor: emulated}]", "[]"}) {
    EXPECT_FALSE(ParseServerConfig(absl::StrCat("model_less: {task: t, hardware: ", bad, "}")).ok()) << bad;
  }
}

// Parity models serve only under a `coding:` entry, which the defaults do
// not have (and `tutti demo` does not profile them).
TEST_F(ResolveTest, DefaultExecutorsHoldEveryModelButParityModels) {
  absl::StatusOr<ServerConfig> c = ResolveServerConfig(ServerConfig{}, repo_);
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->executors.size(), 2u);
  EXPECT_EQ(c->executors[0].kind, "torch");
  EXPECT_EQ(c->executors[0].models, (std::vector<std::string>{"mlp"}));
  EXPECT_EQ(c->executors[1].kind, "emulated");
  EXPECT_EQ(c->executors[1].profile, "a100");
  EXPECT_EQ(c->executors[1].models, std::vector<std::string>{"resnet50"});
}

TEST_F(ResolveTest, AStatefulModelGetsATorchExecutorOfItsOwn) {
  dir_.WriteFile("gru/1/config.yaml", R"(name: gru
platform: builtin
architecture: gru_rows
max_batch_size: 8
inputs: [{name: rows, datatype: FP32, shape: [4, 28]}]
outputs: [{name: logits, datatype: FP32, shape: [10]}]
profiles: {cpu: {batch: [1, 8], latency_us: [100, 300]}}
sequence_batching: {state: [{input_name: h_in, output_name: h_out, dims: [64]}]}
)");
  dir_.WriteFile("gru/1/model.pt", "weights");
  repo_ = *ModelRepository::Open(dir_.path());
  absl::StatusOr<ServerConfig> c = ResolveServerConfig(*ParseServerConfig("replication: {mode: remus, link_rtt_us: 25}"), repo_);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->replication.mode, ReplicationMode::kRemus);
  EXPECT_EQ(c->replication.link_rtt, 25 * kMicrosecond);
  ASSERT_EQ(c->executors.size(), 3u);
  EXPECT_EQ(c->executors[0].models, (std::vector<std::string>{"mlp"}));
  EXPECT_EQ(c->executors[1].models, (std::vector<std::string>{"gru"}));
  EXPECT_THAT(ResolveError("executors: [{kind: torch, count: 2, models: [gru]}]"),
              HasSubstr("model 'gru' is stateful: its group must be one torch executor (count: 1)"));
}

// A compute-then-update model's batches queue behind one another's update
// stage: its group (only) awaits completion.
TEST_F(ResolveTest, AComputeThenUpdateModelsGroupAwaitsCompletion) {
  dir_.WriteFile("online/1/config.yaml", R"(name: online
platform: builtin
architecture: online_linear
max_batch_size: 8
inputs: [{name: image_and_label, datatype: FP32, shape: [785]}]
outputs: [{name: logits, datatype: FP32, shape: [10]}]
profiles: {cpu: {batch: [1, 8], latency_us: [10, 20]}}
model_state: {dims: [7850]}
)");
  dir_.WriteFile("online/1/model.pt", "weights");
  repo_ = *ModelRepository::Open(dir_.path());
  absl::StatusOr<ServerConfig> c = ResolveServerConfig(ServerConfig{}, repo_);
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->executors.size(), 3u);
  EXPECT_EQ(c->executors[1].models, (std::vector<std::string>{"online"}));
  EXPECT_EQ(c->scheduler.await_sub_clusters, (std::vector<bool>{false, true, false}));
  EXPECT_FALSE(c->scheduler.await_completion);
}

TEST_F(ResolveTest, TheLayoutPlansWithTheConfiguredNetworkDelays) {
  absl::StatusOr<ServerConfig> c = ResolveServerConfig(
      *ParseServerConfig("network_us: {ctrl: 30, resp: 900}\nexecutors: [{kind: emulated, count: 2, profile: a100, "
                         "models: [resnet50]}]"),
      repo_);
  ASSERT_TRUE(c.ok()) << c.status();
  absl::StatusOr<ClusterLayout> layout = LayOutCluster(repo_, *c);
  ASSERT_TRUE(layout.ok()) << layout.status();
  EXPECT_EQ(layout->spec.delays.ctrl, Micros(30));
  EXPECT_EQ(layout->spec.delays.resp, Micros(900));
  EXPECT_EQ(layout->spec.num_gpus(), 2);
}

TEST_F(ResolveTest, GraphsRunNoExecutorOfTheirOwn) {
  dir_.WriteFile("pair/1/config.yaml", R"(name: pair
platform: ensemble
max_batch_size: 8
inputs: [{name: image, datatype: FP32, shape: [4]}]
outputs: [{name: scores, datatype: FP32, shape: [2]}]
ensemble_scheduling:
  step: [{model_name: resnet50, input_map: {image: image}, output_map: {logits: scores}}]
)");
  repo_ = *ModelRepository::Open(dir_.path());
  absl::StatusOr<ServerConfig> c = ResolveServerConfig(ServerConfig{}, repo_);
  ASSERT_TRUE(c.ok()) << c.status();
  for (const ExecutorGroupConfig& g : c->executors) EXPECT_THAT(g.models, ::testing::Not(::testing::Contains("pair")));
  EXPECT_THAT(ResolveError("executors: [{kind: emulated, profile: a100, models: [resnet50, pair]}]"),
              HasSubstr("executors[0]: 'pair' is a graph (platform ensemble)"));
}

// Three lenet5 specialists: tops and shoes share 4 leading stages, bags
// only the first 2; odd has another trunk. On a torch group, the three
// become one prefix group sharing 2 stages, served through one-step graphs
// (with their heads); a routed graph over them runs the group's heads.
TEST_F(ResolveTest, ModelsWithIdenticalLeadingStagesBecomeOnePrefixGroup) {
  auto specialist = [&](const std::string& name, const std::string& hashes) {
    dir_.WriteFile(name + "/1/config.yaml", absl::StrCat("name: ", name, R"(
platform: builtin
architecture: lenet5
max_batch_size: 8
inputs: [{name: image, datatype: FP32, shape: [1, 28, 28]}]
outputs: [{name: logits, datatype: FP32, shape: [10]}]
profiles: {cpu: {batch: [1, 8], latency_us: [100, 300]}}
stage_hashes: )", hashes, "\n"));
    dir_.WriteFile(name + "/1/model.pt", "weights");
  };
  specialist("tops", "[a, b, c, d, t]");
  specialist("shoes", "[a, b, c, d, s]");
  specialist("bags", "[a, b, x, y, z]");
  specialist("odd", "[q, b, c, d, t]");
  dir_.WriteFile("router/1/config.yaml", R"(name: router
platform: ensemble
max_batch_size: 8
inputs: [{name: image, datatype: FP32, shape: [1, 28, 28]}]
outputs: [{name: logits, datatype: FP32, shape: [10]}]
ensemble_scheduling:
  step:
    - {model_name: mlp, input_map: {image: image}, output_map: {logits: class}}
    - {model_name: tops, input_map: {image: image}, output_map: {logits: logits}, route: {tensor: class, argmax_in: [0, 2]}}
    - {model_name: shoes, input_map: {image: image}, output_map: {logits: logits}, route: {tensor: class, argmax_in: [5, 7, 9]}}
  early_exit: {tensor: class, argmax_in: [8]}
)");
  repo_ = *ModelRepository::Open(dir_.path());
  const std::string group = "executors: [{kind: torch, models: [mlp, tops, odd, shoes, bags]}]";
  absl::StatusOr<ServerConfig> c = ResolveServerConfig(*ParseServerConfig(group), repo_);
  ASSERT_TRUE(c.ok()) << c.status();
  absl::StatusOr<ClusterLayout> layout = LayOutCluster(repo_, *c);
  ASSERT_TRUE(layout.ok()) << layout.status();
  std::vector<std::string> scheduled;
  for (const ModelSpec& m : layout->spec.models) scheduled.push_back(m.name);
  EXPECT_THAT(scheduled, ElementsAre("mlp", "prefix[tops,shoes,bags]", "odd"));
  ASSERT_EQ(layout->prefix_groups.size(), 1u);
  EXPECT_EQ(layout->prefix_groups[0].model, 1);
  EXPECT_EQ(layout->prefix_groups[0].shared_stages, 2);
  EXPECT_EQ(layout->shapes[1].input_elements, 785);  // the head, then the image
  EXPECT_THAT(layout->description, HasSubstr("3 models run their first 2 of 5 layer stages once per batch"));
  // The members, then the graph: clients call them by name.
  ASSERT_EQ(layout->graphs.size(), 4u);
  EXPECT_EQ(layout->graphs[2].name, "bags");
  EXPECT_EQ(layout->graphs[2].steps[0].model, 1);
  EXPECT_EQ(layout->graphs[2].steps[0].head, 2);
  const GraphSpec& router = layout->graphs[3];
  ASSERT_EQ(router.steps.size(), 3u);
  EXPECT_EQ(router.steps[1].head, 0);
  EXPECT_EQ(router.steps[2].head, 1);
  EXPECT_EQ(router.steps[2].route_from, 0);
  EXPECT_THAT(router.steps[2].route_values, ElementsAre(5, 7, 9));
  EXPECT_DOUBLE_EQ(router.steps[2].gamma, 0.3);  // 3 of the router's 10 classes
  EXPECT_THAT(router.outputs, ElementsAre(1, 2));
  EXPECT_EQ(router.exit_from, 0);
  // Switched off: each model on its own.
  c = ResolveServerConfig(*ParseServerConfig("prefix_batching: false\n" + group), repo_);
  EXPECT_EQ(LayOutCluster(repo_, *c)->spec.models.size(), 5u);
}

TEST_F(ResolveTest, ModelsAreCheckedAgainstTheRepository) {
  EXPECT_THAT(ResolveError("executors: [{kind: torch, models: [vgg]}]"), HasSubstr("executors[0]: unknown model 'vgg'"));
  EXPECT_THAT(ResolveError("executors: [{kind: torch, models: [mlp]}, {kind: emulated, profile: cpu, models: [mlp]}]"),
              HasSubstr("executors[1]: model 'mlp' is already in executors[0]"));
  EXPECT_THAT(ResolveError("executors: [{kind: torch, models: [resnet50]}]"),
              HasSubstr("'resnet50' is platform emulated and has no weights"));
  EXPECT_THAT(ResolveError("executors: [{kind: emulated, profile: v100, models: [resnet50]}]"),
              HasSubstr("model 'resnet50' has no 'v100' latency profile; it has: a100"));
  EXPECT_THAT(ResolveError("executors: [{kind: torch, profile: gpu, models: [mlp]}]"),
              HasSubstr("(measure one with `tutti profile`)"));
}

TEST_F(ResolveTest, AutoscalingScalesOneGroupWithinItsCount) {
  absl::StatusOr<ServerConfig> c = ResolveServerConfig(
      *ParseServerConfig("autoscale: {initial_gpus: 2}\nexecutors: [{kind: emulated, count: 4, profile: a100, "
                         "models: [resnet50]}]"),
      repo_);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->autoscale->initial_gpus, 2);
  EXPECT_THAT(ResolveError("autoscale: {}\nexecutors: [{kind: torch, models: [mlp]}, {kind: emulated, profile: a100, "
                           "models: [resnet50]}]"),
              HasSubstr("autoscale: scales one executor group, the config has 2"));
  EXPECT_THAT(ResolveError("autoscale: {initial_gpus: 5}\nexecutors: [{kind: emulated, count: 4, profile: a100, "
                           "models: [resnet50]}]"),
              HasSubstr("initial_gpus (5) ≤ max_gpus (4)"));
  EXPECT_THAT(ParseServerConfig("autoscale: {interval_s: 0}").status().message(),
              HasSubstr("'autoscale.interval_s': must be positive"));
}

// A memory budget: one emulated group under the loads policy; each model's
// weights are 4 bytes per parameter of its config.
TEST_F(ResolveTest, AMemoryBudgetGivesTheClusterItsBudgetAndTheModelsTheirWeights) {
  const std::string group =
      "executors: [{kind: emulated, count: 2, profile: a100, models: [resnet50, resnet50b], memory_gb: 0.5, "
      "load_gb_per_s: 10}]";
  dir_.WriteFile("resnet50b/1/config.yaml", R"(name: resnet50b
platform: emulated
max_batch_size: 8
parameters: 25000000
inputs: [{name: image, datatype: FP32, shape: [4]}]
outputs: [{name: logits, datatype: FP32, shape: [2]}]
profiles: {a100: {batch: [1, 8], latency_us: [1000, 3000]}}
)");
  repo_ = *ModelRepository::Open(dir_.path());
  absl::StatusOr<ServerConfig> c = ResolveServerConfig(*ParseServerConfig("policy: loads\n" + group), repo_);
  ASSERT_TRUE(c.ok()) << c.status();
  // resnet50's config gives no parameter count: its weights are unknown.
  EXPECT_THAT(LayOutCluster(repo_, *c).status().message(), HasSubstr("'resnet50' has no `parameters`"));
  c = ResolveServerConfig(*ParseServerConfig("policy: loads\n" + group.substr(0, group.find("resnet50,")) +
                                             group.substr(group.find("resnet50b"))),
                          repo_);
  ASSERT_TRUE(c.ok()) << c.status();
  absl::StatusOr<ClusterLayout> layout = LayOutCluster(repo_, *c);
  ASSERT_TRUE(layout.ok()) << layout.status();
  EXPECT_EQ(layout->spec.memory.gpu_bytes, 500'000'000);
  EXPECT_EQ(layout->spec.memory.bytes_per_s, 10e9);
  EXPECT_EQ(layout->spec.models[0].weights_bytes, 100'000'000);
  EXPECT_THAT(ResolveError(group), HasSubstr("needs one executor group and `policy: loads`"));
  // auto: the emulated GPU's own memory.
  c = ResolveServerConfig(
      *ParseServerConfig("policy: loads\nexecutors: [{kind: emulated, profile: a100, models: [resnet50b], "
                         "memory_gb: auto}]"),
      repo_);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->executors[0].memory->gpu_bytes, 40'000'000'000);
  EXPECT_THAT(ParseServerConfig("executors: [{kind: torch, models: [mlp], memory_gb: auto}]").status().message(),
              HasSubstr("auto is an emulated GPU's memory"));
  EXPECT_THAT(ParseServerConfig("executors: [{kind: emulated, models: [x], memory_gb: lots}]").status().message(),
              HasSubstr("a number or auto"));
  EXPECT_THAT(ParseServerConfig("executors: [{kind: emulated, profile: a100, models: [x], load_gb_per_s: 1}]")
                  .status()
                  .message(),
              HasSubstr("needs memory_gb"));
}

// On CPU executors a model's load takes its measured load_ms; without one
// the budget cannot plan its loads.
TEST_F(ResolveTest, ATorchMemoryBudgetPlansLoadsWithTheMeasuredLoadTime) {
  const std::string config = "policy: loads\nexecutors: [{kind: torch, count: 2, models: [mlp], memory_gb: 0.001}]";
  const std::string mlp = R"(name: mlp
platform: builtin
architecture: mlp
max_batch_size: 8
parameters: 1000
inputs: [{name: image, datatype: FP32, shape: [1, 28, 28]}]
outputs: [{name: logits, datatype: FP32, shape: [10]}]
profiles: {cpu: {batch: [1, 8], latency_us: [100, 300]}}
)";
  dir_.WriteFile("mlp/1/config.yaml", mlp);
  repo_ = *ModelRepository::Open(dir_.path());
  absl::StatusOr<ServerConfig> c = ResolveServerConfig(*ParseServerConfig(config), repo_);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_THAT(LayOutCluster(repo_, *c).status().message(), HasSubstr("'mlp' has no `load_ms`"));
  dir_.WriteFile("mlp/1/config.yaml", mlp + "load_ms: 2.5\n");
  repo_ = *ModelRepository::Open(dir_.path());
  c = ResolveServerConfig(*ParseServerConfig(config), repo_);
  ASSERT_TRUE(c.ok()) << c.status();
  absl::StatusOr<ClusterLayout> layout = LayOutCluster(repo_, *c);
  ASSERT_TRUE(layout.ok()) << layout.status();
  EXPECT_EQ(layout->spec.models[0].weights_bytes, 4000);
  EXPECT_EQ(layout->spec.LoadTime(0), Micros(2500));
}

TEST_F(ResolveTest, CodedModelsAndTheirParityModelsMustBeServedAndMatch) {
  const std::string groups = "executors: [{kind: torch, models: [mlp, mlp-parity]}]\n";
  absl::StatusOr<ServerConfig> ok =
      ResolveServerConfig(*ParseServerConfig(groups + "coding: [{model: mlp, parity_model: mlp-parity}]"), repo_);
  EXPECT_TRUE(ok.ok()) << ok.status();
  EXPECT_THAT(ResolveError("executors: [{kind: torch, models: [mlp]}]\n"
                           "coding: [{model: mlp, parity_model: mlp-parity}]"),
              HasSubstr("coding[0]: model 'mlp-parity' is not served"));
  EXPECT_THAT(ResolveError(groups + "coding: [{model: mlp-parity, parity_model: mlp}]"),
              HasSubstr("coding[0]: 'mlp' is not a parity model of 'mlp-parity'"));
  EXPECT_THAT(ResolveError(groups + "coding: [{model: mlp, parity_model: mlp-parity}, "
                                    "{model: mlp, parity_model: mlp-parity}]"),
              HasSubstr("coding[1]: model 'mlp' is coded twice"));
}

}  // namespace
}  // namespace tutti
