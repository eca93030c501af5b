#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tutti/planner/batching_bounds.h"
#include "tutti/planner/scaling.h"
#include "tutti/planner/squishy_bin_packing.h"

namespace tutti {
namespace {

// Symphony Table 2 (profiles from the paper, 8 GPUs).
TEST(BatchingBoundsTest, SymphonyTable2ResNet50) {
  LatencyProfile p = *LatencyProfile::Linear(Millis(1.053), Millis(5.072), 64);
  BatchingBound plain = UncoordinatedBound(p, Millis(25), 8);
  BatchingBound staggered = StaggeredBound(p, Millis(25), 8);
  EXPECT_EQ(plain.batch, 7);
  EXPECT_EQ(std::lround(plain.throughput), 4501);
  EXPECT_EQ(staggered.batch, 16);
  EXPECT_EQ(std::lround(staggered.throughput), 5839);
}

TEST(BatchingBoundsTest, SymphonyTable2InceptionResNetV2) {
  LatencyProfile p = *LatencyProfile::Linear(Millis(5.090), Millis(18.368), 64);
  BatchingBound plain = UncoordinatedBound(p, Millis(70), 8);
  BatchingBound staggered = StaggeredBound(p, Millis(70), 8);
  EXPECT_EQ(plain.batch, 3);
  EXPECT_EQ(std::lround(plain.throughput), 713);
  EXPECT_EQ(staggered.batch, 8);
  EXPECT_EQ(std::lround(staggered.throughput), 1083);
}

// Nexus Table 2 profiles (ℓ at 4, 8, 16; ℓ(1) extrapolated linearly).
LatencyProfile NexusProfile(double l1, double l4, double l8, double l16) {
  return *LatencyProfile::FromPoints(
      {{1, Millis(l1)}, {4, Millis(l4)}, {8, Millis(l8)}, {16, Millis(l16)}}, Monotonicity::kReject);
}

TEST(SquishyBinPackingTest, NexusSection41SaturatedBatchesAreSixteen) {
  LatencyProfile a = NexusProfile(31.25, 50, 75, 100), b = NexusProfile(20, 50, 90, 125),
                 c = NexusProfile(33.75, 60, 95, 125);
  EXPECT_EQ(UncoordinatedBound(a, Millis(200), 1).batch, 16);
  EXPECT_EQ(UncoordinatedBound(b, Millis(250), 1).batch, 16);
  EXPECT_EQ(UncoordinatedBound(c, Millis(250), 1).batch, 16);
  EXPECT_DOUBLE_EQ(UncoordinatedBound(a, Millis(200), 1).throughput, 160);
  EXPECT_DOUBLE_EQ(UncoordinatedBound(b, Millis(250), 1).throughput, 128);
  // High load: A at 480 r/s takes three whole GPUs at batch 16, no residual.
  std::vector<GpuNode> nodes = SquishyBinPack({{0, &a, Millis(200), 480}});
  ASSERT_EQ(nodes.size(), 3u);
  for (const GpuNode& n : nodes) {
    EXPECT_TRUE(n.saturated);
    EXPECT_EQ(n.sessions[0].batch, 16);
    EXPECT_EQ(n.duty_cycle, Millis(100));
  }
}

TEST(SquishyBinPackingTest, NexusSection41AAndBShareA125msCycleAndCGoesElsewhere) {
  LatencyProfile a = NexusProfile(31.25, 50, 75, 100), b = NexusProfile(20, 50, 90, 125),
                 c = NexusProfile(33.75, 60, 95, 125);
  std::vector<GpuNode> nodes = SquishyBinPack(
      {{0, &a, Millis(200), 64}, {1, &b, Millis(250), 32}, {2, &c, Millis(250), 32}});
  ASSERT_EQ(nodes.size(), 2u);
  const GpuNode& shared = nodes[0];
  EXPECT_EQ(shared.duty_cycle, Millis(125));
  ASSERT_EQ(shared.sessions.size(), 2u);
  EXPECT_EQ(shared.sessions[0].model, 0);
  EXPECT_EQ(shared.sessions[0].batch, 8);  // 75 ms
  EXPECT_EQ(shared.sessions[1].model, 1);
  EXPECT_EQ(shared.sessions[1].batch, 4);  // 50 ms: 75 + 50 <= 125
  EXPECT_DOUBLE_EQ(shared.occupancy, 1.0);
  ASSERT_EQ(nodes[1].sessions.size(), 1u);
  EXPECT_EQ(nodes[1].sessions[0].model, 2);  // 75 + 60 > 125: C does not fit
}

TEST(SquishyBinPackingTest, EveryPlacedSessionMeetsItsSloAndRate) {
  LatencyProfile p1 = *LatencyProfile::Linear(Millis(1), Millis(5), 64);
  LatencyProfile p2 = *LatencyProfile::Linear(Millis(3), Millis(20), 64);
  std::vector<Session> sessions;
  for (int i = 0; i < 20; ++i) {
    sessions.push_back({i, i % 2 ? &p1 : &p2, Millis(50 + 10 * (i % 5)), 5.0 + 37.0 * i});
  }
  std::vector<GpuNode> nodes = SquishyBinPack(sessions);
  std::vector<double> served(sessions.size());
  for (const GpuNode& n : nodes) {
    Duration busy = 0;
    for (const NodeSession& s : n.sessions) {
      const Session& in = sessions[s.model];
      const Duration l = in.profile->Latency(s.batch);
      busy += l;
      EXPECT_LE(n.saturated ? 2 * l : n.duty_cycle + l, in.slo);
      // Capacity: a saturated node runs back-to-back batches; a residual node
      // one batch per duty cycle.
      served[s.model] += s.batch / ToSeconds(n.saturated ? l : n.duty_cycle);
    }
    EXPECT_LE(busy, n.duty_cycle);
  }
  for (size_t i = 0; i < sessions.size(); ++i) EXPECT_GE(served[i], sessions[i].rate) << i;
}

TEST(SquishyBinPackingTest, SessionWithoutAGuaranteedBatchGetsWholeGpusAtBatchOne) {
  // DenseNet121 on an A100 (Symphony Table 4): ℓ(1) = 10.6 ms > SLO/2 = 10.5 ms:
  // no duty cycle bounds its latency, so it runs back-to-back at batch 1.
  LatencyProfile p = *LatencyProfile::Linear(Micros(54), Micros(10546), 64);
  std::vector<GpuNode> nodes = SquishyBinPack({{0, &p, Millis(21), 110}});
  ASSERT_EQ(nodes.size(), 2u);  // 110 r/s at 1/ℓ(1) = 94 r/s per GPU
  for (const GpuNode& n : nodes) {
    EXPECT_TRUE(n.saturated);
    EXPECT_EQ(n.sessions[0].batch, 1);
    EXPECT_EQ(n.duty_cycle, p.Latency(1));
  }
}

TEST(ScalingTest, AddsForTheBadRateAndRemovesTheIdleShare) {
  // 10% bad on 9 GPUs: 9 · 0.1 / 0.9 = 1 more.
  EXPECT_EQ(AdviseScaling(9, 0.1, 0.5).add, 1);
  EXPECT_EQ(AdviseScaling(9, 0.1, 0.5).remove, 0);
  // Within the threshold: remove the idle share, rounded down.
  EXPECT_EQ(AdviseScaling(8, 0.005, 0.3).remove, 2);
  EXPECT_EQ(AdviseScaling(8, 0.005, 0.3).add, 0);
  EXPECT_EQ(AdviseScaling(8, 0.0, 1.5).remove, 8);  // fractions are clamped
}

TEST(ScalingTest, AutoscaleStepActsOnTheAdviceWithinBounds) {
  AutoscaleOptions o;
  o.min_gpus = 2;
  o.max_gpus = 20;
  o.headroom = 0.2;  // aim at 80% busy
  AutoscaleMemory memory;
  // 20% bad on 8 GPUs, 85% busy: Symphony's 8 · 0.2 / 0.8 = 2 more, less
  // the 1 already coming.
  EXPECT_EQ(AutoscaleStep(o, 8, 0, 0.2, 0.15, 1000, &memory), 2);
  EXPECT_EQ(AutoscaleStep(o, 8, 1, 0.2, 0.15, 1000, &memory), 1);
  EXPECT_EQ(AutoscaleStep(o, 8, 3, 0.2, 0.15, 1000, &memory), 0);
  // Bad and fully busy: 10 · 1.0 / 0.8 = 12.5, so 3 more beat Symphony's 2 (10 · 0.15 / 0.85).
  EXPECT_EQ(AutoscaleStep(o, 10, 0, 0.15, 0.0, 1000, &memory), 3);
  // No bad requests but 95% busy (above 80% + 10%): 10 · 0.95 / 0.8 = 11.9, so 2 more.
  EXPECT_EQ(AutoscaleStep(o, 10, 0, 0.0, 0.05, 1000, &memory), 2);
  // Within the band (70–90% busy): nothing.
  EXPECT_EQ(AutoscaleStep(o, 10, 0, 0.0, 0.25, 1000, &memory), 0);
  // 40% busy: release 10 · (1 − 0.4 / 0.8) = 5; not while GPUs are coming.
  EXPECT_EQ(AutoscaleStep(o, 10, 0, 0.0, 0.6, 1000, &memory), -5);
  EXPECT_EQ(AutoscaleStep(o, 10, 2, 0.0, 0.6, 1000, &memory), 0);
  // Never past max_gpus (50% bad on 18 asks 18; 2 are left), nor below min_gpus.
  EXPECT_EQ(AutoscaleStep(o, 18, 0, 0.5, 0.0, 1000, &memory), 2);
  EXPECT_EQ(AutoscaleStep(o, 3, 0, 0.0, 1.0, 1000, &memory), -1);
  // Headroom 0 is Symphony's rule: release N·f, add only on bad requests.
  o.headroom = 0;
  EXPECT_EQ(AutoscaleStep(o, 10, 0, 0.005, 0.3, 1000, &memory), -3);
  EXPECT_EQ(AutoscaleStep(o, 10, 0, 0.0, 0.0, 1000, &memory), 0);
  EXPECT_EQ(AutoscaleStep(o, 9, 0, 0.1, 0.0, 1000, &memory), 1);
}

// A release that made requests bad is not made again until the load — the
// request rate — falls.
TEST(ScalingTest, AReleaseThatMadeRequestsBadIsHeldOff) {
  AutoscaleOptions o;
  o.max_gpus = 16;
  AutoscaleMemory memory;
  EXPECT_EQ(AutoscaleStep(o, 3, 0, 0.0, 0.5, 1000, &memory), -1);   // 50% busy on 3 at 1,000 r/s: release 1
  EXPECT_EQ(AutoscaleStep(o, 2, 0, 0.17, 0.2, 1000, &memory), 1);   // 17% bad on 2: add 1
  for (int i = 0; i < 100; ++i) EXPECT_EQ(AutoscaleStep(o, 3, 0, 0.0, 0.5, 1000, &memory), 0);  // held at 3
  EXPECT_EQ(AutoscaleStep(o, 3, 0, 0.0, 0.54, 950, &memory), 0);  // not 10% fewer requests
  EXPECT_EQ(AutoscaleStep(o, 3, 0, 0.0, 0.6, 850, &memory), -1);  // 15% fewer: the floor goes
  // Lower load still releases down to the floor, not below it.
  memory = {};
  EXPECT_EQ(AutoscaleStep(o, 6, 0, 0.0, 0.5, 1000, &memory), -2);
  EXPECT_EQ(AutoscaleStep(o, 4, 0, 0.3, 0.0, 1000, &memory), 2);
  EXPECT_EQ(AutoscaleStep(o, 8, 0, 0.0, 0.65, 1000, &memory), -2);  // 8 → the floor of 6
  // Busy time is not the measure: with more GPUs, batches are smaller and
  // the same requests keep the GPUs as busy as before. Fewer requests
  // release, however busy.
  memory = {};
  EXPECT_EQ(AutoscaleStep(o, 3, 0, 0.0, 0.5, 1000, &memory), -1);
  EXPECT_EQ(AutoscaleStep(o, 2, 0, 0.17, 0.2, 1000, &memory), 1);  // floor 3
  EXPECT_EQ(AutoscaleStep(o, 3, 0, 0.0, 0.5, 400, &memory), -1);   // as busy as at 1,000 r/s, 60% fewer requests
}

// While requests grow, GPUs are asked for the load they will meet when they
// serve (provision_delay + interval ahead), and none are released.
TEST(ScalingTest, AGrowingLoadIsPlannedForWhenTheGpusWillServe) {
  AutoscaleOptions o;  // interval 10 s, provision 30 s, trend window 60 s (6 intervals)
  o.max_gpus = 64;
  AutoscaleOptions blind = o;
  blind.trend_window = 0;
  AutoscaleMemory memory, blind_memory;
  // 5% more requests every interval, 85% busy on 10 GPUs: within the band
  // (70–90%) now, but 0.85 · 1.05^4 = 1.03 when GPUs asked for now serve.
  double rate = 1000;
  EXPECT_EQ(AutoscaleStep(o, 10, 0, 0.0, 0.15, rate, &memory), 0);  // no trend yet
  rate *= 1.05;
  EXPECT_EQ(AutoscaleStep(o, 10, 0, 0.0, 0.15, rate, &memory), 3);  // ceil(10 · 1.03 / 0.8) − 10
  EXPECT_EQ(AutoscaleStep(blind, 10, 0, 0.0, 0.15, rate, &blind_memory), 0);
  // Growing, even lightly busy: nothing released; flat again: released.
  rate *= 1.05;
  EXPECT_EQ(AutoscaleStep(o, 13, 0, 0.0, 0.5, rate, &memory), 0);
  EXPECT_EQ(AutoscaleStep(blind, 13, 0, 0.0, 0.5, rate, &blind_memory), -4);
  memory = {};
  EXPECT_EQ(AutoscaleStep(o, 13, 0, 0.0, 0.5, rate, &memory), -4);
  // A burst does not ask for more than twice the load.
  memory = {};
  EXPECT_EQ(AutoscaleStep(o, 10, 0, 0.0, 0.2, 1000, &memory), 0);
  EXPECT_EQ(AutoscaleStep(o, 10, 0, 0.0, 0.2, 10000, &memory), 10);  // ceil(10 · 0.8 · 2 / 0.8) − 10
}

}  // namespace
}  // namespace tutti
