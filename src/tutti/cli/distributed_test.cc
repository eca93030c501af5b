// Distributed Tutti end to end: etcd, schedulers, frontends and emulated
// backends as separate `tutti` processes on loopback (LocalCluster), load
// from the load generator over HTTP and gRPC, and kill -9 fault injection.
//
// Workload: emulated ResNet50 (A100 profile) on 3 backends at a light load
// (~15 % of capacity), so that the outcome does not hinge on how busy the CI
// machine is; the benchmark (bench/distributed_goodput.sh) measures the
// capacity itself.
#include <signal.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <future>
#include <mutex>
#include <set>
#include <iostream>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tutti/core/child_process.h"
#include "tutti/cli/local_cluster.h"
#include "tutti/loadgen/load_generator.h"
#include "tutti/testing/closed_loop_clients.h"
#include "tutti/testing/http_test_client.h"
#include "tutti/testing/source_dir.h"
#include "tutti/testing/span_file.h"
#include "tutti/testing/temp_dir.h"
#include "tutti/testing/torchscript_fixture.h"

namespace tutti {
namespace {

using ::testing::HasSubstr;

constexpr char kConfig[] = R"(policy: deferred
drop: early
frontrun_slack_ms: 4
http: {threads: 1}
executors:
  - {kind: emulated, count: 3, profile: a100, models: [resnet50]}
)";
constexpr double kSloMs = 25;

using Clock = std::chrono::steady_clock;

class DistributedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    options_.tutti_binary = TUTTI_BINARY;
    options_.repo = testing::SourceDir() + "/bench/emulated_repository";
    options_.config = dir_.WriteFile("serve.yaml", kConfig);
    options_.echo = true;
  }

  std::unique_ptr<LocalCluster> StartCluster(int schedulers, int frontends) {
    options_.schedulers = schedulers;
    options_.frontends = frontends;
    absl::StatusOr<std::unique_ptr<LocalCluster>> cluster = LocalCluster::Start(options_);
    EXPECT_TRUE(cluster.ok()) << cluster.status();
    return cluster.ok() ? std::move(*cluster) : nullptr;
  }

  static LoadSpec Load(int port, LoadProtocol protocol, double rate, Duration duration, uint64_t seed) {
    LoadSpec spec;
    spec.port = port;
    spec.protocol = protocol;
    spec.models = {"resnet50"};
    spec.workload.arrival = ArrivalKind::kPoisson;
    spec.workload.rate = rate;
    spec.duration = duration;
    spec.warmup = 0;
    spec.slo = Millis(kSloMs);
    spec.seed = seed;
    spec.connections = 64;
    spec.drain_timeout = 10 * kSecond;  // RunLoad fails if any request is left unanswered
    return spec;
  }

  // Waits until the frontend listening on `http_port` has answered `n`
  // requests on time (its /metrics) — a load is under way — or `timeout` passed.
  static bool WaitForAnswers(int http_port, int64_t n, Duration timeout, const std::string& model = "resnet50") {
    const std::string counter = absl::StrCat(R"(tutti_requests_total{model=")", model, R"(",outcome="success"} )");
    const Clock::time_point until = Clock::now() + std::chrono::nanoseconds(timeout);
    testing::HttpTestClient client(http_port);
    for (;;) {
      const std::string metrics = client.Request("GET", "/metrics").body;
      const size_t at = metrics.find(counter);
      int64_t answered = 0;
      if (at != std::string::npos) {
        const size_t from = at + counter.size();
        (void)absl::SimpleAtoi(absl::string_view(metrics).substr(from, metrics.find('\n', from) - from), &answered);
      }
      if (answered >= n) return true;
      if (Clock::now() >= until) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));  // polls another process's metrics
    }
  }

  // Runs the loads at once; each must have every request answered.
  static std::vector<LoadResult> RunLoads(const std::vector<LoadSpec>& specs) {
    std::vector<std::future<absl::StatusOr<LoadResult>>> runs;
    for (const LoadSpec& s : specs) runs.push_back(std::async(std::launch::async, [s] { return RunLoad(s); }));
    std::vector<LoadResult> results;
    for (auto& r : runs) {
      absl::StatusOr<LoadResult> result = r.get();
      EXPECT_TRUE(result.ok()) << result.status();
      if (result.ok()) results.push_back(*std::move(result));
    }
    return results;
  }

  // Errors other than admission control's (HTTP 503: an explicit refusal
  // to retry, which a loaded server may give at any time).
  static int64_t Failures(const LoadResult& r) {
    int64_t n = 0;
    for (const auto& [what, count] : r.total.errors) n += what == "HTTP 503" ? 0 : count;
    return n;
  }

  static std::string Errors(const LoadResult& r) {
    std::string out;
    for (const auto& [what, n] : r.models[0].errors) absl::StrAppend(&out, " ", what, " x", n);
    return out.empty() ? " none" : out;
  }

  // The model-less task "toy": the TorchScript fixture "linear" with a slow
  // cpu profile (testing::ModelLessLinearConfig), its variants on cpu, inf1
  // and v100 scaled every 0.3 s; the provider follows the leader.
  void UseModelLessLinear() {
    dir_.WriteFile("repo/linear/1/config.yaml", testing::ModelLessLinearConfig());
    std::filesystem::copy_file(testing::FixtureRepo() + "/linear/1/model.pt",
                               dir_.path() + "/repo/linear/1/model.pt");
    options_.repo = dir_.path() + "/repo";
    options_.config = dir_.WriteFile("model_less.yaml", R"(policy: eager
http: {threads: 1}
model_less: {task: toy, accuracy: 0.8, objective_ms: 1000, pools: {cpu: 1, inf1: 1, v100: 1}, interval_s: 0.3}
)");
    options_.follow_autoscale = true;
  }
  testing::TempDir dir_;
  LocalClusterOptions options_;
};

// Every request through two frontends (HTTP on one, gRPC on the other) is
// answered, as with an embedded `tutti serve` of the same config on the
// same workload and seeds (RunLoad fails on a request left unanswered).
// Their goodput and bad rate are printed here and
// compared in bench/distributed_goodput.sh (rates are timing's, not a
// test's).
TEST_F(DistributedTest, TwoFrontendsThreeBackendsMatchEmbeddedMode) {
  const Duration duration = 6 * kSecond;
  const double rate = 500;  // per frontend
  ModelMetrics distributed, embedded;
  {
    std::unique_ptr<LocalCluster> cluster = StartCluster(1, 2);
    ASSERT_NE(cluster, nullptr);
    std::vector<LoadResult> r =
        RunLoads({Load(cluster->frontends()[0].http_port, LoadProtocol::kHttp, rate, duration, 1),
                  Load(cluster->frontends()[1].grpc_port, LoadProtocol::kGrpc, rate, duration, 2)});
    ASSERT_EQ(r.size(), 2u);
    for (const LoadResult& x : r) {
      distributed.Merge(x.total.metrics);
      std::cout << "distributed: " << x.total.metrics.arrived << " sent, errors" << Errors(x) << "\n";
    }
  }
  {
    absl::StatusOr<std::unique_ptr<ChildProcess>> serve = ChildProcess::Start(
        {TUTTI_BINARY, "serve", "--repo", options_.repo, "--config", options_.config, "--port", "0", "--grpc-port",
         "0"});
    ASSERT_TRUE(serve.ok()) << serve.status();
    absl::StatusOr<std::string> http = (*serve)->WaitForOutput("Tutti is serving", 60 * kSecond);
    absl::StatusOr<std::string> grpc = (*serve)->WaitForOutput("KServe v2 gRPC", 60 * kSecond);
    ASSERT_TRUE(http.ok() && grpc.ok()) << http.status() << grpc.status();
    const int http_port = std::stoi(http->substr(http->rfind(':') + 1));
    const int grpc_port = std::stoi(grpc->substr(grpc->rfind(':') + 1));
    std::vector<LoadResult> r = RunLoads({Load(http_port, LoadProtocol::kHttp, rate, duration, 1),
                                          Load(grpc_port, LoadProtocol::kGrpc, rate, duration, 2)});
    ASSERT_EQ(r.size(), 2u);
    for (const LoadResult& x : r) embedded.Merge(x.total.metrics);
  }
  const double goodput_ratio = static_cast<double>(distributed.good) / std::max<int64_t>(1, embedded.good);
  std::cout << absl::StrFormat(
      "requests: distributed %d, embedded %d; good %d vs %d (ratio %.3f); bad rate %.2f%% vs %.2f%%\n",
      distributed.arrived, embedded.arrived, distributed.good, embedded.good, goodput_ratio,
      100 * distributed.rate(), 100 * embedded.rate());
  EXPECT_EQ(distributed.arrived, embedded.arrived) << "same arrivals (same seeds)";
  EXPECT_GT(distributed.arrived, 5000);
  EXPECT_GT(distributed.good, 0);
}

// Tracing across the processes: a request its caller traces leaves spans
// from the frontend, the scheduler and the backend that ran it, all in the
// caller's trace, each process exporting to the config's file (read back
// once they have stopped, which flushes them).
TEST_F(DistributedTest, ATracedRequestHasSpansFromEveryProcess) {
  const std::string file = dir_.path() + "/spans.jsonl";
  options_.config = dir_.WriteFile("traced.yaml", absl::StrCat(kConfig, "tracing: {sampling_ratio: 0, file: ", file, "}\n"));
  {
    std::unique_ptr<LocalCluster> cluster = StartCluster(1, 1);
    ASSERT_NE(cluster, nullptr);
    testing::HttpTestClient c(cluster->frontends()[0].http_port);
    const std::string body = R"({"inputs":[{"name":"input","datatype":"FP32","shape":[1,16],"data":[)"
                             "0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0]}]}";
    ASSERT_EQ(c.Request("POST", "/v2/models/resnet50/infer", body,
                        {{"traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}})
                  .status,
              200);
    ASSERT_EQ(c.Request("POST", "/v2/models/resnet50/infer", body).status, 200);  // not traced at ratio 0
  }
  const std::map<std::string, testing::ReadSpan> spans = testing::ReadSpans(file);
  const testing::ReadSpan* request = nullptr;
  for (const auto& [id, s] : spans) {
    EXPECT_EQ(s.trace, "0af7651916cd43dd8448eb211c80319c") << s.name;
    if (s.name == "infer resnet50") request = &s;
  }
  ASSERT_NE(request, nullptr) << "the frontend's span";
  EXPECT_EQ(request->parent, "b7ad6b7169203331");
  EXPECT_THAT(testing::Children(spans, request->id),
              ::testing::UnorderedElementsAre("queue", "compute", "respond", "schedule", "execute"))
      << "the frontend's, the scheduler's and the backend's";
}

// kill -9 of a backend under load: every request is answered, and the
// scheduler stops using the backend (its batches are re-dispatched). The
// time to removal is printed, not asserted (timing is the benchmarks').
TEST_F(DistributedTest, KilledBackendIsRemovedAndNoRequestIsLeftUnanswered) {
  std::unique_ptr<LocalCluster> cluster = StartCluster(1, 1);
  ASSERT_NE(cluster, nullptr);
  auto load = std::async(std::launch::async, [&] {
    return RunLoads({Load(cluster->frontends()[0].http_port, LoadProtocol::kHttp, 800, 6 * kSecond, 3)});
  });
  ASSERT_TRUE(WaitForAnswers(cluster->frontends()[0].http_port, 800, 20 * kSecond));  // a second of load
  ChildProcess& victim = *cluster->backends()[0].process;  // GPU 0: the busiest under deferred scheduling
  const Clock::time_point killed = Clock::now();
  victim.Signal(SIGKILL);
  absl::StatusOr<std::string> removed =
      cluster->schedulers()[0]->WaitForOutput("backend b0 (GPU", 10 * kSecond);
  const double removal_s = std::chrono::duration<double>(Clock::now() - killed).count();
  ASSERT_TRUE(removed.ok()) << removed.status();
  std::cout << absl::StrFormat("backend b0 killed; the scheduler removed it %.3f s later (lease TTL %d s): %s\n",
                               removal_s, options_.lease_ttl_s, *removed);
  std::vector<LoadResult> r = load.get();
  ASSERT_EQ(r.size(), 1u);
  std::cout << absl::StrFormat("%d requests, bad rate %.2f%%, errors%s\n", r[0].total.metrics.arrived,
                               100 * r[0].total.metrics.rate(), Errors(r[0]));
  // The two remaining backends serve on: a load after the fault is served,
  // failing nothing.
  std::vector<LoadResult> after =
      RunLoads({Load(cluster->frontends()[0].http_port, LoadProtocol::kHttp, 600, 3 * kSecond, 4)});
  ASSERT_EQ(after.size(), 1u);
  EXPECT_EQ(Failures(after[0]), 0) << Errors(after[0]);
  EXPECT_GT(after[0].total.metrics.good, 0);
}

// kill -9 of the leading scheduler under load: the hot spare leads, requests
// in the gap get retryable errors (gRPC UNAVAILABLE), every request is
// answered; the failover time is printed, not asserted.
// The first sample of a frontend's console (/console/events): its "process"
// object, as JSON text.
std::string ConsoleProcess(int http_port) {
  testing::HttpTestClient client(http_port);
  client.SendRaw("GET /console/events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  const std::string events = client.ReadUntil("}\n\n");
  const size_t at = events.find("\"process\":");
  return at == std::string::npos ? events : events.substr(at);
}

TEST_F(DistributedTest, HotSpareTakesOverFromAKilledLeader) {
  std::unique_ptr<LocalCluster> cluster = StartCluster(2, 1);
  ASSERT_NE(cluster, nullptr);
  auto load = std::async(std::launch::async, [&] {
    return RunLoads({Load(cluster->frontends()[0].grpc_port, LoadProtocol::kGrpc, 500, 7 * kSecond, 5)});
  });
  ASSERT_TRUE(WaitForAnswers(cluster->frontends()[0].http_port, 500, 20 * kSecond));  // a second of load
  // The console shows the leader, its spare and the backends.
  const std::string before = ConsoleProcess(cluster->frontends()[0].http_port);
  EXPECT_THAT(before, HasSubstr("\"mode\":\"distributed frontend\""));
  EXPECT_THAT(before, ::testing::ContainsRegex("\"scheduler_leader\":\"[^\"]+\""));
  EXPECT_THAT(before, ::testing::ContainsRegex("\"scheduler_spares\":\\[\"[^\"]+\"\\]"));
  EXPECT_THAT(before, ::testing::ContainsRegex("\"backends\":\\[\"[^\"]+\"(,\"[^\"]+\")*\\]"));
  const Clock::time_point killed = Clock::now();
  cluster->schedulers()[0]->Signal(SIGKILL);
  absl::StatusOr<std::string> leads = cluster->schedulers()[1]->WaitForOutput(": leading", 10 * kSecond);
  const double failover_s = std::chrono::duration<double>(Clock::now() - killed).count();
  ASSERT_TRUE(leads.ok()) << leads.status();
  std::cout << absl::StrFormat("leader killed; the spare leads %.3f s later (target <= 2 s): %s\n", failover_s,
                               *leads);
  std::vector<LoadResult> r = load.get();
  ASSERT_EQ(r.size(), 1u);
  std::cout << absl::StrFormat("%d requests, bad rate %.2f%%, errors%s\n", r[0].total.metrics.arrived,
                               100 * r[0].total.metrics.rate(), Errors(r[0]));
  int64_t unavailable = 0;
  for (const auto& [what, n] : r[0].models[0].errors) {
    EXPECT_TRUE(what == "gRPC UNAVAILABLE" || what == "gRPC DEADLINE_EXCEEDED") << what << " x" << n;
    if (what == "gRPC UNAVAILABLE") unavailable += n;
  }
  EXPECT_GT(unavailable, 0) << "requests in the gap are refused as retryable";
  // The new leader serves: a load after the failover is healthy.
  std::vector<LoadResult> after =
      RunLoads({Load(cluster->frontends()[0].http_port, LoadProtocol::kHttp, 600, 3 * kSecond, 6)});
  ASSERT_EQ(after.size(), 1u);
  EXPECT_EQ(Failures(after[0]), 0) << Errors(after[0]);
  EXPECT_GT(after[0].total.metrics.good, 0);
  // The console follows: the spare leads and has no spare of its own.
  const std::string now = ConsoleProcess(cluster->frontends()[0].http_port);
  EXPECT_THAT(now, HasSubstr("\"scheduler_spares\":[]")) << now;
  EXPECT_NE(now.substr(0, now.find("scheduler_spares")), before.substr(0, before.find("scheduler_spares")));
}

// Autoscaling across processes: the leader wants backends as the load
// rises and releases them as it falls; the provider (`tutti cluster`'s)
// starts backend processes and stops the spares. Every request is answered
// throughout (RunLoads fails otherwise).
TEST_F(DistributedTest, TheAutoscaleProviderStartsAndStopsBackendsAsTheLeaderAsks) {
  // ResNet50 on emulated GTX 1080Tis (ℓ(b) = 2.05·b + 5.38 ms): about 300
  // r/s each within 25 ms, so 1,100 r/s needs all four.
  options_.config = dir_.WriteFile("autoscale.yaml", R"(policy: deferred
drop: early
frontrun_slack_ms: 4
http: {threads: 1}
autoscale: {interval_s: 1, headroom: 0.2, min_gpus: 1, initial_gpus: 1, provision_delay_s: 1}
executors:
  - {kind: emulated, count: 4, profile: 1080ti, models: [resnet50]}
)");
  options_.follow_autoscale = true;
  std::unique_ptr<LocalCluster> cluster = StartCluster(1, 1);
  ASSERT_NE(cluster, nullptr);
  EXPECT_EQ(cluster->running_backends(), 1) << "the autoscaler's initial count";
  std::atomic<int> most = 1;
  std::atomic<bool> loading = true;
  std::thread watch([&] {
    while (loading) {
      most = std::max(most.load(), cluster->running_backends());
      std::this_thread::sleep_for(std::chrono::milliseconds(100));  // samples, not a wait
    }
  });
  std::vector<LoadResult> r =
      RunLoads({Load(cluster->frontends()[0].http_port, LoadProtocol::kHttp, 1100, 10 * kSecond, 7)});
  loading = false;
  watch.join();
  ASSERT_EQ(r.size(), 1u);
  std::cout << absl::StrFormat("%d requests, bad rate %.2f%%, errors%s; at most %d backends\n",
                               r[0].total.metrics.arrived, 100 * r[0].total.metrics.rate(), Errors(r[0]),
                               most.load());
  EXPECT_GE(most, 3) << "1,100 r/s needs more backends";
  EXPECT_GE(cluster->autoscale_starts(), 1);
  // The frontends show what the leader wants (an outside autoscaler's metric).
  const std::string metrics = testing::HttpTestClient(cluster->frontends()[0].http_port).Request("GET", "/metrics").body;
  EXPECT_THAT(metrics, HasSubstr("tutti_autoscale_backends{state=\"wanted\"} "));
  EXPECT_THAT(metrics, HasSubstr("tutti_autoscale_backends{state=\"spare\"} "));
  // Idle: released down to one, the others stopped.
  const Clock::time_point until = Clock::now() + std::chrono::seconds(30);
  while (cluster->running_backends() > 1 && Clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // polls the processes, bounded
  }
  EXPECT_EQ(cluster->running_backends(), 1);
  EXPECT_GE(cluster->autoscale_stops(), 1);
  // What is left serves on.
  std::vector<LoadResult> after =
      RunLoads({Load(cluster->frontends()[0].http_port, LoadProtocol::kHttp, 100, 2 * kSecond, 8)});
  ASSERT_EQ(after.size(), 1u);
  EXPECT_EQ(Failures(after[0]), 0) << Errors(after[0]);
  EXPECT_GT(after[0].total.metrics.good, 0);
}

// INFaaS across processes: the task's variants are generated from the
// TorchScript fixture "linear" (a cpu profile of 200 ms at batch 1, 400 ms
// at 8: 20 queries/s per instance within 1 s). The leader scales them; the
// frontend routes model-less requests on the state the leader sends; the
// provider starts a backend process per instance asked for and stops those
// released. Load beyond the cpu instance brings an inf1 backend, which serves
// and goes once the load is gone; no request fails meanwhile.
TEST_F(DistributedTest, ModelLessVariantsComeAndGoAsBackendProcesses) {
  UseModelLessLinear();
  std::unique_ptr<LocalCluster> cluster = StartCluster(1, 1);
  ASSERT_NE(cluster, nullptr);
  // Groups: linear by name (0), then its variants linear@cpu, @inf1, @v100.
  EXPECT_EQ(cluster->running_backends(1), 1) << "the cheapest variant in time, at start";
  EXPECT_EQ(cluster->running_backends(2), 0);
  const int port = cluster->frontends()[0].http_port;
  const std::string image = absl::StrCat(R"({"inputs":[{"name":"image","datatype":"FP32","shape":[1,1,28,28],"data":[)",
                                         absl::StrJoin(std::vector<float>(784, 0.5f), ","), "]}]}");
  testing::ClientResponse first = testing::HttpTestClient(port).Request("POST", "/v2/tasks/toy/infer", image);
  ASSERT_EQ(first.status, 200) << first.body;
  EXPECT_THAT(first.body, HasSubstr(R"("model_name":"linear@cpu")"));
  testing::ClosedLoopClients clients(port, "/v2/tasks/toy/infer", image, 4);
  const auto wait = [](const std::function<bool()>& done) {
    const Clock::time_point until = Clock::now() + std::chrono::seconds(30);
    while (!done() && Clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));  // polls the processes and answers, bounded
    }
    return done();
  };
  EXPECT_TRUE(wait([&] { return cluster->running_backends(2) == 1; })) << "the load started no inf1 backend";
  EXPECT_TRUE(wait([&] { return clients.ServedBy("linear@inf1"); })) << "the inf1 backend served nothing";
  clients.Stop();
  EXPECT_GT(clients.ok(), 0);
  EXPECT_EQ(clients.failed(), 0) << absl::StrJoin(clients.errors(), "\n");
  EXPECT_TRUE(wait([&] { return cluster->running_backends(2) == 0; })) << "the inf1 backend was not stopped";
  EXPECT_GE(cluster->autoscale_starts(), 2);  // the cpu instance, then the inf1 one
  EXPECT_GE(cluster->autoscale_stops(), 1);
  EXPECT_EQ(cluster->running_backends(1), 1) << "one instance stays";
  // The frontend shows what the leader paid and runs.
  const std::string metrics = testing::HttpTestClient(port).Request("GET", "/metrics").body;
  const size_t at = metrics.find("\ntutti_model_less_cost_total ");
  ASSERT_NE(at, std::string::npos) << metrics;
  EXPECT_GT(std::atof(metrics.c_str() + at + 29), 1);
  EXPECT_THAT(metrics, HasSubstr(R"(tutti_variant_instances{model="linear@cpu",state="up"} 1)"));
  EXPECT_THAT(metrics, HasSubstr(R"(tutti_autoscale_group_backends{group="1"} 1)"));  // linear@cpu's
  EXPECT_THAT(metrics, HasSubstr(R"(tutti_autoscale_group_backends{group="2"} 0)"));  // linear@inf1's
  EXPECT_THAT(metrics, ::testing::Not(HasSubstr(R"(tutti_autoscale_group_backends{group="0"})")));  // not scaled
}

// A leader killed under model-less load: the spare leads with the task's
// autoscaler afresh and the frontend routes on its state. Every request is
// answered — those the old leader held with a retryable 503 — and the new
// leader serves the task.
TEST_F(DistributedTest, ModelLessServesThroughALeaderChange) {
  UseModelLessLinear();
  std::unique_ptr<LocalCluster> cluster = StartCluster(2, 1);
  ASSERT_NE(cluster, nullptr);
  const int port = cluster->frontends()[0].http_port;
  const auto task_load = [port](Duration duration, uint64_t seed) {
    LoadSpec spec = Load(port, LoadProtocol::kHttp, 8, duration, seed);
    spec.models = {"task:toy"};
    spec.slo = kSecond;
    return spec;
  };
  auto load = std::async(std::launch::async, [&] { return RunLoads({task_load(6 * kSecond, 9)}); });
  ASSERT_TRUE(WaitForAnswers(port, 8, 20 * kSecond, "linear@cpu"));  // a second of load
  cluster->schedulers()[0]->Signal(SIGKILL);
  absl::StatusOr<std::string> leads = cluster->schedulers()[1]->WaitForOutput(": leading", 10 * kSecond);
  ASSERT_TRUE(leads.ok()) << leads.status();
  std::vector<LoadResult> r = load.get();
  ASSERT_EQ(r.size(), 1u);
  std::cout << absl::StrFormat("%d requests, bad rate %.2f%%, errors%s\n", r[0].total.metrics.arrived,
                               100 * r[0].total.metrics.rate(), Errors(r[0]));
  EXPECT_EQ(Failures(r[0]), 0) << Errors(r[0]);
  std::vector<LoadResult> after = RunLoads({task_load(2 * kSecond, 10)});
  ASSERT_EQ(after.size(), 1u);
  EXPECT_EQ(Failures(after[0]), 0) << Errors(after[0]);
  EXPECT_GT(after[0].total.metrics.good, 0) << "the new leader serves the task";
}

}  // namespace
}  // namespace tutti
