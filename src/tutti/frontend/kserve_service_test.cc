#include "tutti/frontend/kserve_service.h"

#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rapidjson/document.h"
#include <grpcpp/grpcpp.h>

#include "tutti/testing/frontend_fixture.h"
#include "tutti/frontend/grpc_server.h"
#include "tutti/frontend/kserve_grpc_service.h"
#include "tutti/testing/http_test_client.h"

namespace tutti {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::tutti::testing::HttpTestClient;

// The fake engine's "mlp" (testing/frontend_fixture.h) served over HTTP on a free port.
class KserveServiceTest : public testing::FakeEngineFrontendTest {
 protected:
  void SetUp() override {
    FakeEngineFrontendTest::SetUp();
    service_ = std::make_unique<KserveService>(frontend_.get());
    HttpServerOptions http;
    http.port = 0;
    http.max_body_bytes = 4096;
    http.read_timeout = Millis(500);
    server_ = *HttpServer::Start(http, service_.get());
  }
  void TearDown() override {
    server_->StopAccepting();
    StopEngine();
    server_->Stop();
  }

  static std::string Infer(const std::string& shape, const std::string& data, const std::string& extra = "") {
    return absl::StrCat(R"({"id":"q",)", extra, R"("inputs":[{"name":"image","datatype":"FP32","shape":)",
                        shape, R"(,"data":)", data, "}]}");
  }

  std::unique_ptr<KserveService> service_;
  std::unique_ptr<HttpServer> server_;
};

TEST_F(KserveServiceTest, HealthAndMetadata) {
  HttpTestClient c(server_->port());
  EXPECT_EQ(c.Request("GET", "/v2/health/live").status, 200);
  EXPECT_EQ(c.Request("GET", "/v2/health/ready").status, 200);
  EXPECT_THAT(c.Request("GET", "/v2").body, HasSubstr(R"("name":"tutti")"));
  testing::ClientResponse meta = c.Request("GET", "/v2/models/mlp");
  EXPECT_EQ(meta.status, 200);
  EXPECT_THAT(meta.body, HasSubstr(R"("inputs":[{"name":"image","datatype":"FP32","shape":[-1,1,2,2]}])"));
  EXPECT_EQ(c.Request("GET", "/v2/models/mlp/versions/1").status, 200);
  testing::ClientResponse config = c.Request("GET", "/v2/models/mlp/config");
  EXPECT_EQ(config.status, 200);
  EXPECT_THAT(config.body,
              HasSubstr(R"("input":[{"name":"image","data_type":"TYPE_FP32","dims":[1,2,2],"optional":false}])"));
  EXPECT_THAT(config.body, HasSubstr(R"("dynamic_batching":{})"));
  EXPECT_EQ(c.Request("GET", "/v2/models/mlp/versions/1/config").status, 200);
  EXPECT_EQ(c.Request("POST", "/v2/models/mlp/config").status, 405);
  EXPECT_EQ(c.Request("GET", "/v2/models/nope/config").status, 404);
  EXPECT_EQ(c.Request("GET", "/v2/models/mlp/ready").status, 200);
  EXPECT_EQ(c.Request("GET", "/v2/models/mlp/versions/1/ready").status, 200);
  frontend_->StopAccepting();
  EXPECT_EQ(c.Request("GET", "/v2/health/ready").status, 400);
}

// Draining: once the server stops accepting, a kept-alive connection's next
// request is still read and answered (here refused: the frontend stopped
// too), with Connection: close; Drain() then closes the idle connections.
TEST_F(KserveServiceTest, AKeptAliveConnectionIsAnsweredWhileDrainingThenClosed) {
  HttpTestClient busy(server_->port()), idle(server_->port());
  EXPECT_EQ(busy.Request("POST", "/v2/models/mlp/infer", Infer("[1,1,2,2]", "[1,2,3,4]")).status, 200);
  EXPECT_EQ(idle.Request("GET", "/v2/health/live").status, 200);
  frontend_->StopAccepting();
  server_->StopAccepting();
  busy.SendRaw("GET /v2/health/ready HTTP/1.1\r\nHost: x\r\n\r\n");
  const std::string answer = busy.ReadUntilClosed();
  EXPECT_THAT(answer, HasSubstr("HTTP/1.1 400"));
  EXPECT_THAT(answer, HasSubstr("Connection: close"));
  EXPECT_TRUE(server_->Drain(kSecond));
  EXPECT_EQ(idle.ReadUntilClosed(), "") << "an idle connection is closed by Drain";
}

// The flag reaches the engine as the request's cancel flag: a request whose
// client has gone is withdrawn, not run.
TEST_F(KserveServiceTest, AnInferenceWhoseClientLeftIsWithdrawn) {
  HttpRequest r{"POST", "/v2/models/mlp/infer", Infer("[1,1,2,2]", "[1,2,3,4]"), {}};
  r.gone = std::make_shared<CancelFlag>();
  r.gone->Cancel();
  std::optional<HttpResponse> got;
  service_->Handle(std::move(r), [&](HttpResponse x) { got = std::move(x); });
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->status, 503);
  EXPECT_THAT(got->body, HasSubstr("was cancelled"));
  EXPECT_EQ(engine_->Counters()[0].cancelled, 1);
  EXPECT_EQ(engine_->Counters()[0].batched_requests, 0);
}

// A client that closes its connection while its request is handled: the
// request's `gone` flag is set (the engine then withdraws it, as for a
// cancelled gRPC call); a client that stays keeps its flag clear and its
// kept-alive connection reads its next request, and is closed once it has
// idled read_timeout.
TEST(HttpServerTest, AClientThatClosesItsConnectionSetsItsRequestsGoneFlag) {
  struct Holding : HttpHandler {
    void Handle(HttpRequest request, Respond respond) override {
      if (request.target == "/now") return respond(HttpResponse{200, "{}"});
      std::lock_guard<std::mutex> lock(mu);
      held.emplace_back(std::move(request), std::move(respond));
      arrived.notify_all();
    }
    HttpRequest& Await(size_t n) {
      std::unique_lock<std::mutex> lock(mu);
      EXPECT_TRUE(arrived.wait_for(lock, std::chrono::seconds(10), [&] { return held.size() >= n; }));
      return held[n - 1].first;
    }
    std::mutex mu;
    std::condition_variable arrived;
    std::deque<std::pair<HttpRequest, Respond>> held;
  } handler;
  std::unique_ptr<HttpServer> server =
      *HttpServer::Start(HttpServerOptions{.port = 0, .read_timeout = Millis(300)}, &handler);
  const std::string request = "POST /held HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n";
  std::shared_ptr<CancelFlag> gone;
  {
    HttpTestClient leaving(server->port());
    leaving.SendRaw(request);
    gone = handler.Await(1).gone;
    ASSERT_NE(gone, nullptr);
    EXPECT_FALSE(gone->Cancelled(0));
  }  // it closes its connection
  // Set on the server's I/O thread once it reads the close: polled, with a bound.
  for (int i = 0; i < 10000 && !gone->Cancelled(0); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_TRUE(gone->Cancelled(0)) << "the server noticed the client leave";
  handler.held[0].second(HttpResponse{200, "{}"});  // an answer nobody reads: dropped quietly

  HttpTestClient staying(server->port());
  staying.SendRaw(request);
  const std::shared_ptr<CancelFlag> kept = handler.Await(2).gone;
  handler.held[1].second(HttpResponse{200, R"({"answer":1})"});
  EXPECT_THAT(staying.ReadUntil(R"({"answer":1})"), HasSubstr("HTTP/1.1 200"));
  EXPECT_FALSE(kept->Cancelled(0));
  EXPECT_EQ(staying.Request("GET", "/now").status, 200) << "the next request on the connection";
  EXPECT_EQ(staying.ReadUntilClosed(), "") << "idle past read_timeout: closed";
  handler.held.clear();  // their responders hold the sessions, which must end before the server
  server->StopAccepting();
  server->Stop();

  // Turned off: no flag, and the connection is read only for the next request.
  server = *HttpServer::Start(HttpServerOptions{.port = 0, .cancel_on_disconnect = false}, &handler);
  HttpTestClient unwatched(server->port());
  unwatched.SendRaw(request);
  EXPECT_EQ(handler.Await(1).gone, nullptr);
  handler.held[0].second(HttpResponse{200, R"({"answer":2})"});
  EXPECT_THAT(unwatched.ReadUntil(R"({"answer":2})"), HasSubstr("HTTP/1.1 200"));
  handler.held.clear();
  server->StopAccepting();
  server->Stop();
}

// Triton's model repository extension over HTTP: index, unload, load and
// their errors (unloading while busy: inference_frontend_test.cc).
TEST_F(KserveServiceTest, ModelControlUnloadsLoadsAndIndexesModels) {
  HttpTestClient c(server_->port());
  EXPECT_THAT(c.Request("GET", "/v2").body, HasSubstr(R"("model_repository")"));
  testing::ClientResponse index = c.Request("POST", "/v2/repository/index");
  EXPECT_EQ(index.status, 200);
  EXPECT_EQ(index.body, R"([{"name":"mlp","version":"1","state":"READY"}])");
  testing::ClientResponse unload = c.Request("POST", "/v2/repository/models/mlp/unload", "");
  EXPECT_EQ(unload.status, 200) << unload.body;
  EXPECT_EQ(c.Request("POST", "/v2/repository/index", "{}").body,
            R"([{"name":"mlp","version":"1","state":"UNAVAILABLE","reason":"unloaded"}])");
  EXPECT_EQ(c.Request("POST", "/v2/repository/index", R"({"ready":true})").body, "[]");
  EXPECT_EQ(c.Request("GET", "/v2/models/mlp/ready").status, 400);
  EXPECT_EQ(c.Request("GET", "/v2/health/ready").status, 200) << "the server is still ready";
  testing::ClientResponse refused = c.Request("POST", "/v2/models/mlp/infer", Infer("[1,1,2,2]", "[1,2,3,4]"));
  EXPECT_EQ(refused.status, 503);
  EXPECT_THAT(refused.body, HasSubstr("is not loaded"));
  EXPECT_EQ(c.Request("POST", "/v2/repository/models/mlp/load", R"({"parameters":{}})").status, 200);
  EXPECT_EQ(c.Request("GET", "/v2/models/mlp/ready").status, 200);
  EXPECT_EQ(c.Request("POST", "/v2/models/mlp/infer", Infer("[1,1,2,2]", "[1,2,3,4]")).status, 200);
  EXPECT_EQ(c.Request("POST", "/v2/repository/models/mlp/unload", R"({"parameters":{"unload_dependents":true}})").status,
            200);
  EXPECT_EQ(c.Request("POST", "/v2/repository/models/mlp/load").status, 200);

  // Errors.
  testing::ClientResponse r = c.Request("POST", "/v2/repository/models/nope/load");
  EXPECT_EQ(r.status, 404);
  EXPECT_THAT(r.body, HasSubstr("unknown model 'nope'"));
  r = c.Request("POST", "/v2/repository/models/mlp/load", R"({"parameters":{"config":"{}"}})");
  EXPECT_EQ(r.status, 400);
  EXPECT_THAT(r.body, HasSubstr("restart the server"));
  r = c.Request("POST", "/v2/repository/models/mlp/unload", R"({"parameters":{"unload_dependents":"yes"}})");
  EXPECT_EQ(r.status, 400);
  EXPECT_THAT(r.body, HasSubstr("'unload_dependents' must be true or false"));
  EXPECT_THAT(c.Request("POST", "/v2/repository/models/mlp/load", R"({"parameters":{"colour":1}})").body,
              HasSubstr("unknown parameter 'colour'"));
  EXPECT_EQ(c.Request("POST", "/v2/repository/index", "[").status, 400);
  EXPECT_EQ(c.Request("POST", "/v2/repository/index", R"({"ready":1})").status, 400);
  EXPECT_EQ(c.Request("GET", "/v2/repository/index").status, 405);
  EXPECT_EQ(c.Request("POST", "/v2/repository/models/mlp/reload").status, 404);
  EXPECT_EQ(c.Request("GET", "/v2/models/mlp/ready").status, 200) << "errors change nothing";
}

// Model-less requests (INFaaS): variants of a task "toy" with different
// accuracies and latencies, over the fake engine; a specialist (a narrower
// task) and a model with another output are not variants.
class ModelLessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    struct Variant {
      const char* name;
      const char* task;
      double accuracy;
      double ms;  // ℓ(1)
      int64_t outputs;
      double peak_rps;
    };
    const std::vector<Variant> variants = {{"small", "toy", 0.80, 1, 3, 1000},
                                           {"medium", "toy", 0.90, 5, 3, 10},
                                           {"large", "toy", 0.95, 20, 3, 1000},
                                           {"special", "toy/classes=1", 0.99, 1, 3, 1000},
                                           {"wide", "toy", 0.99, 1, 4, 1000}};
    ClusterSpec spec;
    std::vector<ModelShape> shapes;
    std::vector<InferenceFrontend::ServedModel> served;
    for (const Variant& v : variants) {
      ModelConfig c;
      c.name = v.name;
      c.task = v.task;
      c.platform = Platform::kBuiltin;
      c.architecture = "mlp";
      c.max_batch_size = 8;
      c.accuracy = v.accuracy;
      c.inputs = {{"image", DataType::kFp32, {1, 2, 2}}};
      c.outputs = {{"logits", DataType::kFp32, {v.outputs}}};
      spec.models.push_back({v.name, *LatencyProfile::Linear(Micros(100), Millis(v.ms), 8), kSecond});
      shapes.push_back({4, v.outputs});
      served.push_back({c, 1, Millis(v.ms + 0.1), 0, v.peak_rps});
    }
    spec.gpus = 2;
    engine_ = std::make_unique<testing::FakeEngine>(spec, shapes, &clock_);
    frontend_ = std::make_unique<InferenceFrontend>(engine_.get(), served);
    service_ = std::make_unique<KserveService>(frontend_.get());
    server_ = *HttpServer::Start(HttpServerOptions{.port = 0}, service_.get());
    grpc_service_ = std::make_unique<KserveGrpcService>(frontend_.get());
    grpc_server_ = *GrpcServer::Start(GrpcServerOptions{.port = 0}, {grpc_service_.get()});
  }
  void TearDown() override {
    server_->StopAccepting();
    engine_->StopAccepting();
    grpc_server_->Shutdown(kSecond);
    server_->Stop();
  }
  // Asks task "toy" for an image with these requirements: {status, model, parameters}.
  struct Answer {
    int status;
    std::string model;
    bool meets = false;
    std::string note;
    std::string body;
  };
  Answer Ask(HttpTestClient& c, const std::string& parameters) {
    const testing::ClientResponse r = c.Request(
        "POST", "/v2/tasks/toy/infer",
        absl::StrCat(R"({"inputs":[{"name":"image","datatype":"FP32","shape":[1,1,2,2],"data":[1,2,3,4]}],)",
                     R"("parameters":)", parameters, "}"));
    Answer a{r.status, "", false, "", r.body};
    rapidjson::Document d;
    d.Parse(r.body.c_str());
    if (r.status == 200 && !d.HasParseError()) {
      a.model = d["model_name"].GetString();
      a.meets = d["parameters"]["tutti_meets_requirements"].GetBool();
      if (d["parameters"].HasMember("tutti_variant_note")) a.note = d["parameters"]["tutti_variant_note"].GetString();
      EXPECT_STREQ(d["parameters"]["tutti_task"].GetString(), "toy");
    }
    return a;
  }

  ManualClock clock_;
  std::unique_ptr<testing::FakeEngine> engine_;
  std::unique_ptr<InferenceFrontend> frontend_;
  std::unique_ptr<KserveService> service_;
  std::unique_ptr<HttpServer> server_;
  std::unique_ptr<KserveGrpcService> grpc_service_;
  std::unique_ptr<GrpcServer> grpc_server_;
};

// gRPC: no model_name, the task in the "task" parameter.
TEST_F(ModelLessTest, OverGrpcTheTaskParameterNamesTheTask) {
  auto stub = inference::GRPCInferenceService::NewStub(
      grpc::CreateChannel(absl::StrCat("127.0.0.1:", grpc_server_->port()), grpc::InsecureChannelCredentials()));
  auto request = [](const std::string& model, const std::string& task, double accuracy, double objective_ms) {
    inference::ModelInferRequest r;
    r.set_model_name(model);
    if (!task.empty()) (*r.mutable_parameters())["task"].set_string_param(task);
    if (accuracy >= 0) (*r.mutable_parameters())["accuracy"].set_double_param(accuracy);
    (*r.mutable_parameters())["latency_objective_ms"].set_double_param(objective_ms);
    auto* in = r.add_inputs();
    in->set_name("image");
    in->set_datatype("FP32");
    for (int64_t d : {1, 1, 2, 2}) in->add_shape(d);
    for (float v : {1.0f, 2.0f, 3.0f, 4.0f}) in->mutable_contents()->add_fp32_contents(v);
    return r;
  };
  auto infer = [&](const inference::ModelInferRequest& r, inference::ModelInferResponse* out) {
    grpc::ClientContext context;
    return stub->ModelInfer(&context, r, out);
  };
  inference::ModelInferResponse out;
  ASSERT_TRUE(infer(request("", "toy", 0.85, 10), &out).ok());
  EXPECT_EQ(out.model_name(), "medium");
  EXPECT_EQ(out.parameters().at("tutti_task").string_param(), "toy");
  EXPECT_TRUE(out.parameters().at("tutti_meets_requirements").bool_param());
  EXPECT_FALSE(out.parameters().contains("tutti_variant_note"));
  out.Clear();
  ASSERT_TRUE(infer(request("", "toy", 0.99, 30), &out).ok());
  EXPECT_EQ(out.model_name(), "large");
  EXPECT_FALSE(out.parameters().at("tutti_meets_requirements").bool_param());
  EXPECT_THAT(out.parameters().at("tutti_variant_note").string_param(), HasSubstr("closest: large"));
  // A named model is served as named, with no task parameters.
  out.Clear();
  ASSERT_TRUE(infer(request("small", "", -1, 10), &out).ok());
  EXPECT_EQ(out.model_name(), "small");
  EXPECT_FALSE(out.parameters().contains("tutti_task"));
  // Errors.
  grpc::Status s = infer(request("small", "toy", 0.8, 10), &out);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("not both"));
  s = infer(request("", "nope", 0.8, 10), &out);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(s.error_message(), HasSubstr("no loaded model serves task"));
  s = infer(request("", "toy", 1.5, 10), &out);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("parameter 'accuracy' must be a number from 0 to 1"));
  inference::ModelInferRequest bad = request("", "", 0.8, 10);
  (*bad.mutable_parameters())["task"].set_int64_param(3);
  s = infer(bad, &out);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("parameter 'task' must be a string"));
}

TEST_F(ModelLessTest, TheAnswerNamesTheVariantThatMetTheRequirements) {
  HttpTestClient c(server_->port());
  testing::ClientResponse list = c.Request("GET", "/v2/tasks/toy");
  EXPECT_EQ(list.status, 200);
  EXPECT_THAT(list.body, HasSubstr(R"("task":"toy","variants":[{"name":"small","accuracy":0.8,"latency_ms":1.1,)"
                                   R"("state":"active","utilisation":0.0,"peak_rps":1000.0})"));
  EXPECT_THAT(list.body, HasSubstr(R"("name":"large")"));
  EXPECT_THAT(list.body, ::testing::Not(HasSubstr("special"))) << "a narrower task";
  EXPECT_THAT(list.body, ::testing::Not(HasSubstr("wide"))) << "another output";

  Answer a = Ask(c, R"({"accuracy":0.85,"latency_objective_ms":10})");
  ASSERT_EQ(a.status, 200) << a.body;
  EXPECT_EQ(a.model, "medium");
  EXPECT_TRUE(a.meets);
  EXPECT_EQ(a.note, "");
  EXPECT_EQ(Ask(c, R"({"accuracy":0.94,"latency_objective_ms":30})").model, "large");
  EXPECT_EQ(Ask(c, R"({"accuracy":0.8,"latency_objective_ms":2})").model, "small");
  EXPECT_EQ(Ask(c, R"({"latency_objective_ms":50})").model, "small") << "no accuracy asked: the first that meets";
  // Nothing is that accurate: the most accurate within the objective, told so.
  a = Ask(c, R"({"accuracy":0.99,"latency_objective_ms":30})");
  ASSERT_EQ(a.status, 200);
  EXPECT_EQ(a.model, "large");
  EXPECT_FALSE(a.meets);
  EXPECT_THAT(a.note, HasSubstr("no variant meets accuracy >= 0.99 within 30 ms; closest: large"));
  // An unloaded variant is not chosen.
  frontend_->Unload(*frontend_->FindModel("medium"), [](absl::Status) {});
  a = Ask(c, R"({"accuracy":0.85,"latency_objective_ms":10})");
  EXPECT_EQ(a.model, "small");
  EXPECT_FALSE(a.meets);

  EXPECT_EQ(c.Request("POST", "/v2/tasks/nope/infer", "{}").status, 404);
  EXPECT_THAT(Ask(c, R"({"accuracy":1.5})").body, HasSubstr("parameter 'accuracy' must be a number from 0 to 1"));
  EXPECT_EQ(c.Request("GET", "/v2/tasks/toy/infer").status, 405);
  EXPECT_EQ(c.Request("POST", "/v2/tasks/toy").status, 405);
}

// INFaaS's monitoring: a variant given more than its peak over a window
// is Overloaded, one whose batches run 1.5× its profile Interfered; the
// selection passes over either while another meets the requirements, and
// takes it again once a window shows it recovered.
TEST_F(ModelLessTest, OverloadedAndInterferedVariantsArePassedOverUntilTheyRecover) {
  HttpTestClient c(server_->port());
  const std::string medium_and_large = R"({"accuracy":0.85,"latency_objective_ms":30})";
  const auto state_of_medium = [&] {
    rapidjson::Document d;
    d.Parse(c.Request("GET", "/v2/tasks/toy").body.c_str());
    for (const auto& v : d["variants"].GetArray()) {
      if (std::string(v["name"].GetString()) == "medium") return std::string(v["state"].GetString());
    }
    return std::string("missing");
  };
  EXPECT_EQ(Ask(c, medium_and_large).model, "medium") << "both idle: the first";
  EXPECT_EQ(state_of_medium(), "active");
  // 30 requests in 2 s: 15 r/s given to a variant whose peak is 10.
  for (int i = 0; i < 29; ++i) {
    ASSERT_EQ(c.Request("POST", "/v2/models/medium/infer",
                        R"({"inputs":[{"name":"image","datatype":"FP32","shape":[1,1,2,2],"data":[1,2,3,4]}]})")
                  .status,
              200);
  }
  clock_.AdvanceBy(2 * kSecond);
  EXPECT_EQ(state_of_medium(), "overloaded");
  const std::string metrics = c.Request("GET", "/metrics").body;
  EXPECT_THAT(metrics, HasSubstr(R"(tutti_variant_state{model="medium",task="toy",state="overloaded"} 1)"));
  EXPECT_THAT(metrics, HasSubstr(R"(tutti_variant_state{model="medium",task="toy",state="active"} 0)"));
  EXPECT_THAT(metrics, HasSubstr(R"(tutti_variant_utilisation{model="medium",task="toy"} 1.5000)"));
  Answer a = Ask(c, medium_and_large);
  EXPECT_EQ(a.model, "large");
  EXPECT_TRUE(a.meets);
  EXPECT_EQ(Ask(c, R"({"accuracy":0.85,"latency_objective_ms":10})").model, "medium")
      << "the only one that meets the requirements, overloaded or not";
  clock_.AdvanceBy(2 * kSecond);  // 0.5 r/s over this window
  EXPECT_EQ(state_of_medium(), "active");
  clock_.AdvanceBy(2 * kSecond);  // an idle window: both at 0, the first wins the tie
  EXPECT_EQ(Ask(c, medium_and_large).model, "medium");

  engine_->SetComputeRatio(*frontend_->FindModel("medium"), 1.5);
  EXPECT_EQ(Ask(c, medium_and_large).model, "medium") << "seen at the next window, not before";
  clock_.AdvanceBy(2 * kSecond);
  EXPECT_EQ(state_of_medium(), "interfered");
  EXPECT_EQ(Ask(c, medium_and_large).model, "large");
  engine_->SetComputeRatio(*frontend_->FindModel("medium"), 1.15);
  clock_.AdvanceBy(2 * kSecond);
  EXPECT_EQ(state_of_medium(), "interfered") << "hysteresis: 1.15 is not 0.1 below the 1.2 that entered it";
  engine_->SetComputeRatio(*frontend_->FindModel("medium"), 1.0);
  clock_.AdvanceBy(2 * kSecond);
  EXPECT_EQ(state_of_medium(), "active");
  EXPECT_EQ(Ask(c, medium_and_large).model, "medium");
}

TEST_F(KserveServiceTest, InferReturnsOneOutputRowPerItemMarkedEmulated) {
  HttpTestClient c(server_->port());
  testing::ClientResponse r = c.Request("POST", "/v2/models/mlp/infer", Infer("[2,1,2,2]", "[1,2,3,4,5,6,7,8]"));
  ASSERT_EQ(r.status, 200) << r.body;
  rapidjson::Document d;
  d.Parse(r.body.c_str());
  EXPECT_STREQ(d["id"].GetString(), "q");
  EXPECT_TRUE(d["parameters"]["tutti_emulated"].GetBool());
  EXPECT_EQ(d["outputs"][0]["shape"][0].GetInt(), 2);
  // Row by row, each item's own answer: (j + 1) × the sum of its inputs.
  std::vector<double> data;
  for (const auto& x : d["outputs"][0]["data"].GetArray()) data.push_back(x.GetDouble());
  EXPECT_THAT(data, ElementsAre(10, 20, 30, 26, 52, 78));
  // The same connection serves again (keep-alive), with a version in the path.
  EXPECT_EQ(c.Request("POST", "/v2/models/mlp/versions/1/infer", Infer("[1,1,2,2]", "[1,2,3,4]")).status, 200);
  testing::ClientResponse stats = c.Request("GET", "/v2/models/mlp/stats");
  EXPECT_THAT(stats.body, HasSubstr(R"("success":3)"));  // Tutti's figures, per item
  // Triton's, per request.
  EXPECT_THAT(stats.body, HasSubstr(R"("inference_count":3,)"));
  EXPECT_THAT(stats.body, HasSubstr(R"("inference_stats":{"success":{"count":2,)"));
  testing::ClientResponse all = c.Request("GET", "/v2/models/stats");
  EXPECT_EQ(all.status, 200);
  EXPECT_THAT(all.body, HasSubstr(R"({"model_stats":[{"name":"mlp","version":"1",)"));
}

TEST_F(KserveServiceTest, BadRequestsGetTheProtocolsErrorsAndTheServerKeepsServing) {
  HttpTestClient c(server_->port());
  auto expect_error = [&](const std::string& method, const std::string& target, const std::string& body,
                          int status, const std::string& message) {
    testing::ClientResponse r = c.Request(method, target, body);
    EXPECT_EQ(r.status, status) << target << " " << r.body;
    rapidjson::Document d;
    d.Parse(r.body.c_str());
    ASSERT_TRUE(d.IsObject() && d.HasMember("error")) << r.body;
    EXPECT_THAT(d["error"].GetString(), HasSubstr(message));
  };
  expect_error("POST", "/v2/models/mlp/infer", R"({"inputs": [)", 400, "malformed JSON");
  expect_error("POST", "/v2/models/mlp/infer",
               R"({"inputs":[{"name":"image","datatype":"INT32","shape":[1,1,2,2],"data":[1,2,3,4]}]})", 400,
               "datatype INT32");
  expect_error("POST", "/v2/models/mlp/infer", Infer("[1,2,2]", "[1,2,3,4]"), 400, "expected [N, 1, 2, 2]");
  expect_error("POST", "/v2/models/mlp/infer", R"({"inputs":[]})", 400, "exactly one input");
  expect_error("POST", "/v2/models/vgg/infer", Infer("[1,1,2,2]", "[1,2,3,4]"), 404, "unknown model 'vgg'");
  expect_error("POST", "/v2/models/mlp/versions/7/infer", Infer("[1,1,2,2]", "[1,2,3,4]"), 404,
               "has no version '7'");
  expect_error("GET", "/v2/models/mlp/infer", "", 405, "use POST");
  expect_error("GET", "/v3/anything", "", 404, "unknown path");
  // One spelling per route: empty path segments are refused, not read as the route they resemble.
  for (const char* path : {"//v2/models/mlp/infer", "/v2/models//mlp/infer", "/v2/models/mlp/infer/", "//metrics"}) {
    expect_error("POST", path, Infer("[1,1,2,2]", "[1,2,3,4]"), 404, "empty path segment");
  }
  // ℓ(1) = 1.1 ms: an objective of 0.5 ms can never be met; it is answered, not dropped silently.
  expect_error("POST", "/v2/models/mlp/infer",
               Infer("[1,1,2,2]", "[1,2,3,4]", R"("parameters":{"latency_objective_ms":0.5},)"), 503,
               "cannot be met");
  EXPECT_EQ(c.Request("POST", "/v2/models/mlp/infer", Infer("[1,1,2,2]", "[1,2,3,4]")).status, 200);
  testing::ClientResponse metrics = c.Request("GET", "/metrics");
  EXPECT_THAT(metrics.content_type, HasSubstr("text/plain"));
  EXPECT_THAT(metrics.body, HasSubstr(R"(tutti_requests_total{model="mlp",outcome="rejected"} 4)"));
  EXPECT_THAT(metrics.body, HasSubstr(R"(tutti_requests_total{model="mlp",outcome="dropped"} 1)"));
}

TEST_F(KserveServiceTest, BinaryTensorsInAndOutAndALyingHeaderLength) {
  HttpTestClient c(server_->port());
  const std::string json =
      R"({"inputs":[{"name":"image","datatype":"FP32","shape":[1,1,2,2],"parameters":{"binary_data_size":16}}],)"
      R"("parameters":{"binary_data_output":true}})";
  const std::vector<float> values = {1, 2, 3, 4};
  const std::string body = json + std::string(reinterpret_cast<const char*>(values.data()), 16);
  testing::ClientResponse r = c.Request("POST", "/v2/models/mlp/infer", body,
                                        {{"Inference-Header-Content-Length", std::to_string(json.size())}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.content_type, "application/octet-stream");
  size_t json_length = 0;
  ASSERT_TRUE(absl::SimpleAtoi(r.json_length, &json_length)) << r.json_length;
  rapidjson::Document d;
  d.Parse(r.body.data(), json_length);
  ASSERT_FALSE(d.HasParseError());
  EXPECT_EQ(d["outputs"][0]["parameters"]["binary_data_size"].GetInt(), 12);
  ASSERT_EQ(r.body.size(), json_length + 12);  // three FP32 values: 10, 20, 30
  std::vector<float> out(3);
  std::memcpy(out.data(), r.body.data() + json_length, 12);
  EXPECT_THAT(out, ElementsAre(10, 20, 30));

  for (const std::string& lie : {std::to_string(body.size() + 100), std::string("12abc"), std::string("5")}) {
    testing::ClientResponse bad =
        c.Request("POST", "/v2/models/mlp/infer", body, {{"Inference-Header-Content-Length", lie}});
    EXPECT_EQ(bad.status, 400) << lie << ": " << bad.body;
    EXPECT_THAT(bad.body, HasSubstr("error"));
  }
  EXPECT_EQ(c.Request("POST", "/v2/models/mlp/infer", Infer("[1,1,2,2]", "[1,2,3,4]")).status, 200);
}

TEST_F(KserveServiceTest, MetricsHaveHistogramsAndBusyFractions) {
  HttpTestClient c(server_->port());
  for (int i = 0; i < 5; ++i) {
    ASSERT_EQ(c.Request("POST", "/v2/models/mlp/infer", Infer("[1,1,2,2]", "[1,2,3,4]")).status, 200);
  }
  const std::string m = c.Request("GET", "/metrics").body;
  EXPECT_THAT(m, HasSubstr(R"(tutti_queue_duration_seconds_count{model="mlp"} 5)"));
  EXPECT_THAT(m, HasSubstr(R"(tutti_compute_duration_seconds_bucket{model="mlp",le="+Inf"} 5)"));
  // One at a time: every batch has size 1, and ℓ(1) = 1.1 ms lies in (1 ms, 2.5 ms].
  EXPECT_THAT(m, HasSubstr(R"(tutti_request_batch_size_bucket{model="mlp",le="1"} 5)"));
  EXPECT_THAT(m, HasSubstr(R"(tutti_compute_duration_seconds_bucket{model="mlp",le="0.001"} 0)"));
  EXPECT_THAT(m, HasSubstr(R"(tutti_compute_duration_seconds_bucket{model="mlp",le="0.0025"} 5)"));
  EXPECT_THAT(m, HasSubstr(R"(tutti_executor_busy_fraction{executor="1"})"));
}

TEST_F(KserveServiceTest, OversizedBodyIsRefusedWith413) {
  HttpTestClient c(server_->port());
  std::vector<std::string> many(2000, "1.0");
  testing::ClientResponse r =
      c.Request("POST", "/v2/models/mlp/infer", Infer("[500,1,2,2]", "[" + absl::StrJoin(many, ",") + "]"));
  EXPECT_EQ(r.status, 413);
  EXPECT_THAT(r.body, HasSubstr("exceeds the limit of 4096 bytes"));
  HttpTestClient again(server_->port());
  EXPECT_EQ(again.Request("GET", "/v2/health/live").status, 200);
}

TEST_F(KserveServiceTest, SlowHalfSentAndAbandonedRequestsDoNotHoldUpOthers) {
  HttpTestClient slow(server_->port());
  slow.SendRaw("POST /v2/models/mlp/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"inp");
  HttpTestClient quitter(server_->port());
  quitter.SendRaw("POST /v2/models/mlp/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{");
  quitter.Close();
  HttpTestClient garbage(server_->port());
  garbage.SendRaw("NOT HTTP AT ALL\r\n\r\n");
  EXPECT_THAT(garbage.ReadUntilClosed(), HasSubstr("400"));
  // Meanwhile a well-behaved client is served at once.
  HttpTestClient good(server_->port());
  EXPECT_EQ(good.Request("POST", "/v2/models/mlp/infer", Infer("[1,1,2,2]", "[1,2,3,4]")).status, 200);
  // The half-sent request is cut off by the read timeout (500 ms here).
  EXPECT_EQ(slow.ReadUntilClosed(), "");
  // And the server serves on — on a new connection: `good` has been idle
  // about as long as `slow`, so the same timeout may have closed it too.
  EXPECT_EQ(HttpTestClient(server_->port()).Request("GET", "/v2/health/live").status, 200);
}

}  // namespace
}  // namespace tutti
