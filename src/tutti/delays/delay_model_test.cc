#include "tutti/delays/delay_model.h"

#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "tutti/core/manual_clock.h"

namespace tutti {
namespace {

// Two models on 2 GPUs; ℓ(b) = 1 ms · b + 5 ms.
ClusterSpec Spec() {
  ClusterSpec spec;
  const LatencyProfile p = *LatencyProfile::Linear(Millis(1), Millis(5), 16);
  spec.models = {{"a", p, Millis(50)}, {"b", p, Millis(50)}};
  spec.gpus = 2;
  return spec;
}

DelayModelOptions Options(bool measure = true) {
  DelayModelOptions o;
  o.measure = measure;
  o.window = Seconds(2);
  o.refresh = Millis(100);
  return o;
}

DelayPlan Fixed() {
  DelayPlan p;
  p.network = {Millis(1), Micros(10), Micros(1500)};
  p.frontrun_slack = Micros(500);
  return p;
}

TEST(PlanDelaysTest, MeasuredDelaysRaiseTheirFloorsAndNeverLowerThem) {
  DelayEstimates e;
  e.delays[static_cast<int>(Delay::kDispatch)].value = Micros(300);  // below the 1 ms floor
  e.delays[static_cast<int>(Delay::kResponse)].value = Millis(3);    // above 1.5 ms
  e.delays[static_cast<int>(Delay::kTimer)].value = Millis(2);       // above 0.5 ms
  const DelayPlan plan = PlanDelays(Fixed(), e, 2, 2);
  EXPECT_EQ(plan.network.ctrl, Millis(1));
  EXPECT_EQ(plan.network.data_per_request, Micros(10));
  EXPECT_EQ(plan.network.resp, Millis(3));
  EXPECT_EQ(plan.frontrun_slack, Millis(2));
  EXPECT_TRUE(plan.compute.empty());
  EXPECT_EQ(PlanDelays(Fixed(), DelayEstimates{}, 2, 2), Fixed());  // nothing measured: the floors
}

TEST(PlanDelaysTest, ComputePlansGoToTheirGpuAndModel) {
  DelayEstimates e;
  e.compute.push_back({1, 0, 10, 1.2, 1.2, Millis(2)});
  const DelayPlan plan = PlanDelays(Fixed(), e, 2, 2);
  ASSERT_EQ(plan.compute.size(), 4u);
  EXPECT_EQ(plan.Compute(1, 0, 2), (ComputePlan{1.2, Millis(2)}));
  EXPECT_EQ(plan.Compute(0, 0, 2), ComputePlan{});
  EXPECT_EQ(plan.Compute(1, 1, 2), ComputePlan{});
}

TEST(DelayModelTest, PlansWithTheQuantileOfTheResponseDelays) {
  DelayModel model(Spec(), Options(), Fixed());
  // 1000 answers over a second: 998 take 0.5 ms, two take 3 ms — p99.9 is 3 ms.
  for (int i = 0; i < 1000; ++i) model.Record(Delay::kResponse, Millis(1) * i, i % 500 == 7 ? Millis(3) : Micros(500));
  const DelayPlan plan = model.Refresh(Seconds(1));
  EXPECT_EQ(model.estimates()[Delay::kResponse].samples, 1000);
  EXPECT_EQ(model.estimates()[Delay::kResponse].value, Millis(3));
  EXPECT_EQ(plan.network.resp, Millis(3));
  EXPECT_EQ(plan.network.ctrl, Millis(1));  // no dispatch samples: the floor
  // Two seconds later the window holds nothing of it: back to the floor.
  EXPECT_EQ(model.Refresh(Seconds(3)).network.resp, Micros(1500));
}

TEST(DelayModelTest, WithoutMeasuringThePlanIsTheConfiguredOne) {
  DelayModel model(Spec(), Options(/*measure=*/false), Fixed());
  model.Record(Delay::kResponse, 0, Millis(30));
  model.RecordBatch(0, 0, 1, 0, 0, Millis(60));
  EXPECT_EQ(model.Refresh(Seconds(1)), Fixed());
}

TEST(DelayModelTest, AnExecutorTwentyPercentSlowIsPlannedTwentyPercentSlower) {
  DelayModel model(Spec(), Options(), Fixed());
  std::mt19937_64 rng(3);
  std::uniform_int_distribution<int> batch(1, 16);
  Time t = 0;
  for (int i = 0; i < 200; ++i) {
    const int b = batch(rng);
    const Duration l = Millis(1) * b + Millis(5);
    model.RecordBatch(1, 0, b, t, t, t + l * 12 / 10);  // GPU 1 runs model a 1.2× slow
    model.RecordBatch(0, 0, b, t, t, t + l);            // GPU 0 as profiled
    t += Millis(5);
  }
  const DelayPlan plan = model.Refresh(Seconds(1));
  const ComputePlan slow = plan.Compute(1, 0, 2);
  EXPECT_NEAR(slow.scale, 1.2, 1.2 * 0.04);  // the median ratio, within its bucket
  EXPECT_EQ(plan.Compute(0, 0, 2), ComputePlan{});  // as profiled: exact
  EXPECT_EQ(plan.Compute(0, 1, 2), ComputePlan{});  // never ran: as profiled
}

TEST(DelayModelTest, LateStartsAndJitterBecomeTheExcess) {
  DelayModel model(Spec(), Options(), Fixed());
  Time t = 0;
  for (int i = 0; i < 100; ++i) {
    const Duration late_start = i == 50 ? Millis(4) : Micros(100);
    model.RecordBatch(0, 1, 4, t, t + late_start, t + late_start + Millis(9));  // ℓ(4) = 9 ms
    t += Millis(10);
  }
  const ComputePlan c = model.Refresh(Seconds(1)).Compute(0, 1, 2);
  EXPECT_EQ(c.scale, 1);
  EXPECT_EQ(c.excess, Millis(4));
}

TEST(DelayModelTest, StartRefreshesOnItsClockAndAppliesOnlyChangedPlans) {
  ManualClock clock;
  DelayModel model(Spec(), Options(), Fixed());
  std::vector<std::pair<Time, DelayPlan>> applied;
  model.Start(&clock, [&](const DelayPlan& p) { applied.push_back({clock.Now(), p}); });
  clock.AdvanceTo(Millis(250));
  EXPECT_TRUE(applied.empty());  // nothing measured yet: the plan is unchanged
  model.Record(Delay::kTimer, Millis(260), Millis(4));
  clock.AdvanceTo(Millis(299));
  EXPECT_TRUE(applied.empty());  // its slot ends at 300 ms
  clock.AdvanceTo(Millis(300));
  ASSERT_EQ(applied.size(), 1u);
  EXPECT_EQ(applied[0].first, Millis(300));
  EXPECT_EQ(applied[0].second.frontrun_slack, Millis(4));
  clock.AdvanceTo(Millis(1000));
  EXPECT_EQ(applied.size(), 1u);
  clock.AdvanceTo(Millis(2300));  // the sample leaves the 2 s window
  ASSERT_EQ(applied.size(), 2u);
  EXPECT_EQ(applied[1].second.frontrun_slack, Micros(500));
  model.Stop();
  EXPECT_EQ(clock.pending_timers(), 0u);
}

}  // namespace
}  // namespace tutti
