// The console's samples (a pure function of two readings), its routes,
// access control and event stream over a real listener.
#include <memory>

#include "absl/strings/escaping.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rapidjson/document.h"
#include "tutti/frontend/console_feed.h"
#include "tutti/frontend/frontend_server.h"
#include "tutti/testing/frontend_fixture.h"
#include "tutti/core/prometheus.h"
#include "tutti/testing/http_test_client.h"

namespace tutti {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::HttpTestClient;

TEST(BucketQuantileTest, InterpolatesInsideTheBucketLikePrometheus) {
  const std::vector<double> bounds = {1, 2, 4};
  // 10 values ≤ 1, 10 in (1, 2], 0 in (2, 4], 0 above.
  const std::vector<int64_t> buckets = {10, 10, 0, 0};
  EXPECT_DOUBLE_EQ(*BucketQuantile(bounds, buckets, 0.25), 0.5);
  EXPECT_DOUBLE_EQ(*BucketQuantile(bounds, buckets, 0.75), 1.5);
  EXPECT_DOUBLE_EQ(*BucketQuantile(bounds, buckets, 1.0), 2.0);
  EXPECT_FALSE(BucketQuantile(bounds, {0, 0, 0, 0}, 0.5).has_value());
  // In the +Inf bucket: the last bound.
  EXPECT_DOUBLE_EQ(*BucketQuantile(bounds, {0, 0, 0, 5}, 0.5), 4.0);
}

// Two readings a second apart: 100 ended requests of which 10 late, 5
// dropped, 2 refused; executor 0 busy half the second, executor 1 idle.
TEST(ConsoleSampleTest, RatesQuantilesBusyAndAdviceOverTheInterval) {
  const std::vector<double> latency_bounds = PromHistogram::LatencyBounds();
  const std::vector<double> batch_bounds = PromHistogram::BatchBounds();
  ConsoleContext context{{"mlp"}, {Millis(20)}, R"({"mode":"embedded"})"};
  ConsoleReading before;
  before.at = 10 * kSecond;
  before.models.resize(1);
  before.models[0].counters.good = 1000;  // before the interval: not counted
  before.models[0].latency_buckets.assign(latency_bounds.size() + 1, 0);
  before.models[0].batch_buckets.assign(batch_bounds.size() + 1, 0);
  before.models[0].latency_buckets[0] = 1000;
  before.busy = {Millis(100), Millis(300)};
  ConsoleReading now = before;
  now.at = 11 * kSecond;
  now.models[0].counters.good += 85;
  now.models[0].counters.late = 10;
  now.models[0].counters.dropped = 5;
  now.models[0].rejected = 2;
  // The 95 answered items all took between the bounds around 10 ms.
  const size_t ten_ms = std::lower_bound(latency_bounds.begin(), latency_bounds.end(), 0.010) - latency_bounds.begin();
  now.models[0].latency_buckets[ten_ms] += 95;
  now.models[0].batch_buckets[3] += 95;  // batches of 5..8
  now.busy = {Millis(600), Millis(300)};
  now.batches = {BatchTrace{.executor = 0, .model = 0, .size = 8, .decided = now.at - Millis(30),
                            .planned_start = now.at - Millis(29), .planned_end = now.at - Millis(19),
                            .started = now.at - Millis(28), .finished = now.at - Millis(17)}};

  rapidjson::Document d;
  d.Parse(ConsoleSampleJson(context, before, now).c_str());
  ASSERT_FALSE(d.HasParseError());
  EXPECT_DOUBLE_EQ(d["period_s"].GetDouble(), 1.0);
  const auto& m = d["models"][0];
  EXPECT_STREQ(m["name"].GetString(), "mlp");
  EXPECT_DOUBLE_EQ(m["objective_ms"].GetDouble(), 20);
  EXPECT_DOUBLE_EQ(m["offered_rps"].GetDouble(), 102);
  EXPECT_DOUBLE_EQ(m["goodput_rps"].GetDouble(), 85);
  EXPECT_DOUBLE_EQ(m["late_rps"].GetDouble(), 10);
  EXPECT_DOUBLE_EQ(m["dropped_rps"].GetDouble(), 5);
  EXPECT_DOUBLE_EQ(m["rejected_rps"].GetDouble(), 2);
  // p99 inside the 10 ms bucket, not among the 1000 fast ones before.
  EXPECT_GT(m["p99_ms"].GetDouble(), latency_bounds[ten_ms - 1] * 1e3);
  EXPECT_LE(m["p99_ms"].GetDouble(), latency_bounds[ten_ms] * 1e3 + 1e-3);
  EXPECT_EQ(m["batch_sizes"][3][1].GetInt64(), 95);
  EXPECT_DOUBLE_EQ(m["batch_sizes"][3][0].GetDouble(), 8);
  EXPECT_DOUBLE_EQ(d["executors"][0]["busy"].GetDouble(), 0.5);
  EXPECT_DOUBLE_EQ(d["executors"][1]["busy"].GetDouble(), 0);
  const auto& b = d["batches"][0];
  EXPECT_EQ(b[2].GetInt(), 8);
  EXPECT_DOUBLE_EQ(b[4].GetDouble(), -29);  // planned start, ms before now
  EXPECT_DOUBLE_EQ(b[7].GetDouble(), -17);  // finished
  const auto& c = d["cluster"];
  EXPECT_EQ(c["in_use"].GetInt(), 1);
  EXPECT_NEAR(c["bad_rate"].GetDouble(), 0.15, 1e-9);
  EXPECT_DOUBLE_EQ(c["idle_fraction"].GetDouble(), 0.75);
  // Symphony: bad rate 15% > 1% → add 2 × 0.15 / 0.85 → 1 GPU (rounded up).
  EXPECT_GE(c["advice"]["add"].GetInt(), 1);
  EXPECT_STREQ(c["process"]["mode"].GetString(), "embedded");
  EXPECT_EQ(d["slow_traces"].Size(), 0u);

  // The slowest traced requests, linked to their traces where a link is set.
  now.slowest = {{"0af7651916cd43dd8448eb211c80319c", "infer mlp", Millis(42), "late"}};
  for (const std::string link : {"", "http://jaeger:16686/trace/{trace_id}"}) {
    context.trace_link = link;
    d.Parse(ConsoleSampleJson(context, before, now).c_str());
    ASSERT_FALSE(d.HasParseError());
    const auto& t = d["slow_traces"][0];
    EXPECT_STREQ(t["trace_id"].GetString(), "0af7651916cd43dd8448eb211c80319c");
    EXPECT_STREQ(t["name"].GetString(), "infer mlp");
    EXPECT_DOUBLE_EQ(t["ms"].GetDouble(), 42);
    EXPECT_STREQ(t["error"].GetString(), "late");
    EXPECT_STREQ(t["url"].GetString(),
                 link.empty() ? "" : "http://jaeger:16686/trace/0af7651916cd43dd8448eb211c80319c");
  }
}

class ConsoleServiceTest : public testing::FakeEngineFrontendTest {
 protected:
  void Start(AccessOptions access = {}, Tracer* tracer = nullptr) {
    FrontendOptions options;
    options.http.port = 0;
    options.grpc.port = -1;
    options.frontend.access = std::move(access);
    options.frontend.tracer = tracer;
    options.console.period = Millis(20);
    options.console.cluster = [] { return std::string(R"({"mode":"test"})"); };
    server_ = *FrontendServer::Start(engine_.get(), {{config_, 1}}, options);
  }
  void TearDown() override {
    if (server_) server_->Shutdown();
  }
  std::unique_ptr<FrontendServer> server_;
};

TEST_F(ConsoleServiceTest, ServesTheSelfContainedPage) {
  Start();
  HttpTestClient client(server_->port());
  testing::ClientResponse r = client.Request("GET", "/console");
  EXPECT_EQ(r.status, 200);
  EXPECT_THAT(r.content_type, HasSubstr("text/html"));
  EXPECT_THAT(r.body, HasSubstr("<title>Tutti console</title>"));
  EXPECT_THAT(r.body, HasSubstr("uPlot"));               // the charting library, inline
  EXPECT_THAT(r.body, HasSubstr("/console/events"));     // the live feed it draws
  EXPECT_THAT(r.body, Not(HasSubstr("{{")));             // every placeholder filled
  EXPECT_THAT(r.body, Not(HasSubstr("src=\"http")));     // nothing fetched from elsewhere
  EXPECT_EQ(client.Request("POST", "/console").status, 405);
  // Other paths still reach the KServe routes.
  EXPECT_EQ(client.Request("GET", "/v2/models/mlp").status, 200);
}

TEST_F(ConsoleServiceTest, StreamsSamplesAsServerSentEventsAndClosesOnShutdown) {
  Start();
  HttpTestClient client(server_->port());
  client.SendRaw("GET /console/events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  const std::string first = client.ReadUntil("}\n\n");  // the first sample's end
  EXPECT_THAT(first, HasSubstr("HTTP/1.1 200"));
  EXPECT_THAT(first, HasSubstr("Content-Type: text/event-stream"));
  EXPECT_THAT(first, HasSubstr("retry: 1000"));
  const size_t data = first.find("data: ", first.find("event: sample"));
  ASSERT_NE(data, std::string::npos);
  rapidjson::Document d;
  d.Parse(first.substr(data + 6, first.find("\n", data) - data - 6).c_str());
  ASSERT_FALSE(d.HasParseError()) << first;
  EXPECT_STREQ(d["models"][0]["name"].GetString(), "mlp");
  EXPECT_STREQ(d["cluster"]["process"]["mode"].GetString(), "test");
  // A graceful shutdown ends the stream rather than waiting for it.
  StopEngine();
  server_->Shutdown();
  client.ReadUntilClosed();
  server_.reset();
}

struct NoExport : SpanExporter {
  absl::Status Export(const std::string&) override { return absl::OkStatus(); }
};

// A traced request comes back in a later sample, with the link to its trace.
TEST_F(ConsoleServiceTest, ASampleLinksTheSlowestTracedRequestsToTheirTraces) {
  TracerOptions o;
  o.link = "http://jaeger:16686/trace/{trace_id}";
  std::vector<std::unique_ptr<SpanExporter>> exporters;
  exporters.push_back(std::make_unique<NoExport>());
  Tracer tracer(o, &clock_, std::move(exporters));
  Start({}, &tracer);
  HttpTestClient events(server_->port());
  events.SendRaw("GET /console/events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  events.ReadUntil("}\n\n");  // a first sample: the next is read after the request
  HttpTestClient client(server_->port());
  const std::string body = R"({"inputs":[{"name":"image","datatype":"FP32","shape":[1,1,2,2],"data":[1,2,3,4]}]})";
  ASSERT_EQ(client.Request("POST", "/v2/models/mlp/infer", body,
                           {{"traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}})
                .status,
            200);
  const std::string linked = events.ReadUntil("/trace/0af7651916cd43dd8448eb211c80319c\"");
  EXPECT_THAT(linked, HasSubstr(R"("trace_id":"0af7651916cd43dd8448eb211c80319c","name":"infer mlp")"));
  StopEngine();
  server_->Shutdown();
  events.ReadUntilClosed();
  server_.reset();
}

TEST_F(ConsoleServiceTest, NeedsAdminCredentialsWhichBrowsersGiveAsBasic) {
  const std::string admin = "admin-token-0123456789abcdef", inference = "inference-token-0123456789";
  Start({{inference}, {admin}});
  HttpTestClient client(server_->port());
  testing::ClientResponse r = client.Request("GET", "/console");
  EXPECT_EQ(r.status, 401);
  EXPECT_EQ(client.Request("GET", "/console/events").status, 401);
  auto basic = [](const std::string& token) {
    return std::vector<std::pair<std::string, std::string>>{
        {"Authorization", "Basic " + absl::Base64Escape("operator:" + token)}};
  };
  EXPECT_EQ(client.Request("GET", "/console", "", basic(inference)).status, 403);
  EXPECT_EQ(client.Request("GET", "/console", "", basic("wrong-token-0123456789")).status, 401);
  EXPECT_EQ(client.Request("GET", "/console", "", basic(admin)).status, 200);
  EXPECT_EQ(client.Request("GET", "/console", "", {{"Authorization", "Bearer " + admin}}).status, 200);
  EXPECT_EQ(client.Request("GET", "/console", "", {{"Authorization", "Basic !!notbase64"}}).status, 401);
}

}  // namespace
}  // namespace tutti
