#include "tutti/codec/kserve_json.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rapidjson/document.h"

namespace tutti {
namespace {

using ::testing::HasSubstr;

ModelConfig Mlp() {
  ModelConfig c;
  c.name = "mlp";
  c.platform = Platform::kBuiltin;
  c.architecture = "mlp";
  c.max_batch_size = 4;
  c.inputs = {{"image", DataType::kFp32, {1, 2, 2}}};
  c.outputs = {{"logits", DataType::kFp32, {3}}};
  return c;
}

std::string Request(const std::string& shape, const std::string& data,
                    const std::string& datatype = "FP32", const std::string& name = "image",
                    const std::string& extra = "") {
  return absl::StrCat(R"({"id":"r1",)", extra, R"("inputs":[{"name":")", name, R"(","datatype":")",
                      datatype, R"(","shape":)", shape, R"(,"data":)", data, "}]}");
}

std::string ErrorOf(const std::string& body, std::optional<int64_t> json_length = std::nullopt) {
  absl::StatusOr<InferRequest> r = ParseInferRequest(body, Mlp(), json_length);
  EXPECT_FALSE(r.ok()) << body;
  if (r.ok()) return "";
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(r.status().message());
}

TEST(KserveJsonTest, ParsesFlatAndNestedData) {
  absl::StatusOr<InferRequest> flat = ParseInferRequest(Request("[2,1,2,2]", "[1,2,3,4,5,6,7,8]"), Mlp());
  ASSERT_TRUE(flat.ok()) << flat.status();
  EXPECT_EQ(flat->id, "r1");
  EXPECT_EQ(flat->batch, 2);
  EXPECT_EQ(flat->data, (std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8}));
  absl::StatusOr<InferRequest> nested =
      ParseInferRequest(Request("[1,1,2,2]", "[[[[0.5,1],[2,3]]]]"), Mlp());
  ASSERT_TRUE(nested.ok()) << nested.status();
  EXPECT_EQ(nested->data, (std::vector<float>{0.5, 1, 2, 3}));
}

TEST(KserveJsonTest, LatencyObjectiveParameter) {
  absl::StatusOr<InferRequest> r = ParseInferRequest(
      Request("[1,1,2,2]", "[1,2,3,4]", "FP32", "image", R"("parameters":{"latency_objective_ms":7.5},)"),
      Mlp());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_DOUBLE_EQ(r->objective_ms, 7.5);
  EXPECT_THAT(ErrorOf(Request("[1,1,2,2]", "[1,2,3,4]", "FP32", "image",
                              R"("parameters":{"latency_objective_ms":-1},)")),
              HasSubstr("'latency_objective_ms' must be a positive number"));
}

TEST(KserveJsonTest, PriorityParameterIsTritonsAndMapsToALevel) {
  auto with = [](const std::string& value) {
    return Request("[1,1,2,2]", "[1,2,3,4]", "FP32", "image", R"("parameters":{"priority":)" + value + "},");
  };
  absl::StatusOr<InferRequest> r = ParseInferRequest(with("1"), Mlp());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->priority, 1u);
  for (const char* bad : {"-1", "1.5", "\"1\"", "true"}) {
    EXPECT_THAT(ErrorOf(with(bad)), HasSubstr("parameter 'priority' must be a non-negative integer")) << bad;
  }
  ModelConfig config = Mlp();
  EXPECT_EQ(PriorityLevel(config, 1), 0) << "no levels: one";
  config.priority_levels = 3;
  config.default_priority_level = 2;
  EXPECT_EQ(PriorityLevel(config, 1), 0);
  EXPECT_EQ(PriorityLevel(config, 3), 2);
  EXPECT_EQ(PriorityLevel(config, 0), 1) << "0: the default";
  EXPECT_EQ(PriorityLevel(config, 4), 1) << "a level the model lacks: the default, as Triton";
}

TEST(KserveJsonTest, TimeoutParameterIsTritonsMicroseconds) {
  auto with = [](const std::string& value) {
    return Request("[1,1,2,2]", "[1,2,3,4]", "FP32", "image", R"("parameters":{"timeout":)" + value + "},");
  };
  absl::StatusOr<InferRequest> r = ParseInferRequest(with("2500"), Mlp());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->timeout_us, 2500);
  EXPECT_EQ(ParseInferRequest(with("0"), Mlp())->timeout_us, 0);
  for (const char* bad : {"-1", "1.5", "\"10\"", "86400000001"}) {
    EXPECT_THAT(ErrorOf(with(bad)), HasSubstr("parameter 'timeout' must be an integer number of microseconds"))
        << bad;
  }
}

TEST(KserveJsonTest, SequenceParameters) {
  auto parse = [](const std::string& params) {
    return ParseInferRequest(Request("[1,1,2,2]", "[1,2,3,4]", "FP32", "image", "\"parameters\":" + params + ","),
                             Mlp());
  };
  absl::StatusOr<InferRequest> r = parse(R"({"sequence_id":42,"sequence_start":true})");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->sequence.id, 42u);
  EXPECT_TRUE(r->sequence.start);
  EXPECT_FALSE(r->sequence.end);
  absl::StatusOr<InferRequest> named = parse(R"({"sequence_id":"user-7","sequence_end":true})");
  ASSERT_TRUE(named.ok()) << named.status();
  EXPECT_EQ(named->sequence.id, SequenceIdOfString("user-7"));
  EXPECT_NE(named->sequence.id, SequenceIdOfString("user-8"));
  EXPECT_GE(named->sequence.id, uint64_t{1} << 63);  // never an integer id
  EXPECT_TRUE(named->sequence.end);
  EXPECT_EQ(parse(R"({"sequence_id":""})")->sequence.id, 0u);  // none, as 0
  for (const char* bad : {R"({"sequence_id":-1})", R"({"sequence_id":1.5})", R"({"sequence_id":true})"}) {
    EXPECT_THAT(parse(bad).status().message(), HasSubstr("'sequence_id' must be an unsigned integer")) << bad;
  }
  EXPECT_THAT(parse(R"({"sequence_id":1,"sequence_start":1})").status().message(),
              HasSubstr("'sequence_start' must be true or false"));
  InferRequest two;
  two.batch = 2;
  two.sequence.id = 3;
  EXPECT_THAT(CheckSequenceBatch(two).message(), HasSubstr("carries one item"));
}

TEST(KserveJsonErrorTest, MalformedJson) {
  EXPECT_THAT(ErrorOf(R"({"inputs": [)"), HasSubstr("malformed JSON at offset"));
  EXPECT_THAT(ErrorOf("[1,2]"), HasSubstr("must be a JSON object"));
}

TEST(KserveJsonErrorTest, MissingInput) {
  EXPECT_THAT(ErrorOf(R"({"id":"x"})"), HasSubstr("missing 'inputs' array"));
  EXPECT_THAT(ErrorOf(R"({"inputs":[]})"), HasSubstr("takes exactly one input ('image'), got 0"));
  EXPECT_THAT(ErrorOf(Request("[1,1,2,2]", "[1,2,3,4]", "FP32", "pixels")),
              HasSubstr("unexpected input 'pixels'"));
  EXPECT_THAT(ErrorOf(R"({"inputs":[{"name":"image","datatype":"FP32","shape":[1,1,2,2]}]})"),
              HasSubstr("has no 'data'"));
}

TEST(KserveJsonErrorTest, WrongDatatype) {
  EXPECT_THAT(ErrorOf(Request("[1,1,2,2]", "[1,2,3,4]", "INT64")),
              HasSubstr("has datatype INT64; the model expects FP32"));
  EXPECT_THAT(ErrorOf(Request("[1,1,2,2]", R"(["a","b","c","d"])")), HasSubstr("must be numbers"));
}

TEST(KserveJsonErrorTest, WrongShape) {
  EXPECT_THAT(ErrorOf(Request("[1,4]", "[1,2,3,4]")),
              HasSubstr("has shape [1, 4]; expected [N, 1, 2, 2]"));
  EXPECT_THAT(ErrorOf(Request("[1,1,2,-2]", "[1,2,3,4]")),
              HasSubstr("input 'image' has shape [1, 1, 2, -2]: dimensions must be positive integers"));
  EXPECT_THAT(ErrorOf(Request("[1,1,2,2.5]", "[1,2,3,4]")),
              HasSubstr("input 'image': shape dimensions must be positive integers"));
  EXPECT_THAT(ErrorOf(Request("[1,1,2,2]", "[1,2,3]")),
              HasSubstr("has 3 values; shape [1, 1, 2, 2] needs 4"));
  EXPECT_THAT(ErrorOf(Request("[5,1,2,2]", "[]")), HasSubstr("input 'image': batch of 5 exceeds model 'mlp' max_batch_size 4"));
}

// A binary-extension request body: JSON header of `json_size` bytes whose
// input declares `declared` bytes, followed by `values` as raw FP32.
std::string BinaryBody(const std::vector<float>& values, size_t declared, size_t* json_size) {
  const std::string json = absl::StrCat(
      R"({"inputs":[{"name":"image","datatype":"FP32","shape":[1,1,2,2],"parameters":{"binary_data_size":)",
      declared, R"(}}],"outputs":[{"name":"logits","parameters":{"binary_data":true}}]})");
  *json_size = json.size();
  return json + std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
}

TEST(KserveJsonTest, BinaryTensorExtension) {
  size_t json_size = 0;
  const std::string body = BinaryBody({1.5f, -2, 3, 4}, 16, &json_size);
  absl::StatusOr<InferRequest> r = ParseInferRequest(body, Mlp(), json_size);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->data, (std::vector<float>{1.5f, -2, 3, 4}));
  EXPECT_TRUE(r->binary_output);

  const InferResponseBody resp = WriteInferResponse(Mlp(), 1, "", {{0.5f, 1, 2}}, "{}", /*binary_output=*/true);
  ASSERT_TRUE(resp.json_length.has_value());
  rapidjson::Document d;
  d.Parse(resp.body.data(), *resp.json_length);
  ASSERT_FALSE(d.HasParseError());
  EXPECT_EQ(d["outputs"][0]["parameters"]["binary_data_size"].GetInt(), 12);
  EXPECT_FALSE(d["outputs"][0].HasMember("data"));
  std::vector<float> out(3);
  ASSERT_EQ(resp.body.size() - *resp.json_length, 12u);
  std::memcpy(out.data(), resp.body.data() + *resp.json_length, 12);
  EXPECT_EQ(out, (std::vector<float>{0.5f, 1, 2}));
}

TEST(KserveJsonErrorTest, BinaryLengthsThatLie) {
  size_t json_size = 0;
  const std::string body = BinaryBody({1, 2, 3, 4}, 16, &json_size);
  EXPECT_THAT(ErrorOf(body, static_cast<int64_t>(body.size() + 1)),
              HasSubstr(absl::StrCat("Inference-Header-Content-Length is ", body.size() + 1, " but the body has ",
                                     body.size(), " bytes")));
  EXPECT_THAT(ErrorOf(body, -1), HasSubstr("Inference-Header-Content-Length is -1"));
  EXPECT_THAT(ErrorOf(body, static_cast<int64_t>(json_size - 3)), HasSubstr("malformed JSON"));
  EXPECT_THAT(ErrorOf(body, static_cast<int64_t>(json_size + 4)),
              HasSubstr("declares binary_data_size 16 but 12 bytes follow the JSON header"));
  EXPECT_THAT(ErrorOf(BinaryBody({1, 2, 3, 4}, 12, &json_size), static_cast<int64_t>(json_size)),
              HasSubstr("declares binary_data_size 12 but 16 bytes follow the JSON header"));
  EXPECT_THAT(ErrorOf(BinaryBody({1, 2, 3}, 12, &json_size), static_cast<int64_t>(json_size)),
              HasSubstr("has 12 bytes of binary data; shape [1, 1, 2, 2] of FP32 needs 16"));
  EXPECT_THAT(ErrorOf(BinaryBody({1, 2, 3, 4}, 16, &json_size)),
              HasSubstr("has 'binary_data_size' but the request has no Inference-Header-Content-Length"));
  EXPECT_THAT(ErrorOf(Request("[1,1,2,2]", "[1,2,3,4]") + "xyz", static_cast<int64_t>(Request("[1,1,2,2]", "[1,2,3,4]").size())),
              HasSubstr("3 bytes follow the JSON header but no input declares binary_data_size"));
}

TEST(KserveJsonTest, ClientSideRoundTripsThroughTheServerSide) {
  const std::vector<float> data = {0.25f, -1, 3.5f, 4, 5, 6, 7, 1e-7f};
  for (bool binary : {false, true}) {
    const EncodedInferRequest req = WriteInferRequest("image", {2, 1, 2, 2}, data, {.objective_ms = 7.5}, binary);
    EXPECT_EQ(req.json_length.has_value(), binary);
    absl::StatusOr<InferRequest> parsed = ParseInferRequest(req.body, Mlp(), req.json_length);
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(parsed->batch, 2);
    EXPECT_EQ(parsed->data, data);
    EXPECT_DOUBLE_EQ(parsed->objective_ms, 7.5);
    EXPECT_EQ(parsed->binary_output, binary);

    const InferResponseBody resp =
        WriteInferResponse(Mlp(), 1, "", {{0.5f, 1, 2}, {3, 4, 1e-8f}},
                           R"({"tutti_emulated":true,"tutti_server_us":1234.5})", binary);
    absl::StatusOr<InferResponse> answer = ParseInferResponse(resp.body, resp.json_length);
    ASSERT_TRUE(answer.ok()) << answer.status();
    EXPECT_TRUE(answer->emulated);
    EXPECT_EQ(answer->server_time, Micros(1234.5));
    EXPECT_EQ(answer->output, (std::vector<float>{0.5f, 1, 2, 3, 4, 1e-8f}));
  }
  EXPECT_FALSE((*ParseInferResponse(R"({"outputs":[{"data":[1]}]})", std::nullopt)).server_time.has_value());
  EXPECT_THAT(ParseInferResponse("{}", std::nullopt).status().message(), HasSubstr("no outputs"));
  // A binary output of no values (UndefinedBehaviorSanitizer once caught a
  // memcpy from a null pointer here).
  const std::string empty = R"({"outputs":[{"name":"logits","parameters":{"binary_data_size":0}}]})";
  absl::StatusOr<InferResponse> none = ParseInferResponse(empty, empty.size());
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_TRUE(none->output.empty());
  EXPECT_THAT(ParseInferResponse("nope", std::nullopt).status().message(), HasSubstr("not a JSON object"));
}

TEST(KserveJsonTest, ResponseAndMetadataAreValidJson) {
  const InferResponseBody body = WriteInferResponse(Mlp(), 1, "r1", {{0.5f, 1.0f, 2.0f}, {3.0f, 4.0f, 5.0f}},
                                                    R"({"tutti_emulated":true})");
  EXPECT_FALSE(body.json_length.has_value());
  const std::string& resp = body.body;
  rapidjson::Document d;
  d.Parse(resp.c_str());
  ASSERT_FALSE(d.HasParseError()) << resp;
  EXPECT_STREQ(d["model_name"].GetString(), "mlp");
  EXPECT_STREQ(d["model_version"].GetString(), "1");
  EXPECT_STREQ(d["id"].GetString(), "r1");
  EXPECT_TRUE(d["parameters"]["tutti_emulated"].GetBool());
  const auto& out = d["outputs"][0];
  EXPECT_STREQ(out["name"].GetString(), "logits");
  EXPECT_EQ(out["shape"][0].GetInt(), 2);
  EXPECT_EQ(out["shape"][1].GetInt(), 3);
  EXPECT_EQ(out["data"].Size(), 6u);
  EXPECT_DOUBLE_EQ(out["data"][5].GetDouble(), 5.0);

  d.Parse(WriteModelMetadata(Mlp(), {1, 2}).c_str());
  ASSERT_FALSE(d.HasParseError());
  EXPECT_STREQ(d["inputs"][0]["datatype"].GetString(), "FP32");
  EXPECT_EQ(d["inputs"][0]["shape"][0].GetInt(), -1);
  EXPECT_STREQ(d["versions"][1].GetString(), "2");
  d.Parse(WriteError("bad \"quote\"\n").c_str());
  EXPECT_STREQ(d["error"].GetString(), "bad \"quote\"\n");
  d.Parse(WriteServerMetadata().c_str());
  EXPECT_STREQ(d["name"].GetString(), "tutti");
}

// Hostile input: each a regression test.

TEST(KserveJsonErrorTest, DeeplyNestedJsonIsRefusedNotRecursedInto) {
  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  EXPECT_THAT(ErrorOf(deep), HasSubstr("JSON nested deeper than 64 levels"));
  EXPECT_THAT(ErrorOf(R"({"inputs":)" + std::string(100, '[')), HasSubstr("nested deeper"));
  // Brackets inside strings are not nesting.
  absl::StatusOr<InferRequest> r =
      ParseInferRequest(Request("[1,1,2,2]", "[1,2,3,4]", "FP32", "image", R"("x":")" + std::string(100, '[') + R"(",)"),
                        Mlp());
  EXPECT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(ParseInferResponse(std::string(100000, '['), std::nullopt).status().message(),
              HasSubstr("nested deeper"));
}

TEST(KserveJsonTest, NanAndInfinityOutputsAreWrittenAsTritonDoes) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const InferResponseBody body = WriteInferResponse(Mlp(), 1, "", {{nan, inf, -inf}}, "{}");
  EXPECT_THAT(body.body, HasSubstr(R"("data":[NaN,Infinity,-Infinity])"));
  // Read back (as Triton's clients and Python's json read them).
  absl::StatusOr<InferResponse> back = ParseInferResponse(body.body, std::nullopt);
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ(back->output.size(), 3u);
  EXPECT_TRUE(std::isnan(back->output[0]));
  EXPECT_EQ(back->output[1], inf);
  EXPECT_EQ(back->output[2], -inf);
}

// A request is JSON as RFC 8259 has it: NaN and Infinity are refused, with
// the way to send them; so are binary sizes that are not integers.
TEST(KserveJsonTest, StrictInput) {
  for (const char* data : {"[NaN,1,2,3]", "[1,Infinity,2,3]", "[1,2,-Infinity,3]"}) {
    EXPECT_THAT(ErrorOf(Request("[1,1,2,2]", data)), HasSubstr("NaN and Infinity are not JSON")) << data;
  }
  for (const char* size : {"null", "\"16\"", "16.5", "-16", "true"}) {
    const std::string body = absl::StrCat(R"({"inputs":[{"name":"image","datatype":"FP32","shape":[1,1,2,2],)",
                                          R"("parameters":{"binary_data_size":)", size, "}}]}");
    EXPECT_THAT(ErrorOf(body + std::string(16, '\0'), body.size()), HasSubstr("must be a non-negative integer"))
        << size;
  }
}

TEST(KserveJsonTest, TextFromTheRequestGoesBackAsValidUtf8) {
  const std::string id = "bad\xFF\xC0id";
  const InferResponseBody body = WriteInferResponse(Mlp(), 1, id, {{1, 2, 3}}, "{}");
  rapidjson::Document d;
  d.Parse<rapidjson::kParseValidateEncodingFlag>(body.body.c_str());
  ASSERT_FALSE(d.HasParseError()) << body.body;
  EXPECT_STREQ(d["id"].GetString(), "bad\xEF\xBF\xBD\xEF\xBF\xBDid");
  const std::string error = WriteError("unknown model 'x\xFE'");
  d.Parse<rapidjson::kParseValidateEncodingFlag>(error.c_str());
  ASSERT_FALSE(d.HasParseError()) << error;
}

TEST(KserveJsonErrorTest, ObjectivesOutsideOneMicrosecondToADayAreRefused) {
  auto with = [](const std::string& ms) {
    return Request("[1,1,2,2]", "[1,2,3,4]", "FP32", "image",
                   absl::StrCat(R"("parameters":{"latency_objective_ms":)", ms, "},"));
  };
  for (const char* bad : {"1e-300", "0.0009", "0", "1e15", "86400001", "-5", "\"7\""}) {
    EXPECT_THAT(ErrorOf(with(bad)), HasSubstr("must be a positive number of milliseconds, from 0.001")) << bad;
  }
  for (const char* good : {"0.001", "86400000", "20"}) {
    EXPECT_TRUE(ParseInferRequest(with(good), Mlp()).ok()) << good;
  }
}

TEST(KserveJsonTest, ServerMetadataListsItsExtensions) {
  rapidjson::Document d;
  d.Parse(WriteServerMetadata().c_str());
  ASSERT_TRUE(d["extensions"].IsArray());
  ASSERT_EQ(d["extensions"].Size(), 5u);
  EXPECT_STREQ(d["extensions"][0].GetString(), "binary_tensor_data");
  EXPECT_STREQ(d["extensions"][1].GetString(), "sequence");
  EXPECT_STREQ(d["extensions"][2].GetString(), "model_repository");
  EXPECT_STREQ(d["extensions"][3].GetString(), "model_configuration");
  EXPECT_STREQ(d["extensions"][4].GetString(), "statistics");
}

// Triton's model configuration JSON: a stateful step's sequence batching
// with its implicit state, a graph's steps, Tutti's fields as parameters.
TEST(KserveJsonTest, QueuePoliciesInTritonsShape) {
  ModelConfig config = Mlp();
  config.priority_levels = 2;
  config.default_priority_level = 2;
  config.default_queue_policy = QueuePolicy{.default_timeout_us = 5000, .allow_timeout_override = true};
  config.priority_queue_policy[1] = QueuePolicy{.max_queue_size = 8};
  rapidjson::Document d;
  d.Parse(WriteModelConfig(config).c_str());
  ASSERT_FALSE(d.HasParseError());
  const auto& b = d["dynamic_batching"];
  EXPECT_EQ(b["priority_levels"].GetInt(), 2);
  EXPECT_STREQ(b["default_queue_policy"]["timeout_action"].GetString(), "REJECT");
  EXPECT_EQ(b["default_queue_policy"]["default_timeout_microseconds"].GetInt(), 5000);
  EXPECT_TRUE(b["default_queue_policy"]["allow_timeout_override"].GetBool());
  EXPECT_EQ(b["priority_queue_policy"]["1"]["max_queue_size"].GetInt(), 8);
  EXPECT_FALSE(b["priority_queue_policy"].HasMember("2"));
}

TEST(KserveJsonTest, ModelConfigInTritonsShape) {
  ModelConfig gru;
  gru.name = "gru";
  gru.platform = Platform::kBuiltin;
  gru.architecture = "gru_rows";
  gru.task = "fashion_mnist";
  gru.max_batch_size = 32;
  gru.inputs = {{"rows", DataType::kFp32, {4, 28}}};
  gru.outputs = {{"logits", DataType::kFp32, {10}}};
  gru.latency_objective_ms = 50;
  gru.max_queue_delay_us = 500;
  gru.sequence_batching = SequenceBatching{};
  gru.sequence_batching->max_sequence_idle_us = 2'000'000;
  gru.sequence_batching->state_shape = {64};
  rapidjson::Document d;
  d.Parse(WriteModelConfig(gru).c_str());
  ASSERT_FALSE(d.HasParseError());
  EXPECT_STREQ(d["name"].GetString(), "gru");
  EXPECT_EQ(d["max_batch_size"].GetInt(), 32);
  EXPECT_STREQ(d["input"][0]["name"].GetString(), "rows");
  EXPECT_STREQ(d["input"][0]["data_type"].GetString(), "TYPE_FP32");
  ASSERT_EQ(d["input"][0]["dims"].Size(), 2u);  // no batch dimension
  EXPECT_EQ(d["input"][0]["dims"][1].GetInt(), 28);
  EXPECT_EQ(d["output"][0]["dims"][0].GetInt(), 10);
  EXPECT_FALSE(d.HasMember("dynamic_batching"));  // one of the two, as in Triton
  EXPECT_EQ(d["sequence_batching"]["oldest"]["max_queue_delay_microseconds"].GetInt(), 500);
  EXPECT_EQ(d["sequence_batching"]["max_sequence_idle_microseconds"].GetInt(), 2'000'000);
  EXPECT_STREQ(d["sequence_batching"]["state"][0]["input_name"].GetString(), "state_in");
  EXPECT_EQ(d["sequence_batching"]["state"][0]["dims"][0].GetInt(), 64);
  EXPECT_STREQ(d["parameters"]["task"]["string_value"].GetString(), "fashion_mnist");
  EXPECT_STREQ(d["parameters"]["latency_objective_ms"]["string_value"].GetString(), "50");
  EXPECT_FALSE(d.HasMember("ensemble_scheduling"));

  ModelConfig graph;
  graph.name = "pipeline";
  graph.platform = Platform::kEnsemble;
  graph.inputs = gru.inputs;
  graph.outputs = gru.outputs;
  EnsembleStep step;
  step.model_name = "gru";
  step.input_map = {{"rows", "rows"}};
  step.output_map = {{"logits", "logits"}};
  graph.steps = {step};
  d.Parse(WriteModelConfig(graph).c_str());
  ASSERT_FALSE(d.HasParseError());
  EXPECT_FALSE(d.HasMember("sequence_batching"));
  EXPECT_FALSE(d.HasMember("dynamic_batching"));
  const rapidjson::Value& s = d["ensemble_scheduling"]["step"][0];
  EXPECT_STREQ(s["model_name"].GetString(), "gru");
  EXPECT_EQ(s["model_version"].GetInt(), -1);
  EXPECT_STREQ(s["output_map"]["logits"].GetString(), "logits");
}

}  // namespace
}  // namespace tutti
