#include "tutti/simulator/simulator.h"

#include "gtest/gtest.h"

namespace tutti {
namespace {

SimConfig Config(const std::string& policy, double rate, int gpus = 8) {
  SimConfig c;
  ModelSpec resnet;  // Symphony Table 2
  resnet.name = "ResNet50";
  resnet.profile = *LatencyProfile::Linear(Millis(1.053), Millis(5.072), 64);
  resnet.slo = Millis(25);
  ModelSpec inception;
  inception.name = "InceptionResNetV2";
  inception.profile = *LatencyProfile::Linear(Millis(5.090), Millis(18.368), 64);
  inception.slo = Millis(70);
  c.cluster.models = {resnet, inception};
  c.cluster.gpus = gpus;
  c.workload.rate = rate;
  c.policy = policy;
  c.duration = Seconds(2);
  c.warmup = Millis(200);
  return c;
}

TEST(SimulatorTest, SameConfigAndSeedGiveIdenticalResults) {
  SimConfig c = Config("deferred", 3000);
  c.jitter = 0.1;
  SimResult a = *RunSimulation(c), b = *RunSimulation(c);
  EXPECT_EQ(a.total.arrived, b.total.arrived);
  EXPECT_EQ(a.total.good, b.total.good);
  EXPECT_EQ(a.total.batches, b.total.batches);
  EXPECT_EQ(a.total.latency.Quantile(0.99), b.total.latency.Quantile(0.99));
  EXPECT_EQ(a.gpu_busy, b.gpu_busy);
  c.seed = 2;
  SimResult other = *RunSimulation(c);
  EXPECT_NE(other.total.arrived, a.total.arrived);
}

TEST(SimulatorTest, EveryRequestEndsExactlyOnceUnderEveryPolicy) {
  for (const std::string& policy : SchedulerPolicyNames()) {
    for (double rate : {500.0, 4000.0, 20000.0}) {  // light, busy, overloaded
      SimConfig c = Config(policy, rate);
      c.jitter = 0.05;
      c.options.drop = rate > 10000 ? DropPolicy::kEarly : DropPolicy::kLazy;
      absl::StatusOr<SimResult> r = RunSimulation(c);
      ASSERT_TRUE(r.ok()) << r.status();
      for (const ModelMetrics& m : r->models) {
        EXPECT_EQ(m.arrived, m.good + m.late + m.dropped) << policy << " " << rate << " " << m.name;
      }
      EXPECT_GT(r->total.arrived, 0);
    }
  }
}

TEST(SimulatorTest, DeferredKeepsSpareGpusIdleAtLowLoad) {
  // Symphony: below peak, the idle GPUs are the highest-numbered ones.
  SimResult r = *RunSimulation(Config("deferred", 300));
  EXPECT_EQ(r.total.BadRate(), 0);
  EXPECT_LE(r.gpus_used, 4);
  for (GpuId g = 5; g < 8; ++g) EXPECT_EQ(r.BusyFraction(g), 0) << g;
  EXPECT_GT(r.BusyFraction(0), r.BusyFraction(2));  // load concentrates on low ids
  EXPECT_GE(r.advice.remove, 5);
  // Eager spreads the same load over more GPUs with smaller batches.
  SimResult eager = *RunSimulation(Config("eager", 300));
  EXPECT_GE(eager.gpus_used, r.gpus_used);
  EXPECT_LE(eager.total.MeanBatch(), r.total.MeanBatch());
}

TEST(SimulatorTest, OverloadIsReportedAndScalingAdviceAddsGpus) {
  SimResult r = *RunSimulation(Config("deferred", 20000));
  EXPECT_GT(r.total.BadRate(), 0.3);
  EXPECT_GT(r.advice.add, 0);
  EXPECT_EQ(r.total.QuantileWithDrops(0.99), kInfiniteFuture);
}

TEST(SimulatorTest, RejectsBadConfigs) {
  SimConfig c = Config("deferred", 100);
  c.warmup = c.duration;
  EXPECT_FALSE(RunSimulation(c).ok());
  c = Config("magic", 100);
  EXPECT_FALSE(RunSimulation(c).ok());
}

}  // namespace
}  // namespace tutti
