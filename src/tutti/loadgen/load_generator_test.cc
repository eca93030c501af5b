#include "tutti/loadgen/load_generator.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "absl/strings/str_format.h"
#include "rapidjson/document.h"
#include "tutti/core/real_clock.h"
#include "tutti/server/server.h"
#include "tutti/testing/temp_dir.h"

namespace tutti {
namespace {

using ::testing::HasSubstr;
using ::tutti::testing::TempDir;

// A server with two emulated models: "fast" (ℓ(b) = 1 ms + 0.1 ms·b) and
// "image" (28×28 input, 10 outputs; ℓ(b) = 2 ms + 0.1 ms·b), 2 GPUs each.
class LoadGeneratorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_.WriteFile("fast/1/config.yaml", R"(name: fast
platform: emulated
max_batch_size: 16
inputs: [{name: input, datatype: FP32, shape: [8]}]
outputs: [{name: out, datatype: FP32, shape: [2]}]
profiles: {a100: {batch: [1, 16], latency_us: [1100, 2600]}}
)");
    dir_.WriteFile("image/1/config.yaml", R"(name: image
platform: emulated
task: toy
accuracy: 0.8
max_batch_size: 16
inputs: [{name: image, datatype: FP32, shape: [1, 28, 28]}]
outputs: [{name: logits, datatype: FP32, shape: [10]}]
profiles: {a100: {batch: [1, 16], latency_us: [2100, 3600]}}
)");
    dir_.WriteFile("image_hq/1/config.yaml", R"(name: image_hq
platform: emulated
task: toy
accuracy: 0.95
max_batch_size: 16
inputs: [{name: image, datatype: FP32, shape: [1, 28, 28]}]
outputs: [{name: logits, datatype: FP32, shape: [10]}]
profiles: {a100: {batch: [1, 16], latency_us: [4100, 5600]}}
)");
    repo_ = *ModelRepository::Open(dir_.path());
    ServerConfig config = *ParseServerConfig(R"(
http: {port: 0}
grpc: {port: 0}
executors:
  - {kind: emulated, count: 2, models: [fast]}
  - {kind: emulated, count: 2, models: [image]}
  - {kind: emulated, count: 1, models: [image_hq]}
)");
    server_ = *Server::Start(repo_, *ResolveServerConfig(config, repo_), &clock_);
    spec_.port = server_->port();
    spec_.models = {"fast", "image"};
    spec_.workload.arrival = ArrivalKind::kPoisson;
    spec_.workload.rate = 400;
    spec_.duration = Millis(1500);
    spec_.warmup = Millis(500);
    spec_.slo = Millis(50);
  }

  TempDir dir_;
  ModelRepository repo_;
  RealClock clock_;
  std::unique_ptr<Server> server_;
  LoadSpec spec_;
};

TEST(LoadReportTest, TheReportsDataIsJsonWithInfiniteLatenciesAsNull) {
  LoadResult r;
  r.window = 2 * kSecond;
  LoadModelResult m;
  m.metrics.name = "mo\"del";
  m.metrics.arrived = 100;
  m.metrics.good = 90;
  m.metrics.dropped = 10;  // p99 falls among the drops: infinite
  for (int i = 0; i < 90; ++i) m.metrics.latency.Record(Millis(5));
  r.models = {m};
  r.total = m;
  LoadGoodput search;
  search.rate = 40;
  search.probed = {{40, 40, Millis(6), 0, true}, {80, 45, kInfiniteFuture, 0.44, false}};
  rapidjson::Document d;
  d.Parse(LoadReportJson(r, Millis(20), &search).c_str());
  ASSERT_FALSE(d.HasParseError());
  EXPECT_DOUBLE_EQ(d["slo_ms"].GetDouble(), 20);
  EXPECT_DOUBLE_EQ(d["goodput_rps"].GetDouble(), 40);
  ASSERT_EQ(d["probes"].Size(), 2u);
  EXPECT_TRUE(d["probes"][0]["meets"].GetBool());
  EXPECT_TRUE(d["probes"][1]["p99_ms"].IsNull());
  const auto& row = d["result"]["models"][0];
  EXPECT_STREQ(row["name"].GetString(), "mo\"del");
  EXPECT_DOUBLE_EQ(row["sent_rps"].GetDouble(), 50);
  EXPECT_DOUBLE_EQ(row["goodput_rps"].GetDouble(), 45);
  EXPECT_NEAR(row["p50_ms"].GetDouble(), 5, 0.5);
  EXPECT_TRUE(row["p99_ms"].IsNull());
  EXPECT_EQ(d["result"]["models"].Size(), 2u);  // the model, then the total
  // Without a search: no goodput, no probes.
  d.Parse(LoadReportJson(r, Millis(20), nullptr).c_str());
  ASSERT_FALSE(d.HasParseError());
  EXPECT_TRUE(d["goodput_rps"].IsNull());
  EXPECT_EQ(d["probes"].Size(), 0u);
}

TEST_F(LoadGeneratorTest, EveryMeasuredRequestIsAccountedForOverHttpAndGrpc) {
  for (int variant = 0; variant < 3; ++variant) {  // HTTP binary, HTTP JSON, gRPC
    spec_.binary = variant == 0;
    spec_.protocol = variant == 2 ? LoadProtocol::kGrpc : LoadProtocol::kHttp;
    spec_.port = variant == 2 ? server_->grpc_port() : server_->port();
    absl::StatusOr<LoadResult> r = RunLoad(spec_);
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_EQ(r->models.size(), 2u);
    for (const LoadModelResult& m : r->models) {
      EXPECT_GT(m.metrics.arrived, 100) << m.metrics.name;  // ~200 per model in the 1 s window
      EXPECT_EQ(m.metrics.ended(), m.metrics.arrived);
      EXPECT_EQ(m.metrics.latency.count(), m.metrics.good + m.metrics.late);
      EXPECT_EQ(m.emulated, m.metrics.good + m.metrics.late);
      EXPECT_EQ(m.labelled, 0);  // emulated answers are never scored
      // Tutti's answers say how long the server held them: every late one
      // was late by the server or outside it.
      EXPECT_EQ(m.timed, m.metrics.good + m.metrics.late);
      EXPECT_EQ(m.server_late + m.client_late, m.metrics.late);
      EXPECT_EQ(m.outside.count(), m.timed);
    }
    EXPECT_EQ(r->total.metrics.arrived, r->models[0].metrics.arrived + r->models[1].metrics.arrived);
    // The timeline has every request sent, warm-up included, each in the
    // step of its send: those past the warm-up are the measured ones.
    ASSERT_LE(r->timeline.size(), 15u);
    const size_t warm = static_cast<size_t>(spec_.warmup / r->timeline_step);
    int64_t sent = 0, bad = 0;
    for (size_t i = warm; i < r->timeline.size(); ++i) {
      sent += r->timeline[i].sent;
      bad += r->timeline[i].bad;
    }
    EXPECT_EQ(sent, r->total.metrics.arrived);
    EXPECT_EQ(bad, r->total.metrics.late + r->total.metrics.error);
  }
}

// Triton's priority and timeout parameters go with every request and the
// server takes them (an ill-formed one would be answered 400); the results
// come per priority too, each request counted once.
TEST_F(LoadGeneratorTest, PrioritiesAndTimeoutsAreSentAndReportedPerPriority) {
  spec_.workload.priority_shares = {0.25, 0.75};
  spec_.timeout_share = 10;  // 500 ms: never reached here
  for (const LoadProtocol protocol : {LoadProtocol::kHttp, LoadProtocol::kGrpc}) {
    spec_.protocol = protocol;
    spec_.port = protocol == LoadProtocol::kGrpc ? server_->grpc_port() : server_->port();
    absl::StatusOr<LoadResult> r = RunLoad(spec_);
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_EQ(r->levels.size(), 2u);
    EXPECT_EQ(r->levels[0].metrics.name, "priority 1");
    EXPECT_EQ(r->levels[0].metrics.arrived + r->levels[1].metrics.arrived, r->total.metrics.arrived);
    EXPECT_GT(r->levels[1].metrics.arrived, 2 * r->levels[0].metrics.arrived);
    EXPECT_EQ(r->total.metrics.error, 0);
    EXPECT_EQ(r->levels[0].metrics.error + r->levels[1].metrics.error, 0);
  }
}

// Model-less load (INFaaS): "task:toy@0.9" asks for accuracy 0.9, which only
// image_hq has; "task:toy" asks for none. Every answer names its variant.
TEST_F(LoadGeneratorTest, ModelLessTargetsCountTheVariantsThatServedThem) {
  spec_.models = {"task:toy@0.9", "task:toy"};
  absl::StatusOr<LoadResult> r = RunLoad(spec_);
  ASSERT_TRUE(r.ok()) << r.status();
  const LoadModelResult& accurate = r->models[0];
  const int64_t answered = accurate.metrics.good + accurate.metrics.late;
  EXPECT_GT(answered, 100);
  EXPECT_EQ(accurate.asked_accuracy, 0.9);
  EXPECT_EQ(accurate.served_by, (std::map<std::string, int64_t>{{"image_hq", answered}}));
  const LoadModelResult& any = r->models[1];
  EXPECT_EQ(any.asked_accuracy, -1);
  int64_t served = 0;
  for (const auto& [variant, n] : any.served_by) {
    EXPECT_TRUE(variant == "image" || variant == "image_hq") << variant;
    served += n;
  }
  EXPECT_EQ(served, any.metrics.good + any.metrics.late);
  std::ostringstream report;
  PrintLoadResult(*r, report);
  EXPECT_THAT(report.str(), HasSubstr("served by image_hq 100.0%"));

  spec_.models = {"task:toy@2"};
  EXPECT_THAT(RunLoad(spec_).status().message(), HasSubstr("task:TASK@ACCURACY (0 to 1)"));
  spec_.models = {"task:nope"};
  EXPECT_THAT(RunLoad(spec_).status().message(), HasSubstr("for task 'nope'"));

  // The same over gRPC.
  spec_.models = {"task:toy@0.9"};
  spec_.protocol = LoadProtocol::kGrpc;
  spec_.port = server_->grpc_port();
  r = RunLoad(spec_);
  ASSERT_TRUE(r.ok()) << r.status();
  const int64_t grpc_answered = r->models[0].metrics.good + r->models[0].metrics.late;
  EXPECT_GT(grpc_answered, 100);
  EXPECT_EQ(r->models[0].served_by, (std::map<std::string, int64_t>{{"image_hq", grpc_answered}}));
  spec_.models = {"task:nope"};
  EXPECT_EQ(RunLoad(spec_).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(LoadGeneratorTest, AClosedLoopRunsLongerThanTheDrainTimeout) {
  spec_.concurrency = 2;  // per model, each answer sending the next
  spec_.duration = Millis(800);
  spec_.warmup = 0;
  spec_.drain_timeout = Millis(300);  // shorter than the run: it counts from the last send
  absl::StatusOr<LoadResult> r = RunLoad(spec_);
  ASSERT_TRUE(r.ok()) << r.status();
  for (const LoadModelResult& m : r->models) {
    // 2 at a time for 0.8 s; deferred answers a lone request near its 50 ms objective.
    EXPECT_GT(m.metrics.arrived, 20) << m.metrics.name;
    EXPECT_EQ(m.metrics.ended(), m.metrics.arrived);
  }
}

TEST_F(LoadGeneratorTest, ImpossibleObjectivesAreCountedAsErrors) {
  spec_.slo = Micros(500);  // below ℓ(1) of both models
  absl::StatusOr<LoadResult> r = RunLoad(spec_);
  ASSERT_TRUE(r.ok()) << r.status();
  for (const LoadModelResult& m : r->models) {
    EXPECT_EQ(m.metrics.error, m.metrics.arrived);
    EXPECT_EQ(m.errors.at("HTTP 503"), m.metrics.arrived);
  }
  EXPECT_EQ(r->Goodput(), 0);
  // Every step is all bad, and its CSV line says so.
  ASSERT_FALSE(r->timeline.empty());
  for (const LoadResult::Step& step : r->timeline) EXPECT_EQ(step.bad, step.sent);
  TempDir out;
  ASSERT_TRUE(WriteLoadTimelineCsv(*r, out.path() + "/t.csv").ok());
  std::stringstream read;
  read << std::ifstream(out.path() + "/t.csv").rdbuf();
  const std::string csv = read.str();
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), static_cast<long>(r->timeline.size()) + 1);
  EXPECT_THAT(csv, HasSubstr(absl::StrFormat("%.3f,%d,%d\n", r->started_unix / 1e9, r->timeline[0].sent,
                                             r->timeline[0].sent)));
  spec_.protocol = LoadProtocol::kGrpc;
  spec_.port = server_->grpc_port();
  r = RunLoad(spec_);
  ASSERT_TRUE(r.ok()) << r.status();
  for (const LoadModelResult& m : r->models) {
    EXPECT_EQ(m.errors.at("gRPC DEADLINE_EXCEEDED"), m.metrics.arrived);
  }
}

TEST_F(LoadGeneratorTest, ClearErrorsForUnknownModelsAndNoServer) {
  spec_.models = {"vgg"};
  absl::StatusOr<LoadResult> r = RunLoad(spec_);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("answered 404 for model 'vgg'"));
  spec_.protocol = LoadProtocol::kGrpc;
  spec_.port = server_->grpc_port();
  r = RunLoad(spec_);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("does not serve 'vgg'"));
  spec_.protocol = LoadProtocol::kHttp;
  const int port = server_->port();
  server_.reset();
  spec_.port = port;
  spec_.models = {"fast"};
  r = RunLoad(spec_);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("cannot connect"));
}

}  // namespace
}  // namespace tutti
