// A model of several tensors of every datatype libtorch has, served end to
// end: the ONNX fixture `typed` echoes each input and counts the true
// elements of its BOOL input.
#include <algorithm>
#include <cctype>
#include <cstring>
#include <limits>
#include <tuple>
#include <type_traits>

#include <grpcpp/grpcpp.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rapidjson/document.h"
#include "tutti/codec/typed_tensors.h"
#include "tutti/core/real_clock.h"
#include "tutti/server/fixture_server_test_util.h"
#include "tutti/server/server.h"
#include "tutti/testing/http_test_client.h"
#include "tutti/testing/temp_dir.h"
#include "tutti/testing/torchscript_fixture.h"

namespace tutti {
namespace {

using ::tutti::testing::HttpTestClient;

// Per datatype: a batch of 2 items of 2 elements, as JSON text and as the
// raw little-endian bytes binary data and raw_input_contents carry.
struct TypedInput {
  std::string type;  // "BOOL", …
  std::string json;
  std::string raw;
};

template <typename T>
TypedInput Make(std::string type, std::vector<T> values) {
  TypedInput in{std::move(type), "", std::string(values.size() * sizeof(T), '\0')};
  for (size_t i = 0; i < values.size(); ++i) {
    const T v = values[i];  // std::vector<bool> has no data()
    std::memcpy(in.raw.data() + i * sizeof(T), &v, sizeof(T));
  }
  in.json = absl::StrJoin(values, ",", [](std::string* out, T v) {
    if constexpr (std::is_same_v<T, bool>) {
      absl::StrAppend(out, v ? "true" : "false");
    } else if constexpr (sizeof(T) == 1) {
      absl::StrAppend(out, static_cast<int>(v));
    } else if constexpr (std::is_floating_point_v<T>) {
      absl::StrAppend(out, absl::StrFormat("%.17g", v));
    } else {
      absl::StrAppend(out, v);
    }
  });
  return in;
}

std::vector<TypedInput> Inputs() {
  TypedInput fp16 = Make<float>("FP16", {-2.5f, 65504.0f, 0.5f, 1.0f});
  std::string half;
  for (float v : {-2.5f, 65504.0f, 0.5f, 1.0f}) {
    const uint16_t h = FloatToHalf(v);
    half.append(reinterpret_cast<const char*>(&h), 2);
  }
  fp16.raw = half;
  using i64 = std::numeric_limits<int64_t>;
  using i32 = std::numeric_limits<int32_t>;
  return {Make<bool>("BOOL", {true, false, true, true}),
          Make<uint8_t>("UINT8", {0, 255, 7, 128}),
          Make<int8_t>("INT8", {-128, 127, 0, -1}),
          Make<int16_t>("INT16", {-32768, 32767, 1, 2}),
          Make<int32_t>("INT32", {i32::min(), i32::max(), 3, 4}),
          Make<int64_t>("INT64", {i64::min(), i64::max(), 5, 6}),
          fp16,
          Make<float>("FP32", {0.1f, -3e38f, 1, 2}),
          Make<double>("FP64", {0.1, -1e300, 1, 2})};
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(c));
  return s;
}

class TypedServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<Server>> server = testing::ServeFixture(
        dir_, testing::OnnxFixtureRepo(), "typed", "model.onnx",
        "profiles: {cpu: {batch: [1, 8], latency_us: [1000, 2000]}}\n", &clock_,
        "executors: [{kind: torch, models: [typed]}]\n");
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
  }

  testing::TempDir dir_;
  RealClock clock_;
  std::unique_ptr<Server> server_;
};

TEST_F(TypedServerTest, EveryDatatypeRoundTripsOverJsonBinaryAndGrpc) {
  const std::vector<TypedInput> inputs = Inputs();
  HttpTestClient c(server_->port());
  // JSON data in, JSON data out.
  std::vector<std::string> json;
  for (const TypedInput& in : inputs) {
    json.push_back(absl::StrCat(R"({"name":"in_)", Lower(in.type), R"(","datatype":")", in.type,
                                R"(","shape":[2,2],"data":[)", in.json, "]}"));
  }
  testing::ClientResponse r =
      c.Request("POST", "/v2/models/typed/infer", absl::StrCat(R"({"inputs":[)", absl::StrJoin(json, ","), "]}"));
  ASSERT_EQ(r.status, 200) << r.body;
  rapidjson::Document d;
  d.Parse(r.body.c_str());
  ASSERT_EQ(d["outputs"].Size(), inputs.size() + 1);
  for (size_t t = 0; t < inputs.size(); ++t) {
    const rapidjson::Value& out = d["outputs"][static_cast<rapidjson::SizeType>(t)];
    EXPECT_EQ(out["name"].GetString(), "out_" + Lower(inputs[t].type));
    EXPECT_EQ(out["datatype"].GetString(), inputs[t].type);
    rapidjson::Document want;
    want.Parse(absl::StrCat("[", inputs[t].json, "]").c_str());
    ASSERT_EQ(out["data"].Size(), want.Size());
    for (rapidjson::SizeType i = 0; i < want.Size(); ++i) {
      const rapidjson::Value &got = out["data"][i], &value = want[i];
      if (value.IsBool()) {
        EXPECT_EQ(got.GetBool(), value.GetBool());
      } else if (got.IsDouble()) {  // a floating-point output
        EXPECT_EQ(got.GetDouble(), value.GetDouble()) << inputs[t].type << " " << i;
      } else if (value.IsInt64()) {
        EXPECT_EQ(got.GetInt64(), value.GetInt64()) << inputs[t].type << " " << i;
      } else if (value.IsUint64()) {
        EXPECT_EQ(got.GetUint64(), value.GetUint64()) << inputs[t].type << " " << i;
      } else {
        ADD_FAILURE() << inputs[t].type << " " << i << ": an integer for a floating-point input";
      }
    }
  }
  EXPECT_EQ(d["outputs"][9]["name"].GetString(), std::string("count"));
  EXPECT_EQ(d["outputs"][9]["data"][0].GetInt64(), 1);  // true, false
  EXPECT_EQ(d["outputs"][9]["data"][1].GetInt64(), 2);  // true, true

  // Binary data in, binary data out, asking for two outputs.
  std::vector<std::string> parts;
  std::string binary;
  for (const TypedInput& in : inputs) {
    parts.push_back(absl::StrCat(R"({"name":"in_)", Lower(in.type), R"(","datatype":")", in.type,
                                R"(","shape":[2,2],"parameters":{"binary_data_size":)", in.raw.size(), "}}"));
    binary += in.raw;
  }
  const std::string header = absl::StrCat(R"({"inputs":[)", absl::StrJoin(parts, ","),
                                          R"(],"outputs":[{"name":"out_fp16","parameters":{"binary_data":true}},)",
                                          R"({"name":"out_int64","parameters":{"binary_data":true}}]})");
  r = c.Request("POST", "/v2/models/typed/infer", header + binary,
                {{"Inference-Header-Content-Length", std::to_string(header.size())}});
  ASSERT_EQ(r.status, 200) << r.body;
  const size_t json_length = std::stoul(r.json_length);
  d.Parse(r.body.substr(0, json_length).c_str());
  ASSERT_EQ(d["outputs"].Size(), 2u);  // config order
  EXPECT_EQ(d["outputs"][0]["name"].GetString(), std::string("out_int64"));
  EXPECT_EQ(r.body.substr(json_length), inputs[5].raw + inputs[6].raw);

  // gRPC: every input in raw_input_contents, the outputs back raw.
  auto stub = inference::GRPCInferenceService::NewStub(grpc::CreateChannel(
      absl::StrCat("127.0.0.1:", server_->grpc_port()), grpc::InsecureChannelCredentials()));
  inference::ModelInferRequest request;
  request.set_model_name("typed");
  for (const TypedInput& in : inputs) {
    auto* tensor = request.add_inputs();
    tensor->set_name("in_" + Lower(in.type));
    tensor->set_datatype(in.type);
    tensor->add_shape(2);
    tensor->add_shape(2);
    request.add_raw_input_contents(in.raw);
  }
  inference::ModelInferResponse response;
  grpc::ClientContext context;
  const grpc::Status status = stub->ModelInfer(&context, request, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(response.raw_output_contents_size(), 10);
  for (size_t t = 0; t < inputs.size(); ++t) {
    EXPECT_EQ(response.outputs(static_cast<int>(t)).datatype(), inputs[t].type);
    EXPECT_EQ(response.raw_output_contents(static_cast<int>(t)), inputs[t].raw) << inputs[t].type;
  }
  const std::vector<int64_t> counts = {1, 2};
  EXPECT_EQ(response.raw_output_contents(9), std::string(reinterpret_cast<const char*>(counts.data()), 16));

  // A shape error names the tensor, on both protocols.
  request.mutable_inputs(3)->set_shape(1, 3);
  grpc::ClientContext again;
  EXPECT_THAT(stub->ModelInfer(&again, request, &response).error_message(),
              ::testing::HasSubstr("input 'in_int16' has shape [2, 3]; expected [N, 2]"));
  json[3] = R"({"name":"in_int16","datatype":"INT16","shape":[2],"data":[1,2]})";
  r = c.Request("POST", "/v2/models/typed/infer", absl::StrCat(R"({"inputs":[)", absl::StrJoin(json, ","), "]}"));
  EXPECT_EQ(r.status, 400);
  EXPECT_THAT(r.body, ::testing::HasSubstr("input 'in_int16' has shape [2]; expected [N, 2]"));
}

}  // namespace
}  // namespace tutti

namespace tutti {
namespace {

// The ONNX fixture `variable`: ids INT64 [-1] and a BOOL mask in; `total`
// (the ids the mask keeps, summed) and `echo` (the ids) out; shape buckets
// 4 and 8.
TEST(VariableServerTest, RequestsArePaddedToTheirBucketAndAnsweredAtTheirLength) {
  testing::TempDir dir;
  RealClock clock;
  absl::StatusOr<std::unique_ptr<Server>> server =
      testing::ServeFixture(dir, testing::OnnxFixtureRepo(), "variable", "model.onnx",
                            "profiles:\n  cpu: {batch: [1, 8], latency_us: [1000, 2000]}\n"
                            "  cpu/4: {batch: [1, 8], latency_us: [500, 900]}\n"
                            "  cpu/8: {batch: [1, 8], latency_us: [1000, 2000]}\n",
                            &clock);
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_THAT((*server)->Describe(), ::testing::HasSubstr("variable[4]"));
  HttpTestClient c((*server)->port());

  // Length 3 (bucket 4) and length 6 (bucket 8), each answered at its length.
  for (const auto& [ids, mask, total] :
       {std::tuple{"[5,6,7]", "[true,false,true]", 12}, std::tuple{"[1,2,3,4,5,6]", "[true,true,true,true,true,false]", 15}}) {
    const std::string text = ids;
    const std::string length = std::to_string(std::count(text.begin(), text.end(), ',') + 1);
    testing::ClientResponse r = c.Request(
        "POST", "/v2/models/variable/infer",
        absl::StrCat(R"({"inputs":[{"name":"ids","datatype":"INT64","shape":[1,)", length, R"(],"data":)", ids,
                     R"(},{"name":"mask","datatype":"BOOL","shape":[1,)", length, R"(],"data":)", mask, "}]}"));
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_THAT(r.body, ::testing::HasSubstr(absl::StrCat(R"({"name":"total","datatype":"INT64","shape":[1,1],"data":[)",
                                                          total, "]}")));
    EXPECT_THAT(r.body, ::testing::HasSubstr(absl::StrCat(R"({"name":"echo","datatype":"INT64","shape":[1,)", length,
                                                          R"(],"data":)", ids, "}")));
  }
  // gRPC: raw contents of length 2, the echo cut back to 2.
  auto stub = inference::GRPCInferenceService::NewStub(grpc::CreateChannel(
      absl::StrCat("127.0.0.1:", (*server)->grpc_port()), grpc::InsecureChannelCredentials()));
  inference::ModelInferRequest request;
  request.set_model_name("variable");
  for (const auto& [name, type] : {std::pair{"ids", "INT64"}, {"mask", "BOOL"}}) {
    auto* t = request.add_inputs();
    t->set_name(name);
    t->set_datatype(type);
    t->add_shape(1);
    t->add_shape(2);
  }
  const std::vector<int64_t> ids = {40, 2};
  request.add_raw_input_contents(std::string(reinterpret_cast<const char*>(ids.data()), 16));
  request.add_raw_input_contents(std::string("\x01\x01", 2));
  inference::ModelInferResponse response;
  grpc::ClientContext context;
  ASSERT_TRUE(stub->ModelInfer(&context, request, &response).ok());
  EXPECT_EQ(response.outputs(1).shape(1), 2);
  EXPECT_EQ(response.raw_output_contents(1), request.raw_input_contents(0));
  const int64_t total = 42;
  EXPECT_EQ(response.raw_output_contents(0), std::string(reinterpret_cast<const char*>(&total), 8));
  // Longer than the largest bucket: refused, naming the tensor.
  testing::ClientResponse r = c.Request(
      "POST", "/v2/models/variable/infer",
      R"({"inputs":[{"name":"ids","datatype":"INT64","shape":[1,9],"data":[1,2,3,4,5,6,7,8,9]},)"
      R"({"name":"mask","datatype":"BOOL","shape":[1,9],"data":[true,true,true,true,true,true,true,true,true]}]})");
  EXPECT_EQ(r.status, 400);
  EXPECT_THAT(r.body, ::testing::HasSubstr("input 'ids' has length 9; model 'variable' takes at most 8"));
  // The buckets are the server's own: not listed, not found by name.
  EXPECT_EQ(c.Request("GET", "/v2/models/variable[4]").status, 404);
  const std::string metrics = c.Request("GET", "/metrics").body;  // each bucket's series its own
  EXPECT_THAT(metrics, ::testing::HasSubstr("tutti_batches_total{model=\"variable[4]\"}"));
  EXPECT_THAT(metrics, ::testing::HasSubstr("tutti_batches_total{model=\"variable\"}"));
  EXPECT_THAT(c.Request("GET", "/v2/models/variable").body, ::testing::HasSubstr(R"("shape":[-1,-1])"));
}

}  // namespace
}  // namespace tutti
