// The datatypes ONNX graphs do not take, served end to end by the
// TorchScript fixture `strings`: BYTES text (upper-cased and measured),
// UINT16–64 (echoed) and an optional INT32 mask (summed).
#include <cstring>
#include <limits>
#include <tuple>

#include <grpcpp/grpcpp.h>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rapidjson/document.h"
#include "tutti/core/real_clock.h"
#include "tutti/server/fixture_server_test_util.h"
#include "tutti/server/server.h"
#include "tutti/testing/http_test_client.h"
#include "tutti/testing/temp_dir.h"
#include "tutti/testing/torchscript_fixture.h"

namespace tutti {
namespace {

using ::testing::HasSubstr;
using ::tutti::testing::HttpTestClient;

// Elements in the binary form of BYTES: a 4-byte little-endian length, then
// the bytes.
std::string LengthPrefixed(const std::vector<std::string>& elements) {
  std::string out;
  for (const std::string& e : elements) {
    const uint32_t n = static_cast<uint32_t>(e.size());
    out.append(reinterpret_cast<const char*>(&n), 4).append(e);
  }
  return out;
}

template <typename T>
std::string Raw(const std::vector<T>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
}

class StringsServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<Server>> server =
        testing::ServeFixture(dir_, testing::FixtureRepo(), "strings", "model.pt",
                              "profiles: {cpu: {batch: [1, 8], latency_us: [1000, 2000]}}\n", &clock_);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
  }

  testing::TempDir dir_;
  RealClock clock_;
  std::unique_ptr<Server> server_;
};

constexpr uint64_t kU64Max = std::numeric_limits<uint64_t>::max();

TEST_F(StringsServerTest, BytesAndWideUnsignedRoundTripOverJsonBinaryAndGrpc) {
  HttpTestClient c(server_->port());
  // JSON: strings in and out; the mask left out is zeros.
  testing::ClientResponse r = c.Request(
      "POST", "/v2/models/strings/infer",
      R"({"inputs":[{"name":"text","datatype":"BYTES","shape":[1,2],"data":["héllo","a \"b\""]},)"
      R"({"name":"in_uint16","datatype":"UINT16","shape":[1,2],"data":[0,65535]},)"
      R"({"name":"in_uint32","datatype":"UINT32","shape":[1,2],"data":[4294967295,7]},)"
      R"({"name":"in_uint64","datatype":"UINT64","shape":[1,2],"data":[18446744073709551615,9]}]})");
  ASSERT_EQ(r.status, 200) << r.body;
  rapidjson::Document d;
  d.Parse(r.body.c_str());
  ASSERT_EQ(d["outputs"].Size(), 6u);
  const rapidjson::Value& upper = d["outputs"][0];
  EXPECT_EQ(upper["datatype"].GetString(), std::string("BYTES"));
  EXPECT_EQ(upper["data"][0].GetString(), std::string("HéLLO"));  // bytes upper-cased: é's are not ASCII
  EXPECT_EQ(upper["data"][1].GetString(), std::string("A \"B\""));
  EXPECT_EQ(d["outputs"][1]["data"][0].GetInt64(), 6);  // bytes, not characters
  EXPECT_EQ(d["outputs"][2]["data"][1].GetUint64(), 65535u);
  EXPECT_EQ(d["outputs"][3]["data"][0].GetUint64(), 4294967295u);
  EXPECT_EQ(d["outputs"][4]["data"][0].GetUint64(), kU64Max);
  EXPECT_EQ(d["outputs"][5]["data"][0].GetInt64(), 0);

  // Binary data: any bytes, a zero among them; the mask given.
  const std::string text = LengthPrefixed({std::string("a\0b", 3), "", "xyz", "0123456789abcdef"});
  const std::string mask = Raw<int32_t>({1, 2, 3, 4});
  const std::string u16 = Raw<uint16_t>({1, 2, 3, 65535}), u32 = Raw<uint32_t>({1, 2, 3, 4294967295u}),
                    u64 = Raw<uint64_t>({1, 2, 3, kU64Max});
  std::string header;
  for (const auto& [name, type, bytes] :
       {std::tuple{"text", "BYTES", &text}, {"in_uint16", "UINT16", &u16}, {"in_uint32", "UINT32", &u32},
        {"in_uint64", "UINT64", &u64}, {"mask", "INT32", &mask}}) {
    absl::StrAppend(&header, header.empty() ? R"({"inputs":[)" : ",", R"({"name":")", name, R"(","datatype":")", type,
                    R"(","shape":[2,2],"parameters":{"binary_data_size":)", bytes->size(), "}}");
  }
  absl::StrAppend(&header, R"(],"outputs":[{"name":"upper","parameters":{"binary_data":true}},)",
                  R"({"name":"out_uint64","parameters":{"binary_data":true}},{"name":"mask_sum"}]})");
  r = c.Request("POST", "/v2/models/strings/infer", header + text + u16 + u32 + u64 + mask,
                {{"Inference-Header-Content-Length", std::to_string(header.size())}});
  ASSERT_EQ(r.status, 200) << r.body;
  const size_t json_length = std::stoul(r.json_length);
  EXPECT_EQ(r.body.substr(json_length),
            LengthPrefixed({std::string("A\0B", 3), "", "XYZ", "0123456789ABCDEF"}) + u64 + Raw<int64_t>({3, 7}));

  // gRPC: bytes_contents in, raw out.
  auto stub = inference::GRPCInferenceService::NewStub(grpc::CreateChannel(
      absl::StrCat("127.0.0.1:", server_->grpc_port()), grpc::InsecureChannelCredentials()));
  inference::ModelInferRequest request;
  request.set_model_name("strings");
  auto add = [&request](const char* name, const char* type) {
    auto* t = request.add_inputs();
    t->set_name(name);
    t->set_datatype(type);
    t->add_shape(1);
    t->add_shape(2);
    return t->mutable_contents();
  };
  auto* t = add("text", "BYTES");
  t->add_bytes_contents(std::string("\xff\x00", 2));
  t->add_bytes_contents("grpc");
  for (const char* name : {"in_uint16", "in_uint32"}) {
    auto* u = add(name, name == std::string("in_uint16") ? "UINT16" : "UINT32");
    u->add_uint_contents(5);
    u->add_uint_contents(6);
  }
  auto* u = add("in_uint64", "UINT64");
  u->add_uint64_contents(kU64Max);
  u->add_uint64_contents(0);
  inference::ModelInferResponse response;
  grpc::ClientContext context;
  const grpc::Status status = stub->ModelInfer(&context, request, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(response.raw_output_contents_size(), 6);
  EXPECT_EQ(response.raw_output_contents(0), LengthPrefixed({std::string("\xff\x00", 2), "GRPC"}));
  EXPECT_EQ(response.raw_output_contents(1), Raw<int64_t>({2, 4}));
  EXPECT_EQ(response.raw_output_contents(2), Raw<uint16_t>({5, 6}));
  EXPECT_EQ(response.raw_output_contents(4), Raw<uint64_t>({kU64Max, 0}));
}

TEST_F(StringsServerTest, ABytesErrorNamesTheTensorAndTheRule) {
  HttpTestClient c(server_->port());
  const std::string rest =
      R"({"name":"in_uint16","datatype":"UINT16","shape":[1,2],"data":[0,1]},)"
      R"({"name":"in_uint32","datatype":"UINT32","shape":[1,2],"data":[0,1]},)"
      R"({"name":"in_uint64","datatype":"UINT64","shape":[1,2],"data":[0,1]}]})";
  auto infer = [&](const std::string& text) {
    return c.Request("POST", "/v2/models/strings/infer", R"({"inputs":[)" + text + "," + rest);
  };
  testing::ClientResponse r = infer(R"({"name":"text","datatype":"BYTES","shape":[1,2],"data":["ok","seventeen bytes!!"]})");
  EXPECT_EQ(r.status, 400);
  EXPECT_THAT(r.body, HasSubstr("input 'text' has an element of 17 bytes; its max_element_bytes is 16"));
  r = infer(R"({"name":"text","datatype":"BYTES","shape":[1,2],"data":[1,2]})");
  EXPECT_EQ(r.status, 400);
  EXPECT_THAT(r.body, HasSubstr("input 'text' is BYTES: its data must be strings"));
  r = c.Request("POST", "/v2/models/strings/infer",
                R"({"inputs":[{"name":"text","datatype":"BYTES","shape":[1,2],"data":["a","b"]},)"
                R"({"name":"in_uint16","datatype":"UINT16","shape":[1,2],"data":[0,65536]},)" + rest.substr(rest.find("{\"name\":\"in_uint32")));
  EXPECT_EQ(r.status, 400);
  EXPECT_THAT(r.body, HasSubstr("input 'in_uint16' is UINT16: its data must be integers from 0 to 65535"));
  // Binary data whose last element is cut short.
  const std::string header =
      R"({"inputs":[{"name":"text","datatype":"BYTES","shape":[1,2],"parameters":{"binary_data_size":11}},)" + rest;
  std::string body = header + LengthPrefixed({"ab"}).append("\x05\x00\x00\x00x", 5);
  r = c.Request("POST", "/v2/models/strings/infer", body,
                {{"Inference-Header-Content-Length", std::to_string(header.size())}});
  EXPECT_EQ(r.status, 400);
  EXPECT_THAT(r.body, HasSubstr("input 'text' has a BYTES element of length 5 but only 1 bytes follow it"));
}

}  // namespace
}  // namespace tutti
