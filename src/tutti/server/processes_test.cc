// A scheduler, a backend and a frontend process (in this test's process)
// under the cluster's mutual TLS, with an etcd that takes only client
// certificates from the cluster's CA.
#include "tutti/server/processes.h"

#include <chrono>
#include <thread>

#include "gtest/gtest.h"
#include "tutti/core/status_macros.h"
#include "tutti/etcd/local_etcd.h"
#include "tutti/testing/http_test_client.h"
#include "tutti/testing/temp_dir.h"
#include "tutti/testing/test_certs.h"

namespace tutti {
namespace {

// The zero-cost emulated model on one emulated A100, for the processes
// under test. The layout points into the repository: neither moves.
class ZeroCostTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const absl::Status made = Make();
    ASSERT_TRUE(made.ok()) << made;
  }
  absl::Status Make() {
    TUTTI_ASSIGN_OR_RETURN(repo_, ModelRepository::Open("bench/emulated_repository"));
    TUTTI_ASSIGN_OR_RETURN(config_, ParseServerConfig(R"(
executors: [{kind: emulated, count: 1, profile: a100, models: [zero_cost]}]
http: {port: 0}
grpc: {port: -1}
)"));
    TUTTI_ASSIGN_OR_RETURN(config_, ResolveServerConfig(std::move(config_), repo_));
    TUTTI_ASSIGN_OR_RETURN(layout_, LayOutCluster(repo_, config_));
    return absl::OkStatus();
  }

  ModelRepository repo_;
  ServerConfig config_;
  ClusterLayout layout_;
};
using ClusterTlsTest = ZeroCostTest;
using BackendMetricsTest = ZeroCostTest;

TEST_F(ClusterTlsTest, ProcessesServeUnderMutualTlsAndABackendWithoutTheClustersCertificateCannotJoin) {
  testing::TempDir dir;
  const testing::TestPki pki = testing::MakeTestPki(dir.path());
  const TlsOptions member{pki.client_cert, pki.client_key, pki.ca_cert};
  absl::StatusOr<std::unique_ptr<LocalEtcd>> etcd = LocalEtcd::Start("/usr/bin/etcd", member);
  ASSERT_TRUE(etcd.ok()) << etcd.status();


  ProcessOptions options{.etcd = (*etcd)->endpoint(), .cluster = "tls", .tls = member};
  auto scheduler = SchedulerProcess::Start(layout_, config_, options);
  ASSERT_TRUE(scheduler.ok()) << scheduler.status();
  auto backend = BackendProcess::Start(layout_, config_, 0, "member", options);
  ASSERT_TRUE(backend.ok()) << backend.status();
  auto frontend = FrontendProcess::Start(layout_, config_, options);
  ASSERT_TRUE(frontend.ok()) << frontend.status();

  std::string inputs = "[";
  for (int i = 0; i < 16; ++i) inputs += i ? ",0.5" : "0.5";
  const std::string body = R"({"inputs":[{"name":"input","shape":[1,16],"datatype":"FP32","data":)" + inputs + "]}]}";
  testing::HttpTestClient client((*frontend)->http_port());
  int status = 0;
  // Until the scheduler leads and the backend has joined it.
  for (int attempt = 0; attempt < 200 && status != 200; ++attempt) {
    status = client.Request("POST", "/v2/models/zero_cost/infer", body).status;
    if (status != 200) std::this_thread::sleep_for(std::chrono::milliseconds(50));  // other processes: polled
  }
  EXPECT_EQ(status, 200) << "a request served across the processes under mutual TLS";

  options.etcd_timeout = Millis(1500);
  ProcessOptions stranger = options;
  stranger.tls = TlsOptions{pki.stranger_cert, pki.stranger_key, pki.ca_cert};
  EXPECT_FALSE(BackendProcess::Start(layout_, config_, 0, "stranger", stranger).ok())
      << "etcd refuses it: it cannot register";
  ProcessOptions plain = options;
  plain.tls = {};
  EXPECT_FALSE(BackendProcess::Start(layout_, config_, 0, "plain", plain).ok());
  (*frontend)->Shutdown();
}

// A backend's /metrics (ProcessOptions::metrics_port): who it is, and no
// replication figures for a stateless group; other paths and methods are
// refused; without a port, no listener.
TEST_F(BackendMetricsTest, ABackendServesItsMetricsOnItsOwnPort) {
  absl::StatusOr<std::unique_ptr<LocalEtcd>> etcd = LocalEtcd::Start();
  ASSERT_TRUE(etcd.ok()) << etcd.status();

  ProcessOptions options{.etcd = (*etcd)->endpoint(), .cluster = "metrics"};
  options.metrics_port = 0;
  auto backend = BackendProcess::Start(layout_, config_, 0, "b1", options);
  ASSERT_TRUE(backend.ok()) << backend.status();
  ASSERT_GT((*backend)->metrics_port(), 0);
  testing::HttpTestClient client((*backend)->metrics_port());
  const testing::ClientResponse metrics = client.Request("GET", "/metrics");
  EXPECT_EQ(metrics.status, 200);
  EXPECT_NE(metrics.body.find(R"(tutti_backend_info{id="b1",group="0"} 1)"), std::string::npos) << metrics.body;
  EXPECT_EQ(metrics.body.find("tutti_replication"), std::string::npos) << "a stateless group replicates nothing";
  EXPECT_EQ(client.Request("GET", "/v2/health/ready").status, 404);
  EXPECT_EQ(client.Request("POST", "/metrics").status, 405);

  options.metrics_port = -1;
  auto quiet = BackendProcess::Start(layout_, config_, 0, "b2", options);
  ASSERT_TRUE(quiet.ok()) << quiet.status();
  EXPECT_EQ((*quiet)->metrics_port(), -1);
}

// The autoscale key's text (processes.h), as a provider reads it.
TEST(AutoscaleKeyTest, TheStateGoesThroughItsTextAndBadTextIsAnError) {
  using State = SchedulerNode::AutoscaleState;
  for (const State& s : {State{3, 2, {"b1", "b4"}}, State{1, 1, {}}, State{3, 1, {"b2"}, {-1, 2, 0, 1}}}) {
    absl::StatusOr<State> back = ParseAutoscale(FormatAutoscale(s));
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(*back, s);
  }
  EXPECT_FALSE(ParseAutoscale("wanted 3\nup 2\n").ok()) << "no spares line";
  EXPECT_FALSE(ParseAutoscale("wanted three\nup 2\nspares\n").ok());
  EXPECT_FALSE(ParseAutoscale("wanted -1\nup 2\nspares\n").ok());
  EXPECT_FALSE(ParseAutoscale("wanted 3\nup 2\nspares\nmore 1\n").ok());
  EXPECT_FALSE(ParseAutoscale("wanted 3\nup 2\nspares\ngroups 1 -2\n").ok()) << "-1 is the least";
  EXPECT_FALSE(ParseAutoscale("wanted 3\nup 2\nspares\ngroups 1 x\n").ok());
}

}  // namespace
}  // namespace tutti
