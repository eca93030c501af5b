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
#include "rapidjson/document.h"
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
      {[](auto& r) { (*r.mutable_parameters())["timeout"].set_int64_param(-5); }, grpc::StatusCode::INVALID_ARGUMENT,
       "parameter 'timeout' must be an integer number of microseconds"},
      {[](auto& r) { (*r.mutable_parameters())["timeout"].set_double_param(10); }, grpc::StatusCode::INVALID_ARGUMENT,
       "parameter 'timeout' must be an integer number of microseconds"},
      {[](auto& r) { (*r.mutable_parameters())["priority"].set_int64_param(-1); }, grpc::StatusCode::INVALID_ARGUMENT,
       "parameter 'priority' must be a non-negative integer"},
      {[](auto& r) { (*r.mutable_parameters())["priority"].set_string_param("high"); },
       grpc::StatusCode::INVALID_ARGUMENT, "parameter 'priority' must be a non-negative integer"},
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
  EXPECT_THAT(frontend_->StatsJson(0), HasSubstr(R"("rejected":15)"));  // the 15 INVALID_ARGUMENT cases
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

namespace tutti {
namespace {

// An echo of every datatype: what each protocol's codec reads into a
// request's records and writes back from answers of the same layout.
TEST(TypedCodecTest, EveryDatatypeRoundTripsOverJsonBinaryAndGrpcContents) {
  struct Case {
    const char* type;
    const char* json;  // two items of one element
  };
  const std::vector<Case> cases = {
      {"BOOL", "true,false"},        {"UINT8", "0,255"},
      {"UINT16", "65535,1"},         {"UINT32", "4294967295,2"},
      {"UINT64", "18446744073709551615,3"}, {"INT8", "-128,127"},
      {"INT16", "-32768,32767"},     {"INT32", "-2147483648,2147483647"},
      {"INT64", "-9223372036854775808,9223372036854775807"},
      {"FP16", "-2.5,65504.0"},      {"FP32", "0.5,-1024.25"},
      {"FP64", "0.1,-1e300"},        {"BYTES", R"("a\"b","")"}};
  for (const Case& k : cases) {
    SCOPED_TRACE(k.type);
    ServedModel served;
    ModelConfig& c = served.config;
    c.name = "echo";
    c.max_batch_size = 2;
    c.inputs = {{"x", *ParseDataType(k.type), {1}}, {"flag", DataType::kBool, {1}}};
    c.outputs = c.inputs;
    const std::string json_request = absl::StrCat(R"({"inputs":[{"name":"x","datatype":")", k.type,
                                                  R"(","shape":[2,1],"data":[)", k.json,
                                                  R"(]},{"name":"flag","datatype":"BOOL","shape":[2,1],"data":[true,false]}]})");
    absl::StatusOr<InferRequest> parsed = ParseInferRequest(json_request, c);
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    ASSERT_EQ(parsed->batch, 2);
    // The answer's records are the request's (an echo).
    InferenceFrontend::InferResult result;
    const size_t per_item = parsed->data.size() / 2;
    result.outputs = {{parsed->data.begin(), parsed->data.begin() + per_item},
                      {parsed->data.begin() + per_item, parsed->data.end()}};
    const InferResponseBody json = WriteInferResponse(c, 1, "", result.outputs, "{}", false, {.outputs = {"x"}});
    EXPECT_THAT(json.body, HasSubstr(absl::StrCat(R"("outputs":[{"name":"x","datatype":")", k.type,
                                                  R"(","shape":[2,1],"data":[)", k.json, "]}]")));
    const InferResponseBody binary = WriteInferResponse(c, 1, "", result.outputs, "{}", true);
    ASSERT_TRUE(binary.json_length.has_value());
    const std::string raw = binary.body.substr(*binary.json_length);
    // Binary in: the bytes the binary answer carried give the same records.
    const std::string binary_header =
        absl::StrCat(R"({"inputs":[{"name":"flag","datatype":"BOOL","shape":[2,1],"parameters":{"binary_data_size":2}},)",
                     R"({"name":"x","datatype":")", k.type, R"(","shape":[2,1],"parameters":{"binary_data_size":)",
                     raw.size() - 2, "}}]}");
    absl::StatusOr<InferRequest> from_binary =
        ParseInferRequest(binary_header + raw.substr(raw.size() - 2) + raw.substr(0, raw.size() - 2), c,
                          binary_header.size());
    ASSERT_TRUE(from_binary.ok()) << from_binary.status();
    EXPECT_EQ(std::memcmp(from_binary->data.data(), parsed->data.data(), parsed->data.size() * 4), 0);
    // gRPC: raw out; and raw in gives the same records.
    inference::ModelInferResponse response;
    WriteModelInfer(served, "", result, &response);
    ASSERT_EQ(response.raw_output_contents_size(), 2);
    EXPECT_EQ(response.raw_output_contents(0) + response.raw_output_contents(1), raw);
    inference::ModelInferRequest request;
    for (int t = 0; t < 2; ++t) {
      auto* in = request.add_inputs();
      in->set_name(c.inputs[t].name);
      in->set_datatype(std::string(DataTypeName(c.inputs[t].datatype)));
      in->add_shape(2);
      in->add_shape(1);
      request.add_raw_input_contents(response.raw_output_contents(t));
    }
    absl::StatusOr<InferRequest> from_grpc = ParseModelInfer(request, c);
    ASSERT_TRUE(from_grpc.ok()) << from_grpc.status();
    EXPECT_EQ(std::memcmp(from_grpc->data.data(), parsed->data.data(), parsed->data.size() * 4), 0);
    // gRPC's typed contents, where the protocol has a field for the type.
    if (std::string(k.type) == "FP16") {
      request.clear_raw_input_contents();
      EXPECT_THAT(ParseModelInfer(request, c).status().message(),
                  HasSubstr("input 'x' is FP16: its data goes in raw_input_contents"));
      continue;
    }
    request.clear_raw_input_contents();
    request.mutable_inputs(1)->mutable_contents()->add_bool_contents(true);
    request.mutable_inputs(1)->mutable_contents()->add_bool_contents(false);
    auto* contents = request.mutable_inputs(0)->mutable_contents();
    rapidjson::Document values;
    values.Parse(absl::StrCat("[", k.json, "]").c_str());
    for (const rapidjson::Value& v : values.GetArray()) {
      const DataType type = c.inputs[0].datatype;
      if (v.IsBool()) contents->add_bool_contents(v.GetBool());
      else if (v.IsString()) contents->add_bytes_contents(v.GetString());
      else if (type == DataType::kInt64) contents->add_int64_contents(v.GetInt64());
      else if (type == DataType::kInt8 || type == DataType::kInt16 || type == DataType::kInt32)
        contents->add_int_contents(v.GetInt());
      else if (type == DataType::kUint64) contents->add_uint64_contents(v.GetUint64());
      else if (type == DataType::kUint8 || type == DataType::kUint16 || type == DataType::kUint32)
        contents->add_uint_contents(v.GetUint());
      else if (type == DataType::kFp32) contents->add_fp32_contents(static_cast<float>(v.GetDouble()));
      else contents->add_fp64_contents(v.GetDouble());
    }
    from_grpc = ParseModelInfer(request, c);
    ASSERT_TRUE(from_grpc.ok()) << from_grpc.status();
    EXPECT_EQ(std::memcmp(from_grpc->data.data(), parsed->data.data(), parsed->data.size() * 4), 0);
  }
}

TEST(TypedCodecTest, ContentsInTheWrongFieldNameTheTensorAndTheField) {
  ModelConfig c;
  c.name = "m";
  c.max_batch_size = 1;
  c.inputs = {{"ids", DataType::kInt64, {1}}, {"mask", DataType::kBool, {1}}};
  c.outputs = {{"y", DataType::kFp32, {1}}};
  inference::ModelInferRequest request;
  for (const auto& [name, type] : {std::pair{"ids", "INT64"}, {"mask", "BOOL"}}) {
    auto* in = request.add_inputs();
    in->set_name(name);
    in->set_datatype(type);
    in->add_shape(1);
    in->add_shape(1);
  }
  request.mutable_inputs(0)->mutable_contents()->add_int_contents(7);
  EXPECT_THAT(ParseModelInfer(request, c).status().message(),
              HasSubstr("input 'ids' is INT64: its data goes in int64_contents"));
  request.add_raw_input_contents(std::string(8, '\0'));
  EXPECT_THAT(ParseModelInfer(request, c).status().message(), HasSubstr("raw_input_contents has 1 entries for 2 inputs"));
}

}  // namespace
}  // namespace tutti
