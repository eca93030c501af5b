#include "tutti/server/server.h"

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <future>
#include <mutex>
#include <set>
#include <thread>

#include <grpcpp/grpcpp.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rapidjson/document.h"
#include "tutti/core/real_clock.h"
#include "tutti/server/fixture_server_test_util.h"
#include "tutti/testing/closed_loop_clients.h"
#include "tutti/testing/http_test_client.h"
#include "tutti/testing/temp_dir.h"
#include "tutti/testing/torchscript_fixture.h"

namespace tutti {
namespace {

using ::testing::HasSubstr;
using ::tutti::testing::HttpTestClient;
using ::tutti::testing::TempDir;

// Waits (polling every millisecond) until `done` holds; false after 10 s.
bool WaitUntil(const std::function<bool()>& done) {
  for (int i = 0; i < 10000; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));  // polls what the server exposes, bounded
  }
  return done();
}

// A repository with the TorchScript fixture "linear" (given a cpu profile)
// and an emulated "resnet50" whose batches take 100 ms + 10 ms per item.
class ServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_.WriteFile("linear/1/config.yaml", R"(name: linear
platform: torchscript
max_batch_size: 8
inputs: [{name: image, datatype: FP32, shape: [1, 28, 28]}]
outputs: [{name: logits, datatype: FP32, shape: [10]}]
latency_objective_ms: 500
profiles: {cpu: {batch: [1, 8], latency_us: [1000, 2000]}}
)");
    std::filesystem::copy_file(testing::FixtureRepo() + "/linear/1/model.pt", dir_.path() + "/linear/1/model.pt");
    dir_.WriteFile("resnet50/1/config.yaml", R"(name: resnet50
platform: emulated
max_batch_size: 16
inputs: [{name: image, datatype: FP32, shape: [4]}]
outputs: [{name: logits, datatype: FP32, shape: [2]}]
latency_objective_ms: 2000
profiles: {a100: {batch: [1, 16], latency_us: [110000, 260000]}}
)");
    dir_.WriteFile("resnet50-parity/1/config.yaml", R"(name: resnet50-parity
platform: emulated
max_batch_size: 16
inputs: [{name: image, datatype: FP32, shape: [4]}]
outputs: [{name: logits, datatype: FP32, shape: [2]}]
profiles: {a100: {batch: [1, 16], latency_us: [1000, 2000]}}
parity: {deployed: resnet50, k: 2, encoder: sum}
)");
  }

  std::unique_ptr<Server> Start(const std::string& yaml) {
    absl::StatusOr<ModelRepository> repo = ModelRepository::Open(dir_.path());
    EXPECT_TRUE(repo.ok()) << repo.status();
    absl::StatusOr<ServerConfig> config = ParseServerConfig(yaml);
    EXPECT_TRUE(config.ok()) << config.status();
    repo = ServedRepository(*repo, *config);
    EXPECT_TRUE(repo.ok()) << repo.status();
    config = ResolveServerConfig(*config, *repo);
    EXPECT_TRUE(config.ok()) << config.status();
    absl::StatusOr<std::unique_ptr<Server>> server = Server::Start(*repo, *config, &clock_);
    EXPECT_TRUE(server.ok()) << server.status();
    return server.ok() ? *std::move(server) : nullptr;
  }

  // The value of the /metrics line that starts with `series` (-1: none).
  static int Gauge(Server& server, const std::string& series) {
    const std::string metrics = HttpTestClient(server.port()).Request("GET", "/metrics").body;
    const size_t at = metrics.find(series + " ");
    return at == std::string::npos ? -1 : std::atoi(metrics.c_str() + at + series.size() + 1);
  }

  static std::string Infer(const std::vector<float>& values, int batch) {
    return absl::StrCat(R"({"inputs":[{"name":"image","datatype":"FP32","shape":[)", batch, ",",
                        values.size() / batch == 784 ? "1,28,28" : "4", R"(],"data":[)",
                        absl::StrJoin(values, ","), "]}]}");
  }

  TempDir dir_;
  RealClock clock_;
};

// ParM over HTTP: resnet50's batches are coded into parity queries for its
// parity model; answers carry the "reconstructed" parameter and /metrics
// counts the coding groups.
TEST_F(ServerTest, CodedModelServesEveryRequestAndReportsItsCoding) {
  std::unique_ptr<Server> server = Start(R"(
http: {port: 0}
grpc: {port: -1}
policy: eager
executors:
  - {kind: emulated, count: 2, profile: a100, models: [resnet50]}
  - {kind: emulated, count: 1, profile: a100, models: [resnet50-parity]}
coding: [{model: resnet50, parity_model: resnet50-parity}]
)");
  ASSERT_NE(server, nullptr);
  EXPECT_THAT(server->Describe(), HasSubstr("ParM: resnet50 protected by resnet50-parity (k 2, sum encoder)"));
  std::vector<std::future<testing::ClientResponse>> replies;
  for (int i = 0; i < 4; ++i) {
    replies.push_back(std::async(std::launch::async, [&] {
      return HttpTestClient(server->port()).Request("POST", "/v2/models/resnet50/infer", Infer({1, 2, 3, 4}, 1));
    }));
  }
  for (auto& f : replies) {
    testing::ClientResponse r = f.get();
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_THAT(r.body, HasSubstr(R"("reconstructed":)"));
  }
  server->core().WaitIdle();
  const std::string metrics = HttpTestClient(server->port()).Request("GET", "/metrics").body;
  EXPECT_THAT(metrics, HasSubstr("tutti_parity_events_total{model=\"resnet50\",event=\"group\"} "));
  EXPECT_THAT(metrics, HasSubstr("tutti_reconstructions_total{model=\"resnet50\"}"));
}

// Under `adaptive`, /metrics shows how each sub-cluster batches now: at
// first (and at light load) deferred.
TEST_F(ServerTest, TheAdaptivePolicyShowsItsChoiceInMetrics) {
  std::unique_ptr<Server> server = Start(R"(
http: {port: 0}
grpc: {port: -1}
policy: adaptive
executors:
  - {kind: emulated, count: 2, profile: a100, models: [resnet50]}
)");
  ASSERT_NE(server, nullptr);
  testing::ClientResponse r =
      HttpTestClient(server->port()).Request("POST", "/v2/models/resnet50/infer", Infer({1, 2, 3, 4}, 1));
  ASSERT_EQ(r.status, 200) << r.body;
  const std::string metrics = HttpTestClient(server->port()).Request("GET", "/metrics").body;
  EXPECT_THAT(metrics, HasSubstr(R"(tutti_scheduling_choice{sub_cluster="0",choice="prompt"} 1)"));
}

// Two executor groups are two sub-clusters, scheduled as two shards: both
// models answer, and what the server reports (a sub-cluster's choice, each
// model's counts) is in the cluster's ids. A shard per sub-cluster at most.
TEST_F(ServerTest, SchedulerShardsServeEachGroupAndReportInClusterIds) {
  const std::string groups = R"(
http: {port: 0}
grpc: {port: -1}
policy: adaptive
executors:
  - {kind: torch, count: 1, models: [linear]}
  - {kind: emulated, count: 2, profile: a100, models: [resnet50]}
)";
  std::unique_ptr<Server> server = Start(groups + "scheduler_shards: 2\n");
  ASSERT_NE(server, nullptr);
  EXPECT_THAT(server->Describe(), HasSubstr("3 executors, 2 scheduler shards"));
  HttpTestClient client(server->port());
  testing::ClientResponse r = client.Request("POST", "/v2/models/resnet50/infer", Infer({1, 2, 3, 4}, 1));
  ASSERT_EQ(r.status, 200) << r.body;
  r = client.Request("POST", "/v2/models/linear/infer", Infer(std::vector<float>(784, 0.5f), 1));
  ASSERT_EQ(r.status, 200) << r.body;
  const std::string metrics = client.Request("GET", "/metrics").body;
  EXPECT_THAT(metrics, HasSubstr(R"(tutti_scheduling_choice{sub_cluster="1",choice="prompt"} 1)"));
  EXPECT_THAT(metrics, HasSubstr(R"(tutti_requests_total{model="linear",outcome="success"} 1)"));
  EXPECT_THAT(metrics, HasSubstr(R"(tutti_requests_total{model="resnet50",outcome="success"} 1)"));

  absl::StatusOr<ModelRepository> repo = ModelRepository::Open(dir_.path());
  ASSERT_TRUE(repo.ok());
  absl::StatusOr<ServerConfig> config = ParseServerConfig(groups + "scheduler_shards: 3\n");
  ASSERT_TRUE(config.ok());
  config = ResolveServerConfig(*config, *ServedRepository(*repo, *config));
  ASSERT_TRUE(config.ok());
  absl::StatusOr<std::unique_ptr<Server>> refused = Server::Start(*repo, *config, &clock_);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(), HasSubstr("scheduler_shards: 3 scheduler shards for 2 sub-clusters"));
}

// Closed-loop autoscaling of the emulated executors: one of four serves at
// first; a burst keeps it busy, so more come (0.1 s after being
// requested); once the burst is answered — every request — they go again.
// Asserted on the states reached, not on when.
TEST_F(ServerTest, AutoscalingBringsExecutorsUpUnderLoadAndReleasesThemAfter) {
  std::unique_ptr<Server> server = Start(R"(
http: {port: 0}
grpc: {port: -1}
policy: eager
autoscale: {interval_s: 0.3, initial_gpus: 1, provision_delay_s: 0.1}
executors:
  - {kind: emulated, count: 4, profile: a100, models: [resnet50]}
)");
  ASSERT_NE(server, nullptr);
  EXPECT_THAT(server->Describe(), HasSubstr("autoscale: 1 of 4 executors up"));
  const auto executors = [&](const std::string& state) {
    return Gauge(*server, absl::StrCat("tutti_autoscale_executors{state=\"", state, "\"}"));
  };
  EXPECT_EQ(executors("up"), 1);  // no load: never below min_gpus (1)
  std::atomic<bool> stop{false};
  std::atomic<int> ok{0}, failed{0};
  std::vector<std::thread> clients;
  for (int t = 0; t < 24; ++t) {
    clients.emplace_back([&] {
      HttpTestClient c(server->port());
      while (!stop) (c.Request("POST", "/v2/models/resnet50/infer", Infer({1, 2, 3, 4}, 1)).status == 200 ? ok : failed)++;
    });
  }
  EXPECT_TRUE(WaitUntil([&] { return executors("up") > 1; })) << "the load brought no executor up";
  stop = true;
  for (std::thread& t : clients) t.join();
  EXPECT_GT(ok.load(), 0);
  EXPECT_EQ(failed.load(), 0);
  EXPECT_TRUE(WaitUntil([&] { return executors("up") == 1 && executors("requested") == 1; }))
      << "idle executors were not released";
}

// INFaaS: the task's variants are generated from "linear" (a cpu profile of
// 200 ms at batch 1, 400 ms at 8: 20 queries/s per instance within 1 s), one
// cpu instance at most; model-less requests are routed by the autoscaler,
// which brings an inf1 instance up when more than one cpu instance carries
// comes, and goes back to the cpu once the load is gone.
TEST_F(ServerTest, ModelLessRequestsAreRoutedToGeneratedVariantsThatScaleWithTheLoad) {
  dir_.WriteFile("linear/1/config.yaml", testing::ModelLessLinearConfig());
  std::unique_ptr<Server> server = Start(R"(
http: {port: 0}
grpc: {port: -1}
policy: eager
model_less: {task: toy, accuracy: 0.8, objective_ms: 1000, pools: {cpu: 1, inf1: 1, v100: 1}, interval_s: 0.3}
)");
  ASSERT_NE(server, nullptr);
  EXPECT_THAT(server->Describe(), HasSubstr("model_less: task toy"));
  EXPECT_THAT(server->Describe(), HasSubstr("linear@inf1 (1)"));
  const auto instances = [&](const std::string& variant) {
    return Gauge(*server, absl::StrCat("tutti_variant_instances{model=\"", variant, "\",state=\"up\"}"));
  };
  EXPECT_EQ(instances("linear@cpu"), 1);  // the cheapest in time, at start
  EXPECT_EQ(instances("linear@inf1"), 0);
  // The task's listing shows the autoscaler's view: no instance, inactive.
  const std::string listing = HttpTestClient(server->port()).Request("GET", "/v2/tasks/toy").body;
  EXPECT_THAT(listing, HasSubstr(R"({"name":"linear@inf1","accuracy":0.9,)"));
  EXPECT_THAT(listing.substr(listing.find(R"("name":"linear@inf1")")), HasSubstr(R"("state":"inactive")"));
  EXPECT_THAT(listing.substr(listing.find(R"("name":"linear@cpu")")), HasSubstr(R"("state":"active")"));
  const std::string image = Infer(std::vector<float>(784, 0.5f), 1);
  testing::ClientResponse first = HttpTestClient(server->port()).Request("POST", "/v2/tasks/toy/infer", image);
  ASSERT_EQ(first.status, 200) << first.body << server->Describe();
  EXPECT_THAT(first.body, HasSubstr(R"("model_name":"linear@cpu")"));
  // Load beyond one cpu instance: an inf1 instance comes (1 s to load).
  testing::ClosedLoopClients clients(server->port(), "/v2/tasks/toy/infer", image, 4);
  EXPECT_TRUE(WaitUntil([&] { return instances("linear@inf1") == 1; })) << "the load brought no inf1 instance up";
  EXPECT_TRUE(WaitUntil([&] { return clients.ServedBy("linear@inf1"); }));
  clients.Stop();
  EXPECT_GT(clients.ok(), 0);
  EXPECT_EQ(clients.failed(), 0) << absl::StrJoin(clients.errors(), "\n");  // nothing lost while variants came and went
  EXPECT_TRUE(WaitUntil([&] { return instances("linear@inf1") == 0 && instances("linear@cpu") == 1; }))
      << "the inf1 instance was not released";
  // Paid: the cpu instance throughout (cost 1 a second), the inf1 one (3) a while.
  const std::string metrics = HttpTestClient(server->port()).Request("GET", "/metrics").body;
  const size_t at = metrics.find("\ntutti_model_less_cost_total ");
  ASSERT_NE(at, std::string::npos);
  EXPECT_GT(std::atof(metrics.c_str() + at + 29), 3);
}

// The fixture's ONNX twin (the same weights, exported to ONNX) answers as
// the TorchScript model does, over both protocols.
TEST_F(ServerTest, ServesRealAndEmulatedModelsAsConfiguredOverHttpAndGrpc) {
  dir_.WriteFile("linear_onnx/1/config.yaml", R"(name: linear_onnx
platform: onnxruntime_onnx
max_batch_size: 8
inputs: [{name: image, datatype: FP32, shape: [1, 28, 28]}]
outputs: [{name: logits, datatype: FP32, shape: [10]}]
latency_objective_ms: 500
profiles: {cpu: {batch: [1, 8], latency_us: [1000, 2000]}}
)");
  std::filesystem::copy_file(testing::OnnxFixtureRepo() + "/linear/1/model.onnx",
                             dir_.path() + "/linear_onnx/1/model.onnx");
  std::unique_ptr<Server> server = Start(R"(
http: {port: 0}
grpc: {port: 0}
executors:
  - {kind: torch, models: [linear, linear_onnx]}
  - {kind: emulated, count: 2, profile: a100, models: [resnet50]}
)");
  ASSERT_NE(server, nullptr);
  EXPECT_THAT(server->Describe(), HasSubstr("2 x emulated executor (profile a100)"));
  HttpTestClient c(server->port());
  const std::vector<float> expected = testing::FixtureExpectedOutputs();
  rapidjson::Document d;
  for (const std::string model : {"linear", "linear_onnx"}) {
    testing::ClientResponse r =
        c.Request("POST", "/v2/models/" + model + "/infer", Infer(testing::FixtureInputs(2), 2));
    ASSERT_EQ(r.status, 200) << r.body;
    d.Parse(r.body.c_str());
    EXPECT_FALSE(d["parameters"]["tutti_emulated"].GetBool());
    ASSERT_EQ(d["outputs"][0]["data"].Size(), expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
      EXPECT_NEAR(d["outputs"][0]["data"][i].GetDouble(), expected[i], 1e-5) << model << " " << i;
    }
  }
  EXPECT_THAT(c.Request("GET", "/v2/models/linear_onnx").body, HasSubstr(R"("platform":"onnxruntime_onnx")"));
  testing::ClientResponse r = c.Request("POST", "/v2/models/resnet50/infer", Infer({1, 2, 3, 4}, 1));
  ASSERT_EQ(r.status, 200) << r.body;
  d.Parse(r.body.c_str());
  EXPECT_TRUE(d["parameters"]["tutti_emulated"].GetBool());
  EXPECT_THAT(c.Request("GET", "/v2/models/resnet50").body, HasSubstr(R"("platform":"tutti_emulated")"));

  // The same real models over KServe v2 gRPC give the same outputs.
  auto stub = inference::GRPCInferenceService::NewStub(grpc::CreateChannel(
      absl::StrCat("127.0.0.1:", server->grpc_port()), grpc::InsecureChannelCredentials()));
  for (const std::string model : {"linear", "linear_onnx"}) {
    inference::ModelInferRequest request;
    request.set_model_name(model);
    auto* in = request.add_inputs();
    in->set_name("image");
    in->set_datatype("FP32");
    for (int64_t dim : {2, 1, 28, 28}) in->add_shape(dim);
    for (float v : testing::FixtureInputs(2)) in->mutable_contents()->add_fp32_contents(v);
    inference::ModelInferResponse response;
    grpc::ClientContext context;
    grpc::Status status = stub->ModelInfer(&context, request, &response);
    ASSERT_TRUE(status.ok()) << status.error_message();
    EXPECT_FALSE(response.parameters().at("tutti_emulated").bool_param());
    ASSERT_EQ(response.raw_output_contents(0).size(), expected.size() * sizeof(float));
    const float* out = reinterpret_cast<const float*>(response.raw_output_contents(0).data());
    for (size_t i = 0; i < expected.size(); ++i) EXPECT_NEAR(out[i], expected[i], 1e-5) << model << " " << i;
  }
}

TEST_F(ServerTest, ShutdownAnswersEverythingInFlightThenRefuses) {
  std::unique_ptr<Server> server = Start("http: {port: 0}\ngrpc: {port: -1}\n");
  ASSERT_NE(server, nullptr);
  const int port = server->port();
  // 12 clients, each with a request that takes > 100 ms on the emulated GPU.
  std::vector<std::future<int>> clients;
  for (int i = 0; i < 12; ++i) {
    clients.push_back(std::async(std::launch::async, [port] {
      HttpTestClient c(port);
      return c.Request("POST", "/v2/models/resnet50/infer", Infer({1, 2, 3, 4}, 1)).status;
    }));
  }
  ASSERT_TRUE(WaitUntil([&] { return server->core().in_flight() >= 12; }));
  server->Shutdown();
  for (auto& f : clients) EXPECT_EQ(f.get(), 200);
  EXPECT_EQ(server->core().in_flight(), 0);
  EXPECT_THROW(HttpTestClient refused(port), boost::system::system_error);
}

// A raw HTTP/1.1 request for resnet50 (over 100 ms on its emulated GPU).
std::string RawInfer() {
  const std::string body = R"({"inputs":[{"name":"image","datatype":"FP32","shape":[1,4],"data":[1,2,3,4]}]})";
  return absl::StrCat("POST /v2/models/resnet50/infer HTTP/1.1\r\nHost: 127.0.0.1\r\n",
                      "Content-Type: application/json\r\nContent-Length: ", body.size(), "\r\n\r\n", body);
}

int Count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Graceful shutdown (SIGTERM) under keep-alive: a request whose bytes have
// arrived is answered — here the second of two pipelined requests, read
// only once the first has been answered, after the drain began — and
// connections end cleanly: the last response says "Connection: close",
// an idle connection is closed without a word.
TEST_F(ServerTest, ShutdownAnswersEveryRequestThatArrivedAndClosesConnectionsCleanly) {
  std::unique_ptr<Server> server = Start("http: {port: 0}\ngrpc: {port: -1}\n");
  ASSERT_NE(server, nullptr);
  HttpTestClient pipelined(server->port());
  pipelined.SendRaw(RawInfer() + RawInfer());
  HttpTestClient idle(server->port());
  EXPECT_EQ(idle.Request("GET", "/v2/health/live").status, 200);
  ASSERT_TRUE(WaitUntil([&] { return server->core().in_flight() >= 1; }));
  server->Shutdown();
  const std::string got = pipelined.ReadUntilClosed();
  EXPECT_EQ(Count(got, "HTTP/1.1 "), 2) << got;
  EXPECT_EQ(Count(got, "HTTP/1.1 200"), 1) << got;
  EXPECT_EQ(Count(got, "HTTP/1.1 503"), 1) << got;  // the server was shutting down by then
  EXPECT_THAT(got, HasSubstr("shutting down"));
  EXPECT_EQ(Count(got, "Connection: close"), 1) << got;
  EXPECT_EQ(idle.ReadUntilClosed(), "");
}

TEST_F(ServerTest, HostileBodiesAndNamesGetClearErrorsAndTheServerKeepsServing) {
  std::unique_ptr<Server> server = Start("http: {port: 0}\ngrpc: {port: -1}\n");
  ASSERT_NE(server, nullptr);
  HttpTestClient c(server->port());
  // 200,000 levels of nesting used to overflow the parser's stack.
  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  testing::ClientResponse r = c.Request("POST", "/v2/models/resnet50/infer", deep);
  EXPECT_EQ(r.status, 400);
  EXPECT_THAT(r.body, HasSubstr("nested deeper than 64 levels"));
  // Invalid UTF-8 in a model name does not reach the answer.
  r = c.Request("GET", "/v2/models/bad\xff\xfename");
  EXPECT_EQ(r.status, 404);
  rapidjson::Document d;
  d.Parse<rapidjson::kParseValidateEncodingFlag>(r.body.c_str());
  EXPECT_FALSE(d.HasParseError()) << r.body;
  EXPECT_EQ(c.Request("POST", "/v2/models/resnet50/infer", Infer({1, 2, 3, 4}, 1)).status, 200);
}

// A graph over HTTP: "pair" runs "first" (10 ms) on the request, then
// "second" (75 ms) on first's output, the objective split evenly. The
// margins are wide (tens of milliseconds), so that a loaded machine's late
// timers and measured delays cannot change which step is dropped.
TEST_F(ServerTest, GraphsAreServedLikeModelsAndAnswerOnceWhenAStepIsDropped) {
  testing::WritePairGraph(dir_, 10000, 12000, 75000, 80000, 200);
  std::unique_ptr<Server> server = Start(R"(
http: {port: 0}
grpc: {port: 0}
policy: eager
graph_split: even
executors:
  - {kind: emulated, count: 1, profile: a100, models: [first, second]}
)");
  ASSERT_NE(server, nullptr);
  EXPECT_THAT(server->Describe(), HasSubstr("graph pair v1 (objective 200.0 ms, even split): first (due at 50%), second (due at 100%)"));
  HttpTestClient c(server->port());
  EXPECT_THAT(c.Request("GET", "/v2/models/pair").body, HasSubstr(R"("platform":"ensemble")"));
  // Peaks within the objectives (100 ms by default): first runs batches of 8
  // in 12 ms ≤ 50 ms, 667 r/s; second's ℓ(1) = 75 ms exceeds 50: none; the
  // graph's is its slowest step's.
  EXPECT_THAT(c.Request("GET", "/v2/models/first/stats").body, HasSubstr(R"("peak_rps":666.7,)"));
  EXPECT_THAT(c.Request("GET", "/v2/models/second/stats").body, HasSubstr(R"("peak_rps":0.0,)"));
  EXPECT_THAT(c.Request("GET", "/v2/models/pair/stats").body, HasSubstr(R"("peak_rps":0.0,)"));
  testing::ClientResponse ok = c.Request("POST", "/v2/models/pair/infer", Infer({1, 2, 3, 4, 5, 6, 7, 8}, 2));
  ASSERT_EQ(ok.status, 200) << ok.body;
  EXPECT_THAT(ok.body, HasSubstr(R"("name":"scores","datatype":"FP32","shape":[2,2])"));
  // 80 ms: first runs (its 40 ms fit 10), leaving second under 70 ms < 75: dropped, one clear error.
  testing::ClientResponse dropped = c.Request(
      "POST", "/v2/models/pair/infer",
      R"({"inputs":[{"name":"image","datatype":"FP32","shape":[1,4],"data":[1,2,3,4]}],"parameters":{"latency_objective_ms":80}})");
  EXPECT_EQ(dropped.status, 503) << dropped.body;
  EXPECT_THAT(dropped.body, HasSubstr("graph 'pair', step 1 ('second'): the latency objective of this 'second'"));
  // The same over gRPC: one clear error, DEADLINE_EXCEEDED.
  auto stub = inference::GRPCInferenceService::NewStub(grpc::CreateChannel(
      absl::StrCat("127.0.0.1:", server->grpc_port()), grpc::InsecureChannelCredentials()));
  inference::ModelInferRequest request = testing::PairImageRequest("pair");
  (*request.mutable_parameters())["latency_objective_ms"].set_double_param(80);
  inference::ModelInferResponse response;
  grpc::ClientContext context;
  grpc::Status status = stub->ModelInfer(&context, request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << status.error_message();
  EXPECT_THAT(status.error_message(), HasSubstr("graph 'pair', step 1 ('second'): the latency objective"));
  const std::string metrics = c.Request("GET", "/metrics").body;
  EXPECT_THAT(metrics, HasSubstr(R"(tutti_requests_total{model="pair",outcome="success"} 2)"));
  EXPECT_THAT(metrics, HasSubstr(R"(tutti_requests_total{model="pair",outcome="dropped"} 2)"));
  EXPECT_THAT(metrics, HasSubstr(R"(tutti_requests_total{model="first",outcome="success"} 4)"));
  // Its steps, each against its own deadline: the dropped request's first step was on time.
  EXPECT_THAT(metrics, HasSubstr(R"(tutti_graph_step_requests_total{model="pair",step="0",step_model="first",)"
                                 R"(outcome="success"} 4)"));
  EXPECT_THAT(metrics, HasSubstr(R"(tutti_graph_step_requests_total{model="pair",step="1",step_model="second",)"
                                 R"(outcome="dropped"} 2)"));
  EXPECT_THAT(metrics, HasSubstr(R"(tutti_graph_step_deadline_share{model="pair",step="0",step_model="first"} 0.5000)"));
  EXPECT_THAT(c.Request("GET", "/v2/models/pair/stats").body,
              HasSubstr(R"("steps":[{"model_name":"first","deadline_share":0.5000,"success":4,)"));
}

}  // namespace
}  // namespace tutti
