// A stateful model served end to end: sequences over HTTP and gRPC, their
// protocol errors, and states kept apart while batched together.
#include <grpcpp/grpcpp.h>

#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rapidjson/document.h"
#include "tutti/core/real_clock.h"
#include "tutti/models/trainer.h"
#include "tutti/proto/grpc_predict_v2.grpc.pb.h"
#include "tutti/repository/model_repository.h"
#include "tutti/server/server.h"
#include "tutti/testing/http_test_client.h"
#include "tutti/testing/builtin_fixture.h"
#include "tutti/testing/temp_dir.h"

namespace tutti {
namespace {

using ::testing::HasSubstr;
using ::tutti::testing::HttpTestClient;
using ::tutti::testing::TempDir;

class StatefulServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // gru_rows with seeded random weights: a real stateful model, untrained.
    ModelConfig c = BuiltinModelConfig("gru", "gru_rows", 8);
    c.profiles["cpu"] = *LatencyProfile::Linear(30 * kMicrosecond, 200 * kMicrosecond, 8);
    ASSERT_TRUE(testing::WriteSeededBuiltinModel(dir_.path() + "/gru/1", c).ok());
    absl::StatusOr<ModelRepository> repo = ModelRepository::Open(dir_.path());
    ASSERT_TRUE(repo.ok()) << repo.status();
    repo_ = std::make_unique<ModelRepository>(*std::move(repo));
    absl::StatusOr<ServerConfig> config = ParseServerConfig("http: {port: 0}\ngrpc: {port: 0}\npolicy: eager\n");
    ASSERT_TRUE(config.ok());
    config = ResolveServerConfig(*config, *repo_);
    ASSERT_TRUE(config.ok()) << config.status();
    absl::StatusOr<std::unique_ptr<Server>> server = Server::Start(*repo_, *config, &clock_);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
  }

  // POSTs one step (4 rows of value `x`) with these parameters.
  testing::ClientResponse Step(const std::string& params, float x = 0.5f, int batch = 1) {
    std::vector<float> v(batch * 4 * 28, x);
    return HttpTestClient(server_->port())
        .Request("POST", "/v2/models/gru/infer",
                 absl::StrCat(R"({"inputs":[{"name":"rows","datatype":"FP32","shape":[)", batch, R"(,4,28],"data":[)",
                              absl::StrJoin(v, ","), "]}]", params.empty() ? "" : ",\"parameters\":" + params, "}"));
  }
  static std::vector<double> Logits(const testing::ClientResponse& r) {
    rapidjson::Document d;
    d.Parse(r.body.c_str());
    std::vector<double> out;
    for (const auto& v : d["outputs"][0]["data"].GetArray()) out.push_back(v.GetDouble());
    return out;
  }

  TempDir dir_;
  RealClock clock_;
  std::unique_ptr<ModelRepository> repo_;
  std::unique_ptr<Server> server_;
};

TEST_F(StatefulServerTest, SequenceProtocolErrorsAreClear) {
  EXPECT_THAT(server_->Describe(), HasSubstr("a backup executor stands by; stateful models' states replicated: nspb"));
  EXPECT_THAT(HttpTestClient(server_->port()).Request("GET", "/v2").body, HasSubstr(R"("sequence")"));
  testing::ClientResponse r = Step("");
  EXPECT_EQ(r.status, 400);
  EXPECT_THAT(r.body, HasSubstr("model 'gru' is stateful: each request needs a sequence_id"));
  r = Step(R"({"sequence_id":5})");
  EXPECT_EQ(r.status, 400);
  EXPECT_THAT(r.body, HasSubstr("sequence 5 of model 'gru' is not in progress"));
  EXPECT_EQ(Step(R"({"sequence_id":5,"sequence_start":true})").status, 200);
  r = Step(R"({"sequence_id":5,"sequence_start":true})");
  EXPECT_EQ(r.status, 400);
  EXPECT_THAT(r.body, HasSubstr("already in progress"));
  r = Step(R"({"sequence_id":5})", 0.5f, 2);
  EXPECT_EQ(r.status, 400);
  EXPECT_THAT(r.body, HasSubstr("a request of a sequence carries one item"));
  r = Step(R"({"sequence_id":-3})");
  EXPECT_EQ(r.status, 400);
  EXPECT_THAT(r.body, HasSubstr("'sequence_id' must be an unsigned integer"));
  EXPECT_EQ(Step(R"({"sequence_id":5,"sequence_end":true})").status, 200);
  r = Step(R"({"sequence_id":5})");
  EXPECT_EQ(r.status, 400);
  EXPECT_THAT(r.body, HasSubstr("is not in progress"));
  // The replication's figures are in /metrics.
  const std::string metrics = HttpTestClient(server_->port()).Request("GET", "/metrics").body;
  EXPECT_THAT(metrics, HasSubstr(R"(tutti_replication_backup_ready{slot="0",mode="nspb"} 1)"));
  EXPECT_THAT(metrics, HasSubstr(R"(tutti_replication_failovers_total{slot="0",mode="nspb"} 0)"));
  EXPECT_THAT(metrics, HasSubstr(R"(tutti_replication_states{slot="0",mode="nspb"} 0)"));  // sequence 5 ended
}

TEST_F(StatefulServerTest, SequencesKeepTheirOwnStatesWhetherInterleavedOrAlone) {
  // Two sequences in step, then the first's inputs alone: the same answers.
  std::vector<std::vector<double>> together, alone;
  for (int step = 0; step < 4; ++step) {
    const std::string start = step == 0 ? R"(,"sequence_start":true)" : "";
    testing::ClientResponse a = Step(absl::StrCat(R"({"sequence_id":"a")", start, "}"), 0.1f * step);
    testing::ClientResponse b = Step(absl::StrCat(R"({"sequence_id":"b")", start, "}"), 0.9f);
    ASSERT_EQ(a.status, 200) << a.body;
    ASSERT_EQ(b.status, 200) << b.body;
    together.push_back(Logits(a));
  }
  for (int step = 0; step < 4; ++step) {
    const std::string start = step == 0 ? R"(,"sequence_start":true)" : "";
    testing::ClientResponse c = Step(absl::StrCat(R"({"sequence_id":"c")", start, "}"), 0.1f * step);
    ASSERT_EQ(c.status, 200) << c.body;
    alone.push_back(Logits(c));
  }
  ASSERT_EQ(together.size(), alone.size());
  for (size_t s = 0; s < alone.size(); ++s) {
    ASSERT_EQ(together[s].size(), 10u);
    for (size_t k = 0; k < 10; ++k) EXPECT_NEAR(together[s][k], alone[s][k], 1e-5) << "step " << s;
  }
  EXPECT_NE(together[3], together[1]);  // the state moved on

  // gRPC takes the same parameters.
  auto stub = inference::GRPCInferenceService::NewStub(grpc::CreateChannel(
      absl::StrCat("127.0.0.1:", server_->grpc_port()), grpc::InsecureChannelCredentials()));
  inference::ModelInferRequest request;
  request.set_model_name("gru");
  (*request.mutable_parameters())["sequence_id"].set_uint64_param(77);
  (*request.mutable_parameters())["sequence_start"].set_bool_param(true);
  auto* in = request.add_inputs();
  in->set_name("rows");
  in->set_datatype("FP32");
  for (int64_t d : {1, 4, 28}) in->add_shape(d);
  for (int i = 0; i < 4 * 28; ++i) in->mutable_contents()->add_fp32_contents(0);
  inference::ModelInferResponse response;
  grpc::ClientContext ctx;
  grpc::Status s = stub->ModelInfer(&ctx, request, &response);
  ASSERT_TRUE(s.ok()) << s.error_message();
  request.mutable_parameters()->erase("sequence_start");
  (*request.mutable_parameters())["sequence_id"].set_uint64_param(78);
  grpc::ClientContext ctx2;
  s = stub->ModelInfer(&ctx2, request, &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("sequence 78 of model 'gru' is not in progress"));
}

// Triton's sequence clients send a sequence's requests on one stream
// without waiting for answers: they run in the order sent, so the stream's
// answers are the ones the same sequence gets request by request.
TEST_F(StatefulServerTest, ASequenceSentOnOneStreamRunsInOrder) {
  std::vector<std::vector<double>> one_by_one;
  for (int step = 0; step < 4; ++step) {
    const std::string start = step == 0 ? R"(,"sequence_start":true)" : "";
    testing::ClientResponse r = Step(absl::StrCat(R"({"sequence_id":"h")", start, "}"), 0.1f * step);
    ASSERT_EQ(r.status, 200) << r.body;
    one_by_one.push_back(Logits(r));
  }
  auto stub = inference::GRPCInferenceService::NewStub(grpc::CreateChannel(
      absl::StrCat("127.0.0.1:", server_->grpc_port()), grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  auto stream = stub->ModelStreamInfer(&context);
  for (int step = 0; step < 4; ++step) {
    inference::ModelInferRequest request;
    request.set_model_name("gru");
    request.set_id(absl::StrCat(step));
    (*request.mutable_parameters())["sequence_id"].set_uint64_param(90);
    if (step == 0) (*request.mutable_parameters())["sequence_start"].set_bool_param(true);
    if (step == 3) (*request.mutable_parameters())["sequence_end"].set_bool_param(true);
    auto* in = request.add_inputs();
    in->set_name("rows");
    in->set_datatype("FP32");
    for (int64_t d : {1, 4, 28}) in->add_shape(d);
    for (int i = 0; i < 4 * 28; ++i) in->mutable_contents()->add_fp32_contents(0.1f * step);
    ASSERT_TRUE(stream->Write(request));
  }
  ASSERT_TRUE(stream->WritesDone());
  std::vector<inference::ModelStreamInferResponse> answers;
  inference::ModelStreamInferResponse a;
  while (stream->Read(&a)) answers.push_back(a);
  ASSERT_TRUE(stream->Finish().ok());
  ASSERT_EQ(answers.size(), 4u);
  for (int step = 0; step < 4; ++step) {
    const inference::ModelStreamInferResponse& r = answers[step];
    ASSERT_EQ(r.error_message(), "") << "step " << step;
    EXPECT_EQ(r.infer_response().id(), absl::StrCat(step));
    ASSERT_EQ(r.infer_response().raw_output_contents_size(), 1);
    std::vector<float> logits(10);
    ASSERT_EQ(r.infer_response().raw_output_contents(0).size(), logits.size() * sizeof(float));
    std::memcpy(logits.data(), r.infer_response().raw_output_contents(0).data(), logits.size() * sizeof(float));
    for (size_t k = 0; k < logits.size(); ++k) EXPECT_NEAR(logits[k], one_by_one[step][k], 1e-5) << "step " << step;
  }
}

}  // namespace
}  // namespace tutti
