// Tracing end to end: a graph served over HTTP and gRPC, its spans read
// back from the exported OTLP/JSON file.
#include <fstream>
#include <map>
#include <set>

#include <grpcpp/grpcpp.h>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rapidjson/document.h"
#include "tutti/core/real_clock.h"
#include "tutti/proto/grpc_predict_v2.grpc.pb.h"
#include "tutti/server/fixture_server_test_util.h"
#include "tutti/server/server.h"
#include "tutti/testing/http_test_client.h"
#include "tutti/testing/span_file.h"
#include "tutti/testing/temp_dir.h"

namespace tutti {
namespace {

using ::testing::ElementsAre;
using ::testing::UnorderedElementsAre;

using testing::Children;
using testing::ReadSpan;
using testing::ReadSpans;

const ReadSpan* Find(const std::map<std::string, ReadSpan>& spans, const std::string& parent, const std::string& name) {
  for (const auto& [id, s] : spans) {
    if (s.parent == parent && s.name == name) return &s;
  }
  return nullptr;
}

constexpr char kCaller[] = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
constexpr char kCallerTrace[] = "0af7651916cd43dd8448eb211c80319c";
constexpr char kCallerSpan[] = "b7ad6b7169203331";
constexpr char kGrpcCaller[] = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

TEST(TracingServerTest, AGraphRequestsSpansNestFromTheCallerToEachStepsBatch) {
  testing::TempDir dir;
  testing::WritePairGraph(dir, 1000, 2000, 2000, 3000, 500);
  const std::string file = dir.path() + "/spans.jsonl";
  absl::StatusOr<ModelRepository> repo = ModelRepository::Open(dir.path());
  ASSERT_TRUE(repo.ok()) << repo.status();
  absl::StatusOr<ServerConfig> config = ParseServerConfig(absl::StrCat(R"(
http: {port: 0}
grpc: {port: 0}
policy: eager
tracing: {sampling_ratio: 0, file: )", file, R"(}
executors:
  - {kind: emulated, count: 1, profile: a100, models: [first, second]}
)"));
  ASSERT_TRUE(config.ok()) << config.status();
  config = ResolveServerConfig(*config, *repo);
  ASSERT_TRUE(config.ok()) << config.status();
  RealClock clock;
  {
    absl::StatusOr<std::unique_ptr<Server>> server = Server::Start(*repo, *config, &clock);
    ASSERT_TRUE(server.ok()) << server.status();
    testing::HttpTestClient c((*server)->port());
    const std::string body = R"({"inputs":[{"name":"image","datatype":"FP32","shape":[1,4],"data":[1,2,3,4]}]})";
    // The caller samples it; then one the caller does not, and one with no
    // traceparent at a ratio of 0: neither is traced.
    ASSERT_EQ(c.Request("POST", "/v2/models/pair/infer", body, {{"traceparent", kCaller}}).status, 200);
    ASSERT_EQ(c.Request("POST", "/v2/models/pair/infer", body,
                        {{"traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00"}})
                  .status,
              200);
    ASSERT_EQ(c.Request("POST", "/v2/models/pair/infer", body).status, 200);
    // Dropped: its objective is below the first step's compute.
    ASSERT_EQ(c.Request("POST", "/v2/models/pair/infer",
                        R"({"inputs":[{"name":"image","datatype":"FP32","shape":[1,4],"data":[1,2,3,4]}],)"
                        R"("parameters":{"latency_objective_ms":0.5}})",
                        {{"traceparent", "00-11111111111111111111111111111111-2222222222222222-01"}})
                  .status,
              503);
    // Over gRPC, with its metadata.
    auto stub = inference::GRPCInferenceService::NewStub(grpc::CreateChannel(
        absl::StrCat("127.0.0.1:", (*server)->grpc_port()), grpc::InsecureChannelCredentials()));
    const inference::ModelInferRequest request = testing::PairImageRequest("first");
    inference::ModelInferResponse response;
    grpc::ClientContext context;
    context.AddMetadata("traceparent", kGrpcCaller);
    ASSERT_TRUE(stub->ModelInfer(&context, request, &response).ok());
  }  // stopping the server exports what is left

  const std::map<std::string, ReadSpan> spans = ReadSpans(file);
  std::set<std::string> traces;
  for (const auto& [id, s] : spans) traces.insert(s.trace);
  EXPECT_THAT(traces, UnorderedElementsAre(kCallerTrace, "4bf92f3577b34da6a3ce929d0e0e4736",
                                           "11111111111111111111111111111111"));

  // HTTP: the caller's span → the request → its steps → their batches.
  ASSERT_THAT(Children(spans, kCallerSpan), ElementsAre("infer pair"));
  const ReadSpan* root = Find(spans, kCallerSpan, "infer pair");
  EXPECT_EQ(root->kind, 2);  // SERVER
  EXPECT_EQ(root->status, 1);
  EXPECT_THAT(Children(spans, root->id), UnorderedElementsAre("step first", "step second", "respond"));
  const ReadSpan* first = Find(spans, root->id, "step first");
  const ReadSpan* second = Find(spans, root->id, "step second");
  EXPECT_LE(first->end, second->start);  // one after the other
  for (const ReadSpan* step : {first, second}) {
    EXPECT_THAT(Children(spans, step->id), UnorderedElementsAre("queue", "compute"));
    const ReadSpan* compute = Find(spans, step->id, "compute");
    EXPECT_GE(compute->start, step->start);
    EXPECT_LE(compute->end, step->end);
    EXPECT_GE(step->start, root->start);
    EXPECT_LE(step->end, root->end);
    EXPECT_EQ(compute->trace, kCallerTrace);
  }
  // gRPC: a plain model's request, its batch directly under it.
  ASSERT_THAT(Children(spans, "00f067aa0ba902b7"), ElementsAre("infer first"));
  EXPECT_THAT(Children(spans, Find(spans, "00f067aa0ba902b7", "infer first")->id),
              UnorderedElementsAre("queue", "compute", "respond"));
  // Dropped: the request's span, and its first step's, say why.
  ASSERT_THAT(Children(spans, "2222222222222222"), ElementsAre("infer pair"));
  const ReadSpan* dropped = Find(spans, "2222222222222222", "infer pair");
  EXPECT_EQ(dropped->status, 2);  // ERROR
  const std::vector<std::string> steps = Children(spans, dropped->id);
  ASSERT_THAT(steps, ElementsAre("step first"));
  EXPECT_EQ(Find(spans, dropped->id, "step first")->status, 2);
  EXPECT_EQ(spans.size(), (1u + 3 + 2 * 2) + (1 + 3) + (1 + 1 + 1));
}

}  // namespace
}  // namespace tutti
