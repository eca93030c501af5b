#include "tutti/tracing/tracer.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <future>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "rapidjson/document.h"
#include "tutti/core/manual_clock.h"

namespace tutti {
namespace {

class Capture final : public SpanExporter {
 public:
  explicit Capture(std::vector<std::string>* out) : out_(out) {}
  absl::Status Export(const std::string& json) override {
    out_->push_back(json);
    return absl::OkStatus();
  }

 private:
  std::vector<std::string>* const out_;
};

std::vector<std::unique_ptr<SpanExporter>> Exporters(std::vector<std::string>* out) {
  std::vector<std::unique_ptr<SpanExporter>> e;
  e.push_back(std::make_unique<Capture>(out));
  return e;
}

TracerOptions Options(double ratio) {
  TracerOptions o;
  o.sampling_ratio = ratio;
  o.flush_interval = 3600 * kSecond;  // the tests flush
  return o;
}

TEST(TracerTest, SamplingFollowsTheParentElseTheRatio) {
  ManualClock clock(0);
  std::vector<std::string> out;
  Tracer never(Options(0), &clock, Exporters(&out));
  Tracer always(Options(1), &clock, Exporters(&out));
  EXPECT_FALSE(never.StartRequest(std::nullopt).recording());
  const TraceContext root = always.StartRequest(std::nullopt);
  EXPECT_TRUE(root.recording());
  EXPECT_EQ(root.parent_id, 0u);

  TraceContext parent;
  parent.trace_id = NewTraceId();
  parent.span_id = 42;
  parent.sampled = true;
  const TraceContext joined = never.StartRequest(parent);  // the caller's choice wins over the ratio
  EXPECT_TRUE(joined.recording());
  EXPECT_EQ(joined.trace_id, parent.trace_id);
  EXPECT_EQ(joined.parent_id, 42u);
  parent.sampled = false;
  EXPECT_FALSE(always.StartRequest(parent).recording());

  const TraceContext child = Tracer::Child(joined);
  EXPECT_EQ(child.trace_id, joined.trace_id);
  EXPECT_EQ(child.parent_id, joined.span_id);
  EXPECT_FALSE(Tracer::Child(TraceContext{}).recording());
}

TEST(TracerTest, ExportsOtlpJsonWithHexIdsAndEpochTimes) {
  ManualClock clock(Millis(5));
  std::vector<std::string> out;
  Tracer tracer(Options(1), &clock, Exporters(&out));
  const TraceContext root = tracer.StartRequest(std::nullopt);
  const TraceContext queue = Tracer::Child(root);
  tracer.Record({root, "infer lenet5", Span::Kind::kServer, Millis(5), Millis(9), {{"tutti.batch_size", int64_t{4}}}, ""});
  tracer.Record({queue, "queue", Span::Kind::kInternal, Millis(5), Millis(7), {}, "dropped"});
  tracer.Record({TraceContext{}, "not sampled", Span::Kind::kInternal, 0, 1, {}, ""});
  tracer.Flush();
  ASSERT_EQ(out.size(), 1u);
  rapidjson::Document d;
  ASSERT_FALSE(d.Parse(out[0].c_str()).HasParseError()) << out[0];
  const auto& rs = d["resourceSpans"][0];
  EXPECT_STREQ(rs["resource"]["attributes"][0]["value"]["stringValue"].GetString(), "tutti");
  const auto& spans = rs["scopeSpans"][0]["spans"];
  ASSERT_EQ(spans.Size(), 2u);
  EXPECT_EQ(spans[0]["traceId"].GetString(), TraceIdHex(root.trace_id));
  EXPECT_EQ(spans[0]["spanId"].GetString(), SpanIdHex(root.span_id));
  EXPECT_FALSE(spans[0].HasMember("parentSpanId"));
  EXPECT_EQ(spans[0]["kind"].GetInt(), 2);
  EXPECT_EQ(spans[1]["parentSpanId"].GetString(), SpanIdHex(root.span_id));
  EXPECT_EQ(spans[1]["status"]["code"].GetInt(), 2);
  EXPECT_STREQ(spans[0]["attributes"][0]["value"]["intValue"].GetString(), "4");
  const int64_t start = std::stoll(spans[0]["startTimeUnixNano"].GetString());
  const int64_t end = std::stoll(spans[0]["endTimeUnixNano"].GetString());
  EXPECT_EQ(end - start, Millis(4));
  EXPECT_GT(start, int64_t{1'600'000'000} * kSecond);  // on the Unix epoch, after 2020
  EXPECT_EQ(tracer.counts().exported, 2);
}

// A console asks for the slowest requests since it last asked: the SERVER
// spans only, slowest first, at most slowest_kept.
TEST(TracerTest, KeepsTheSlowestRequestsUntilTaken) {
  ManualClock clock(0);
  std::vector<std::string> out;
  TracerOptions o = Options(1);
  o.slowest_kept = 2;
  Tracer tracer(o, &clock, Exporters(&out));
  std::vector<TraceContext> roots;
  for (int ms : {3, 9, 1, 5}) {
    roots.push_back(tracer.StartRequest(std::nullopt));
    tracer.Record({roots.back(), absl::StrCat("infer m", ms), Span::Kind::kServer, 0, Millis(ms), {}, ms == 9 ? "late" : ""});
    tracer.Record({Tracer::Child(roots.back()), "queue", Span::Kind::kInternal, 0, Millis(50), {}, ""});
  }
  const std::vector<Tracer::SlowRequest> slow = tracer.TakeSlowest();
  ASSERT_EQ(slow.size(), 2u);
  EXPECT_EQ(slow[0].trace_id, TraceIdHex(roots[1].trace_id));
  EXPECT_EQ(slow[0].name, "infer m9");
  EXPECT_EQ(slow[0].duration, Millis(9));
  EXPECT_EQ(slow[0].error, "late");
  EXPECT_EQ(slow[1].duration, Millis(5));
  EXPECT_TRUE(tracer.TakeSlowest().empty()) << "taken";
  EXPECT_EQ(TraceLink("http://jaeger:16686/trace/{trace_id}", "ab12"), "http://jaeger:16686/trace/ab12");
  EXPECT_EQ(TraceLink("", "ab12"), "");
}

TEST(TracerTest, AFullBufferDropsAndCountsAndDestructionFlushes) {
  ManualClock clock(0);
  std::vector<std::string> out;
  {
    TracerOptions o = Options(1);
    o.max_buffered = 2;
    Tracer tracer(o, &clock, Exporters(&out));
    for (int i = 0; i < 3; ++i) tracer.Record({tracer.StartRequest(std::nullopt), "s", Span::Kind::kInternal, 0, 1, {}, ""});
    EXPECT_EQ(tracer.counts().recorded, 2);
    EXPECT_EQ(tracer.counts().dropped, 1);
  }
  ASSERT_EQ(out.size(), 1u);
}

TEST(TracerTest, CreateChecksItsOptionsAndWritesAFileALineAnExport) {
  ManualClock clock(0);
  TracerOptions o = Options(2);
  o.file = testing::TempDir() + "/tracer_test_spans.jsonl";
  EXPECT_EQ(Tracer::Create(o, &clock).status().code(), absl::StatusCode::kInvalidArgument);
  o.sampling_ratio = 1;
  EXPECT_FALSE(Tracer::Create(TracerOptions{.sampling_ratio = 1}, &clock).ok());  // nowhere to export
  o.otlp_endpoint = "https://collector:4318";
  EXPECT_EQ(Tracer::Create(o, &clock).status().code(), absl::StatusCode::kInvalidArgument);
  o.otlp_endpoint.clear();
  std::remove(o.file.c_str());
  absl::StatusOr<std::unique_ptr<Tracer>> tracer = Tracer::Create(o, &clock);
  ASSERT_TRUE(tracer.ok()) << tracer.status();
  for (int i = 0; i < 2; ++i) {
    (*tracer)->Record({(*tracer)->StartRequest(std::nullopt), "s", Span::Kind::kInternal, 0, 1, {}, ""});
    (*tracer)->Flush();
  }
  std::ifstream in(o.file);
  int lines = 0;
  for (std::string line; std::getline(in, line);) lines += line.rfind("{\"resourceSpans\"", 0) == 0;
  EXPECT_EQ(lines, 2);
}

TEST(TracerTest, PostsToAnOtlpHttpCollector) {
  const int listener = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  socklen_t len = sizeof(addr);
  getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len);
  listen(listener, 1);
  const std::string json = OtlpJson("svc", {}, 0);
  std::future<std::string> received = std::async(std::launch::async, [listener, json] {
    const int fd = accept(listener, nullptr, nullptr);
    std::string request;
    char buf[4096];
    for (ssize_t n; request.find(json) == std::string::npos && (n = recv(fd, buf, sizeof(buf), 0)) > 0;) {
      request.append(buf, n);
    }
    const std::string ok = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}";
    send(fd, ok.data(), ok.size(), MSG_NOSIGNAL);
    close(fd);
    return request;
  });
  absl::StatusOr<std::unique_ptr<SpanExporter>> exporter =
      NewOtlpHttpExporter("http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port)) + "/v1/traces", 5 * kSecond);
  ASSERT_TRUE(exporter.ok()) << exporter.status();
  EXPECT_TRUE((*exporter)->Export(json).ok());
  const std::string request = received.get();
  close(listener);
  EXPECT_EQ(request.rfind("POST /v1/traces HTTP/1.1\r\n", 0), 0u) << request;
  EXPECT_NE(request.find("Content-Type: application/json"), std::string::npos);
  EXPECT_NE(request.find(json), std::string::npos);
}

}  // namespace
}  // namespace tutti
