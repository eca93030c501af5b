#include "tutti/frontend/kserve_grpc_service.h"

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <cstring>
#include <future>
#include <optional>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tutti/testing/frontend_fixture.h"
#include "tutti/frontend/grpc_server.h"
#include "tutti/codec/kserve_json.h"

namespace tutti {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// The fake engine's "mlp" (testing/frontend_fixture.h) served over gRPC on a free port.
class KserveGrpcServiceTest : public testing::FakeEngineFrontendTest {
 protected:
  void SetUp() override {
    FakeEngineFrontendTest::SetUp();
    service_ = std::make_unique<KserveGrpcService>(frontend_.get());
    server_ = *GrpcServer::Start(GrpcServerOptions{.port = 0}, {service_.get()});
    stub_ = inference::GRPCInferenceService::NewStub(
        grpc::CreateChannel(absl::StrCat("127.0.0.1:", server_->port()), grpc::InsecureChannelCredentials()));
  }
  void TearDown() override {
    StopEngine();
    server_->Shutdown(kSecond);
  }

  // A request for `batch` items of "image" [batch, 1, 2, 2] with values 0, 1, ….
  static inference::ModelInferRequest Request(int batch) {
    inference::ModelInferRequest r;
    r.set_model_name("mlp");
    r.set_id("q");
    auto* in = r.add_inputs();
    in->set_name("image");
    in->set_datatype("FP32");
    for (int64_t d : {static_cast<int64_t>(batch), int64_t{1}, int64_t{2}, int64_t{2}}) in->add_shape(d);
    for (int i = 0; i < 4 * batch; ++i) in->mutable_contents()->add_fp32_contents(static_cast<float>(i));
    return r;
  }
  grpc::Status Infer(const inference::ModelInferRequest& request, inference::ModelInferResponse* response) {
    grpc::ClientContext context;
    return stub_->ModelInfer(&context, request, response);
  }
  // The status of a request that must fail.
  grpc::Status InferError(const inference::ModelInferRequest& request) {
    inference::ModelInferResponse response;
    return Infer(request, &response);
  }

  std::unique_ptr<KserveGrpcService> service_;
  std::unique_ptr<GrpcServer> server_;
  std::unique_ptr<inference::GRPCInferenceService::Stub> stub_;
};

TEST_F(KserveGrpcServiceTest, HealthAndMetadata) {
  {
    grpc::ClientContext c;
    inference::ServerLiveResponse r;
    ASSERT_TRUE(stub_->ServerLive(&c, {}, &r).ok());
    EXPECT_TRUE(r.live());
  }
  auto server_ready = [&] {
    grpc::ClientContext c;
    inference::ServerReadyResponse r;
    EXPECT_TRUE(stub_->ServerReady(&c, {}, &r).ok());
    return r.ready();
  };
  EXPECT_TRUE(server_ready());
  auto model_ready = [&](const std::string& name, const std::string& version, bool* ready) {
    grpc::ClientContext c;
    inference::ModelReadyRequest q;
    q.set_name(name);
    q.set_version(version);
    inference::ModelReadyResponse r;
    grpc::Status s = stub_->ModelReady(&c, q, &r);
    *ready = r.ready();
    return s.error_code();
  };
  bool ready = false;
  EXPECT_EQ(model_ready("mlp", "", &ready), grpc::StatusCode::OK);
  EXPECT_TRUE(ready);
  EXPECT_EQ(model_ready("mlp", "1", &ready), grpc::StatusCode::OK);
  EXPECT_EQ(model_ready("mlp", "2", &ready), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(model_ready("resnet", "", &ready), grpc::StatusCode::NOT_FOUND);
  {
    grpc::ClientContext c;
    inference::ServerMetadataResponse r;
    ASSERT_TRUE(stub_->ServerMetadata(&c, {}, &r).ok());
    EXPECT_EQ(r.name(), "tutti");
  }
  {
    grpc::ClientContext c;
    inference::ModelMetadataRequest q;
    q.set_name("mlp");
    inference::ModelMetadataResponse r;
    ASSERT_TRUE(stub_->ModelMetadata(&c, q, &r).ok());
    EXPECT_EQ(r.platform(), "tutti_builtin");
    EXPECT_THAT(r.versions(), ElementsAre("1"));
    ASSERT_EQ(r.inputs_size(), 1);
    EXPECT_EQ(r.inputs(0).name(), "image");
    EXPECT_EQ(r.inputs(0).datatype(), "FP32");
    EXPECT_THAT(r.inputs(0).shape(), ElementsAre(-1, 1, 2, 2));
    EXPECT_THAT(r.outputs(0).shape(), ElementsAre(-1, 3));
  }
  frontend_->StopAccepting();
  EXPECT_FALSE(server_ready());
  EXPECT_EQ(model_ready("mlp", "", &ready), grpc::StatusCode::OK);
  EXPECT_FALSE(ready);
}

// Triton's RepositoryIndex / RepositoryModelLoad / RepositoryModelUnload.
TEST_F(KserveGrpcServiceTest, ModelControlUnloadsLoadsAndIndexesModels) {
  auto index = [&](bool ready_only) {
    grpc::ClientContext c;
    inference::RepositoryIndexRequest q;
    q.set_ready(ready_only);
    inference::RepositoryIndexResponse r;
    EXPECT_TRUE(stub_->RepositoryIndex(&c, q, &r).ok());
    return r;
  };
  auto control = [&](bool load, const std::string& model, const std::string& param = "",
                     std::optional<inference::ModelRepositoryParameter> value = std::nullopt) {
    grpc::ClientContext c;
    if (load) {
      inference::RepositoryModelLoadRequest q;
      q.set_model_name(model);
      if (value) (*q.mutable_parameters())[param] = *value;
      inference::RepositoryModelLoadResponse r;
      return stub_->RepositoryModelLoad(&c, q, &r);
    }
    inference::RepositoryModelUnloadRequest q;
    q.set_model_name(model);
    if (value) (*q.mutable_parameters())[param] = *value;
    inference::RepositoryModelUnloadResponse r;
    return stub_->RepositoryModelUnload(&c, q, &r);
  };
  EXPECT_EQ(index(false).models(0).state(), "READY");
  inference::ModelRepositoryParameter dependents;
  dependents.set_bool_param(false);
  ASSERT_TRUE(control(false, "mlp", "unload_dependents", dependents).ok());
  inference::RepositoryIndexResponse after = index(false);
  ASSERT_EQ(after.models_size(), 1);
  EXPECT_EQ(after.models(0).state(), "UNAVAILABLE");
  EXPECT_EQ(after.models(0).reason(), "unloaded");
  EXPECT_EQ(index(true).models_size(), 0);
  grpc::Status refused = InferError(Request(1));
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_THAT(refused.error_message(), HasSubstr("is not loaded"));
  {
    grpc::ClientContext c;
    inference::ModelReadyRequest q;
    q.set_name("mlp");
    inference::ModelReadyResponse r;
    ASSERT_TRUE(stub_->ModelReady(&c, q, &r).ok());
    EXPECT_FALSE(r.ready());
  }
  ASSERT_TRUE(control(true, "mlp").ok());
  inference::ModelInferResponse answer;
  EXPECT_TRUE(Infer(Request(1), &answer).ok());

  EXPECT_EQ(control(true, "nope").error_code(), grpc::StatusCode::NOT_FOUND);
  inference::ModelRepositoryParameter config;
  config.set_string_param("{}");
  grpc::Status bad = control(true, "mlp", "config", config);
  EXPECT_EQ(bad.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(bad.error_message(), HasSubstr("restart the server"));
  inference::ModelRepositoryParameter not_bool;
  not_bool.set_int64_param(1);
  EXPECT_EQ(control(false, "mlp", "unload_dependents", not_bool).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(index(true).models_size(), 1) << "errors change nothing";
}

TEST_F(KserveGrpcServiceTest, InferTakesContentsOrRawBytesAndAnswersRawOutputs) {
  inference::ModelInferRequest contents = Request(3);
  inference::ModelInferRequest raw = Request(3);
  std::string bytes(3 * 4 * sizeof(float), '\0');
  std::memcpy(bytes.data(), contents.inputs(0).contents().fp32_contents().data(), bytes.size());
  raw.mutable_inputs(0)->clear_contents();
  raw.add_raw_input_contents(bytes);
  (*raw.mutable_parameters())["latency_objective_ms"].set_double_param(40);
  for (const inference::ModelInferRequest* request : {&contents, &raw}) {
    inference::ModelInferResponse r;
    grpc::Status s = Infer(*request, &r);
    ASSERT_TRUE(s.ok()) << s.error_message();
    EXPECT_EQ(r.model_name(), "mlp");
    EXPECT_EQ(r.model_version(), "1");
    EXPECT_EQ(r.id(), "q");
    ASSERT_EQ(r.outputs_size(), 1);
    EXPECT_EQ(r.outputs(0).name(), "logits");
    EXPECT_EQ(r.outputs(0).datatype(), "FP32");
    EXPECT_THAT(r.outputs(0).shape(), ElementsAre(3, 3));
    ASSERT_EQ(r.raw_output_contents_size(), 1);
    ASSERT_EQ(r.raw_output_contents(0).size(), 3 * 3 * sizeof(float));
    // Item i holds 4i..4i+3; its row is (j + 1) × their sum.
    std::vector<float> out(9);
    std::memcpy(out.data(), r.raw_output_contents(0).data(), 9 * sizeof(float));
    EXPECT_THAT(out, ElementsAre(6, 12, 18, 22, 44, 66, 38, 76, 114));
    EXPECT_TRUE(r.parameters().at("tutti_emulated").bool_param());
    EXPECT_FALSE(r.parameters().at("reconstructed").bool_param());
    EXPECT_GE(r.parameters().at("tutti_batch_size").int64_param(), 1);
  }
  EXPECT_THAT(frontend_->StatsJson(0), HasSubstr(R"("success":6)"));
}

TEST_F(KserveGrpcServiceTest, ModelConfigIsTritonsConfiguration) {
  grpc::ClientContext context;
  inference::ModelConfigRequest q;
  q.set_name("mlp");
  inference::ModelConfigResponse r;
  ASSERT_TRUE(stub_->ModelConfig(&context, q, &r).ok());
  const inference::ModelConfig& c = r.config();
  EXPECT_EQ(c.name(), "mlp");
  EXPECT_EQ(c.platform(), "tutti_builtin");
  EXPECT_EQ(c.max_batch_size(), 8);
  ASSERT_EQ(c.input_size(), 1);
  EXPECT_EQ(c.input(0).name(), "image");
  EXPECT_EQ(c.input(0).data_type(), inference::TYPE_FP32);
  EXPECT_THAT(c.input(0).dims(), ElementsAre(1, 2, 2));
  ASSERT_EQ(c.output_size(), 1);
  EXPECT_THAT(c.output(0).dims(), ElementsAre(3));
  EXPECT_TRUE(c.has_dynamic_batching());
  grpc::ClientContext unknown;
  q.set_name("nope");
  EXPECT_EQ(stub_->ModelConfig(&unknown, q, &r).error_code(), grpc::StatusCode::NOT_FOUND);
}

TEST_F(KserveGrpcServiceTest, ModelStatisticsCountRequestsPerModel) {
  inference::ModelInferResponse response;
  ASSERT_TRUE(Infer(Request(2), &response).ok());
  ASSERT_TRUE(Infer(Request(1), &response).ok());
  inference::ModelInferRequest bad = Request(1);
  bad.mutable_inputs(0)->set_datatype("INT8");
  EXPECT_FALSE(Infer(bad, &response).ok());
  auto statistics = [&](const std::string& name, inference::ModelStatisticsResponse* r) {
    grpc::ClientContext context;
    inference::ModelStatisticsRequest q;
    q.set_name(name);
    return stub_->ModelStatistics(&context, q, r).error_code();
  };
  for (const std::string name : {"mlp", ""}) {  // "": every model
    inference::ModelStatisticsResponse r;
    ASSERT_EQ(statistics(name, &r), grpc::StatusCode::OK);
    ASSERT_EQ(r.model_stats_size(), 1);
    const inference::ModelStatistics& m = r.model_stats(0);
    EXPECT_EQ(m.name(), "mlp");
    EXPECT_EQ(m.version(), "1");
    EXPECT_EQ(m.inference_count(), 3u);
    EXPECT_EQ(m.inference_stats().success().count(), 2u);
    EXPECT_EQ(m.inference_stats().queue().count(), 2u);
    EXPECT_EQ(m.inference_stats().compute_infer().count(), 2u);
    // The fake engine runs each item alone, in ℓ(1) = 1.1 ms on its clock.
    EXPECT_EQ(m.inference_stats().compute_infer().ns(), 2u * Micros(1100));
    EXPECT_EQ(m.execution_count(), 3u);
    EXPECT_EQ(m.inference_stats().fail().count(), 0u);  // refused before it was run
    EXPECT_GT(m.last_inference(), 0u);
  }
  inference::ModelStatisticsResponse r;
  EXPECT_EQ(statistics("nope", &r), grpc::StatusCode::NOT_FOUND);
}

// One stream, several requests: one answer each, in order here (the fake
// engine answers at once), a bad request's error in its answer, and the
// stream goes on after it.
TEST_F(KserveGrpcServiceTest, ModelStreamInferAnswersEachRequestAndReportsErrorsInBand) {
  grpc::ClientContext context;
  auto stream = stub_->ModelStreamInfer(&context);
  inference::ModelInferRequest first = Request(1), bad = Request(1), last = Request(2);
  first.set_id("first");
  bad.set_id("bad");
  bad.mutable_inputs(0)->set_name("nope");
  last.set_id("last");
  for (const auto* r : {&first, &bad, &last}) ASSERT_TRUE(stream->Write(*r));
  ASSERT_TRUE(stream->WritesDone());
  std::vector<inference::ModelStreamInferResponse> answers;
  inference::ModelStreamInferResponse a;
  while (stream->Read(&a)) answers.push_back(a);
  EXPECT_TRUE(stream->Finish().ok());
  ASSERT_EQ(answers.size(), 3u);
  EXPECT_EQ(answers[0].error_message(), "");
  EXPECT_EQ(answers[0].infer_response().id(), "first");
  EXPECT_THAT(answers[0].infer_response().outputs(0).shape(), ElementsAre(1, 3));
  EXPECT_THAT(answers[1].error_message(), HasSubstr("nope"));
  EXPECT_EQ(answers[1].infer_response().id(), "bad");
  EXPECT_EQ(answers[1].infer_response().model_name(), "mlp");
  EXPECT_EQ(answers[2].error_message(), "");
  EXPECT_EQ(answers[2].infer_response().id(), "last");
  EXPECT_THAT(answers[2].infer_response().outputs(0).shape(), ElementsAre(2, 3));
}

TEST_F(KserveGrpcServiceTest, BadRequestsGetTheProtocolsCodesAndTheServerKeepsServing) {
  struct Case {
    std::function<void(inference::ModelInferRequest&)> mutate;
    grpc::StatusCode code;
    std::string message;
  };
  const std::vector<Case> cases = {
      {[](auto& r) { r.set_model_name("resnet"); }, grpc::StatusCode::NOT_FOUND, "unknown model 'resnet'"},
      {[](auto& r) { r.set_model_version("7"); }, grpc::StatusCode::NOT_FOUND, "has no version '7'"},
      {[](auto& r) { r.mutable_inputs(0)->set_datatype("INT32"); }, grpc::StatusCode::INVALID_ARGUMENT,
       "has datatype INT32; the model expects FP32"},
      {[](auto& r) { r.mutable_inputs(0)->mutable_shape()->RemoveLast(); }, grpc::StatusCode::INVALID_ARGUMENT,
       "has shape [1, 1, 2]; expected [N, 1, 2, 2]"},
      {[](auto& r) { r.mutable_inputs(0)->mutable_contents()->mutable_fp32_contents()->RemoveLast(); },
       grpc::StatusCode::INVALID_ARGUMENT, "has 3 values; shape [1, 1, 2, 2] needs 4"},
      {[](auto& r) { r.clear_inputs(); }, grpc::StatusCode::INVALID_ARGUMENT, "takes exactly one input"},
      {[](auto& r) { r.mutable_inputs(0)->set_name("x"); }, grpc::StatusCode::INVALID_ARGUMENT,
       "unexpected input 'x'"},
      {[](auto& r) { r.mutable_inputs(0)->mutable_contents()->add_int_contents(1); },
       grpc::StatusCode::INVALID_ARGUMENT, "its data goes in fp32_contents"},
      {[](auto& r) { r.add_raw_input_contents(std::string(16, '\0')); }, grpc::StatusCode::INVALID_ARGUMENT,
       "has both contents and raw_input_contents"},
      {[](auto& r) {
         r.mutable_inputs(0)->clear_contents();
         r.add_raw_input_contents(std::string(12, '\0'));
       },
       grpc::StatusCode::INVALID_ARGUMENT, "has 12 bytes of binary data; shape [1, 1, 2, 2] of FP32 needs 16"},
      {[](auto& r) { r.mutable_inputs(0)->set_shape(0, 9); }, grpc::StatusCode::INVALID_ARGUMENT,
       "batch of 9 exceeds model 'mlp' max_batch_size 8"},
      {[](auto& r) { r.add_outputs()->set_name("probs"); }, grpc::StatusCode::INVALID_ARGUMENT,
       "unknown output 'probs'"},
      {[](auto& r) { (*r.mutable_parameters())["latency_objective_ms"].set_string_param("soon"); },
       grpc::StatusCode::INVALID_ARGUMENT, "'latency_objective_ms' must be a positive number"},
      // ℓ(1) = 1.1 ms cannot be met within 0.5 ms: an explicit error, never silence.
      {[](auto& r) { (*r.mutable_parameters())["latency_objective_ms"].set_double_param(0.5); },
       grpc::StatusCode::DEADLINE_EXCEEDED, ""},
  };
  for (const Case& c : cases) {
    inference::ModelInferRequest request = Request(1);
    c.mutate(request);
    grpc::Status s = InferError(request);
    EXPECT_EQ(s.error_code(), c.code) << c.message << ": " << s.error_message();
    EXPECT_THAT(s.error_message(), HasSubstr(c.message));
  }
  inference::ModelInferResponse ok;
  EXPECT_TRUE(Infer(Request(2), &ok).ok());
  EXPECT_THAT(frontend_->StatsJson(0), HasSubstr(R"("rejected":11)"));  // the 11 INVALID_ARGUMENT cases
}

TEST_F(KserveGrpcServiceTest, RefusesTheSameBadShapeAsHttpWithTheSameMessage) {
  inference::ModelInferRequest request = Request(1);
  request.mutable_inputs(0)->set_shape(2, 3);
  absl::StatusOr<InferRequest> grpc = ParseModelInfer(request, config_);
  absl::StatusOr<InferRequest> json = ParseInferRequest(
      R"({"inputs":[{"name":"image","datatype":"FP32","shape":[1,1,3,2],"data":[0,1,2,3]}]})", config_);
  ASSERT_FALSE(grpc.ok());
  ASSERT_FALSE(json.ok());
  EXPECT_EQ(grpc.status(), json.status());
}

TEST_F(KserveGrpcServiceTest, AfterShutdownBeginsInferIsUnavailableSoClientsRetryElsewhere) {
  engine_->StopAccepting();
  grpc::Status s = InferError(Request(1));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_THAT(s.error_message(), HasSubstr("shutting down"));
}

// Hostile input: each a regression test.

TEST_F(KserveGrpcServiceTest, BytesThatAreNotAModelInferRequestAreInvalidArgument) {
  grpc::GenericStub generic(
      grpc::CreateChannel(absl::StrCat("127.0.0.1:", server_->port()), grpc::InsecureChannelCredentials()));
  const std::string garbage = "\xff\xff\xff\xff not a protobuf";
  grpc::Slice slice(garbage.data(), garbage.size());
  grpc::ByteBuffer request(&slice, 1), response;
  grpc::ClientContext context;
  std::promise<grpc::Status> done;
  generic.UnaryCall(&context, "/inference.GRPCInferenceService/ModelInfer", grpc::StubOptions(), &request, &response,
                    [&](grpc::Status s) { done.set_value(s); });
  const grpc::Status s = done.get_future().get();
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("not a well-formed inference.ModelInferRequest"));
  inference::ModelInferResponse ok;
  EXPECT_TRUE(Infer(Request(1), &ok).ok()) << "and the server keeps serving";
}

TEST_F(KserveGrpcServiceTest, AHugeModelNameIsNotEchoedWhole) {
  inference::ModelInferRequest request = Request(1);
  request.set_model_name(std::string(10000, 'm'));
  const grpc::Status s = InferError(request);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(s.error_message(), HasSubstr("unknown model 'mmm"));
  EXPECT_THAT(s.error_message(), HasSubstr("(+9872 bytes)"));
  EXPECT_LT(s.error_message().size(), 200u);
}

TEST_F(KserveGrpcServiceTest, ObjectivesThatRoundToNothingOrOverflowAreRefused) {
  for (double ms : {1e-300, 1e15}) {
    inference::ModelInferRequest request = Request(1);
    (*request.mutable_parameters())["latency_objective_ms"].set_double_param(ms);
    const grpc::Status s = InferError(request);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << ms;
    EXPECT_THAT(s.error_message(), HasSubstr("from 0.001 (1 us) to 86400000 (a day)")) << ms;
  }
  grpc::ClientContext c;
  inference::ServerMetadataResponse meta;
  ASSERT_TRUE(stub_->ServerMetadata(&c, {}, &meta).ok());
  EXPECT_THAT(meta.extensions(), ElementsAre("binary_tensor_data", "sequence", "model_repository",
                                             "model_configuration", "statistics"));
}

}  // namespace
}  // namespace tutti
