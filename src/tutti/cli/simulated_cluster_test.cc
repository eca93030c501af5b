#include "tutti/cli/simulated_cluster.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tutti/testing/layout_fixture.h"
#include "tutti/testing/temp_dir.h"

namespace tutti {
namespace {

// testing/layout_fixture.h's repository.
class SimulatedClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::WriteMlpAndResnet50(dir_);
    repo_ = *ModelRepository::Open(dir_.path());
  }
  testing::TempDir dir_;
  ModelRepository repo_;
};

TEST_F(SimulatedClusterTest, TheSimulatorSeesTheClusterTheServerRuns) {
  absl::StatusOr<ServerConfig> c = ResolveServerConfig(
      *ParseServerConfig("policy: eager\ndrop: early\nearly_drop_window: 9\nfrontrun_slack_ms: 0.5\nnetwork_us: {resp: 700}\n"
                         "delay_model: {quantile: 0.99}\nexecutors: [{kind: torch, models: [mlp]}, "
                         "{kind: emulated, count: 3, profile: a100, models: [resnet50]}]"),
      repo_);
  ASSERT_TRUE(c.ok()) << c.status();
  absl::StatusOr<ClusterLayout> layout = LayOutCluster(repo_, *c);
  ASSERT_TRUE(layout.ok()) << layout.status();
  const SimConfig sim = SimulatedCluster(*layout, *c);
  EXPECT_EQ(sim.cluster.num_gpus(), 4);
  ASSERT_EQ(sim.cluster.sub_clusters.size(), 2u);
  EXPECT_EQ(sim.cluster.sub_clusters[1].num_gpus, 3);
  ASSERT_EQ(sim.cluster.models.size(), 2u);
  EXPECT_EQ(sim.cluster.models[1].name, "resnet50");
  EXPECT_EQ(sim.cluster.models[1].profile.Latency(1), layout->spec.models[1].profile.Latency(1));
  EXPECT_EQ(sim.cluster.models[0].slo, c->default_objective);
  // The timeout policy's batching delay from the model's config (Triton's
  // dynamic_batching field), the default without; the serve config's window.
  EXPECT_EQ(sim.cluster.models[1].max_queue_delay, Micros(250));
  EXPECT_EQ(sim.cluster.models[0].max_queue_delay, ModelSpec{}.max_queue_delay);
  EXPECT_EQ(sim.cluster.models[1].early_drop_window, 9);
  EXPECT_EQ(sim.cluster.delays.resp, Micros(700));
  EXPECT_EQ(sim.policy, "eager");
  EXPECT_EQ(sim.options.drop, DropPolicy::kEarly);
  EXPECT_EQ(sim.options.frontrun_slack, Micros(500));
  EXPECT_DOUBLE_EQ(sim.delay_model.quantile, 0.99);
  EXPECT_TRUE(sim.delay_model.measure);
}

}  // namespace
}  // namespace tutti
