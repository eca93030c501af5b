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

// Estimates are bucket bounds: at or above the true quantile, within 1/16.
void ExpectEstimate(std::optional<Duration> estimate, Duration truth) {
  ASSERT_TRUE(estimate.has_value());
  EXPECT_GE(*estimate, truth);
  EXPECT_LE(*estimate, truth + truth / 16);
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

TEST(PlanDelaysTest, MeasuredDelaysStopAtTheCap) {
  DelayEstimates e;
  e.delays[static_cast<int>(Delay::kDispatch)].value = Millis(2);
  e.delays[static_cast<int>(Delay::kResponse)].value = Millis(30);  // a burst's worst
  e.delays[static_cast<int>(Delay::kTimer)].value = Millis(9);
  const DelayPlan plan = PlanDelays(Fixed(), e, 2, 2, Millis(5));
  EXPECT_EQ(plan.network.ctrl, Millis(2));
  EXPECT_EQ(plan.network.resp, Millis(3));  // dispatch + response within 5 ms
  EXPECT_EQ(plan.frontrun_slack, Millis(5));
  // The configured floors stand even above the cap.
  DelayPlan high = Fixed();
  high.network.resp = Millis(6);
  EXPECT_EQ(PlanDelays(high, e, 2, 2, Millis(5)).network.resp, Millis(6));
}

TEST(DelayModelTest, TheCapIsAShareOfTheSmallestObjective) {
  DelayModel model(Spec(), Options(), Fixed());  // objectives 50 ms: cap 12.5 ms
  for (int i = 0; i < 100; ++i) model.Record(Delay::kResponse, Millis(1) * i, Millis(40));
  EXPECT_EQ(model.Refresh(Seconds(1)).network.resp, Millis(12.5) - Millis(1));
}

// The histograms count every sample in the bucket of its bound (a sample
// at a bound is in its bucket, as Prometheus's `le`), with or without
// `measure`; the plan's estimates only with it.
TEST(DelayModelTest, HistogramsCountEverySampleByItsBoundEvenWithoutMeasuring) {
  for (bool measure : {true, false}) {
    DelayModel model(Spec(), Options(measure), Fixed());
    const std::vector<Duration> samples = {Micros(3), Micros(20), Micros(21), Micros(20), Millis(150)};
    for (Duration v : samples) model.Record(Delay::kDispatch, Millis(10), v);
    model.Record(Delay::kResponse, Millis(10), Micros(7));
    model.Refresh(Millis(100));
    const std::array<DelayHistogram, kDelayKinds> h = model.histograms();
    const DelayHistogram& dispatch = h[static_cast<int>(Delay::kDispatch)];
    EXPECT_EQ(dispatch.count(), 5);
    EXPECT_EQ(dispatch.sum, Micros(3 + 20 + 21 + 20) + Millis(150));
    EXPECT_EQ(dispatch.counts[0], 1);  // ≤ 5 µs
    EXPECT_EQ(dispatch.counts[2], 2);  // (10, 20] µs
    EXPECT_EQ(dispatch.counts[3], 1);  // (20, 50] µs
    EXPECT_EQ(dispatch.counts.back(), 1);  // over 100 ms
    EXPECT_EQ(dispatch.Over(Micros(5)), 4);
    EXPECT_EQ(dispatch.Over(Micros(20)), 2);
    EXPECT_EQ(dispatch.Over(Millis(100)), 1);
    EXPECT_EQ(h[static_cast<int>(Delay::kResponse)].count(), 1);
    EXPECT_EQ(h[static_cast<int>(Delay::kResponse)].counts[1], 1);  // (5, 10] µs
    EXPECT_EQ(h[static_cast<int>(Delay::kTimer)].count(), 0);
    EXPECT_EQ(model.estimates()[Delay::kDispatch].samples, measure ? 5 : 0);
  }
}

TEST(PlanDelaysTest, ComputePlansGoToTheirGpuAndModel) {
  DelayEstimates e;
  e.compute.push_back({1, 0, 10, 1.2, 1.2, 1.5, Millis(2)});
  const DelayPlan plan = PlanDelays(Fixed(), e, 2, 2);
  ASSERT_EQ(plan.compute.size(), 4u);
  EXPECT_EQ(plan.Compute(1, 0, 2), (ComputePlan{1.2, 1.5, Millis(2)}));
  EXPECT_EQ(plan.Compute(0, 0, 2), ComputePlan{});
  EXPECT_EQ(plan.Compute(1, 1, 2), ComputePlan{});
}

// One model on 2 GPUs, ℓ(b) = 0.25 ms · b + 5 ms up to 64, objective 30 ms.
// With Fixed() and a 6.5 ms response margin its GPUs sustain batches of 23
// (2·ℓ(b) + the delays within 30 ms): 4,279 requests/s; with the 1.5 ms
// floor, batches of 33: 4,981/s.
ClusterSpec OneModel() {
  ClusterSpec spec;
  spec.models = {{"r", *LatencyProfile::Linear(Micros(250), Millis(5), 64), Millis(30)}};
  spec.gpus = 2;
  return spec;
}

DelayEstimates TwoMargins(double rate) {
  DelayEstimates e;
  e.margins = {{0.999, std::nullopt, Millis(10)}, {0.995, std::nullopt, Millis(1)}};
  e.arrival_rates = {rate};
  return e;
}

TEST(ChooseMarginTest, BelowCapacityTheHighQuantile) {
  EXPECT_EQ(ChooseMargin(OneModel(), Fixed(), TwoMargins(3000), Micros(7500)), 0u);
  EXPECT_EQ(ChooseMargin(OneModel(), Fixed(), TwoMargins(0)), 0u);
}

TEST(ChooseMarginTest, OverloadedTheMarginThatServesMoreOnTime) {
  // 8,000/s offered: 4,279 × 0.999 on time with the high quantile's margin,
  // 4,981 × 0.995 with the lower one.
  EXPECT_EQ(ChooseMargin(OneModel(), Fixed(), TwoMargins(8000), Micros(7500)), 1u);
  // Not when the lower quantile's margin runs no larger batches.
  DelayEstimates same = TwoMargins(8000);
  same.margins[1].response = Millis(10);
  EXPECT_EQ(ChooseMargin(OneModel(), Fixed(), same, Micros(7500)), 0u);
  // Nor when it makes more late than it serves: 4,981 × 0.85 < 4,279 × 0.999.
  DelayEstimates costly = TwoMargins(8000);
  costly.margins[1].quantile = 0.85;
  EXPECT_EQ(ChooseMargin(OneModel(), Fixed(), costly, Micros(7500)), 0u);
}

TEST(DelayModelTest, OverloadPlansTheResponseDelayAtALowerQuantile) {
  // 20,000 answers over a second: 0.3% take 10 ms, the rest 1 ms — p99.9 is
  // 10 ms, p99.5 1 ms.
  auto run = [](int arrivals_per_second, bool overload_margins) {
    DelayModelOptions o = Options();
    o.overload_margins = overload_margins;
    DelayModel model(OneModel(), o, Fixed());
    for (int i = 0; i < 20000; ++i) {
      model.Record(Delay::kResponse, Micros(50) * i, i % 1000 < 3 ? Millis(10) : Millis(1));
    }
    for (int i = 0; i < arrivals_per_second; ++i) {
      model.RecordArrival(0, static_cast<Duration>(static_cast<double>(kSecond) * i / arrivals_per_second));
    }
    const DelayPlan plan = model.Refresh(Seconds(1));
    return std::pair(plan.network.resp, model.estimates().planned_quantile);
  };
  // Below capacity: p99.9, up to the cap (25% of 30 ms, less the 1 ms dispatch floor).
  EXPECT_EQ(run(3000, true), std::pair(Micros(6500), 0.999));
  // Twice what the GPUs sustain with that margin: p99.5's, at the floor.
  EXPECT_EQ(run(8000, true), std::pair(Micros(1500), 0.995));
  EXPECT_EQ(run(8000, false), std::pair(Micros(6500), 0.999));
}

TEST(DelayModelTest, PlansWithTheQuantileOfTheResponseDelays) {
  DelayModel model(Spec(), Options(), Fixed());
  // 10,000 answers over a second: 0.2% take 3 ms, the rest 0.5 ms — p99.9 is 3 ms.
  for (int i = 0; i < 10000; ++i) {
    model.Record(Delay::kResponse, Micros(100) * i, i % 500 == 7 ? Millis(3) : Micros(500));
  }
  const DelayPlan plan = model.Refresh(Seconds(1));
  EXPECT_EQ(model.estimates()[Delay::kResponse].samples, 10000);
  EXPECT_EQ(model.estimates()[Delay::kResponse].value, Millis(3));
  EXPECT_EQ(plan.network.resp, Millis(3));
  EXPECT_EQ(plan.network.ctrl, Millis(1));  // no dispatch samples: the floor
  // Two seconds later the window holds nothing of it: back to the floor.
  EXPECT_EQ(model.Refresh(Seconds(3)).network.resp, Micros(1500));
}

TEST(DelayModelTest, AtHighRatesAnEstimateFollowsTheRecentSamples) {
  DelayModelOptions o = Options();
  o.window = Seconds(10);
  o.min_samples = 20000;
  o.hold = 0;
  // A 2-second burst of 4 ms answers at 20,000/s, then 0.5 ms ones at the
  // same rate; the plan is remade every 100 ms as the answers come.
  auto run = [&](const DelayModelOptions& options) {
    DelayModel model(Spec(), options, Fixed());
    std::vector<Duration> planned;  // at 2, 3 and 4 s
    for (int i = 0; i < 100000; ++i) {
      const Time at = Micros(50) * i;
      if (at % Millis(100) == 0) {
        const DelayPlan plan = model.Refresh(at);
        if (at % Seconds(1) == 0 && at >= Seconds(2)) planned.push_back(plan.network.resp);
      }
      model.Record(Delay::kResponse, at, at < Seconds(2) ? Millis(4) : Micros(500));
    }
    return planned;
  };
  // One second after the burst the last 20,000 answers are all new: the
  // plan is back at the floor.
  EXPECT_EQ(run(o), (std::vector<Duration>{Millis(4), Micros(1500), Micros(1500)}));
  // The whole window holds the burst's p99.9 for its 10 s.
  o.min_samples = 0;
  EXPECT_EQ(run(o), (std::vector<Duration>{Millis(4), Millis(4), Millis(4)}));
}

TEST(DelayModelTest, ThePlanHoldsAnEstimateForASecond) {
  DelayModel model(Spec(), Options(), Fixed());  // window 2 s, hold 1 s
  for (int i = 0; i < 100; ++i) model.Record(Delay::kResponse, Millis(1) * i, Millis(3));
  EXPECT_EQ(model.Refresh(Millis(2050)).network.resp, Millis(3));  // [50 ms, 2050 ms): 50 samples
  EXPECT_EQ(model.Refresh(Millis(2150)).network.resp, Millis(3));  // none in the window, held
  EXPECT_FALSE(model.estimates()[Delay::kResponse].value.has_value());
  EXPECT_EQ(model.Refresh(Millis(3050)).network.resp, Micros(1500));
}

TEST(DelayModelTest, AFewOutliersDoNotSetTheQuantile) {
  DelayModel model(Spec(), Options(), Fixed());
  // 1,000 samples: the 3 largest are ignored (outliers = 3), whatever they are.
  for (int i = 0; i < 1000; ++i) model.Record(Delay::kResponse, Millis(1) * i, i < 3 ? Seconds(1) : Millis(2));
  model.Refresh(Seconds(1));
  ExpectEstimate(model.estimates()[Delay::kResponse].value, Millis(2));
  // A fourth is not an outlier any more: p99.9 of 1,000 is the second largest.
  model.Record(Delay::kResponse, Millis(1500), Seconds(1));
  model.Refresh(Millis(1600));
  EXPECT_EQ(model.estimates()[Delay::kResponse].value, Seconds(1));
}

TEST(DelayModelTest, TheSlackCoversTheTimerQuantileNotTheTail) {
  DelayModel model(Spec(), Options(), Fixed());
  // Timers 0.2 ms late, 5% of them 6 ms: the slack covers p90, 0.2 ms (below
  // its 0.5 ms floor); later timers shrink their batches instead.
  for (int i = 0; i < 1000; ++i) model.Record(Delay::kTimer, Millis(1) * i, i % 20 == 0 ? Millis(6) : Micros(200));
  const DelayPlan plan = model.Refresh(Seconds(1));
  EXPECT_EQ(plan.frontrun_slack, Micros(500));
  ExpectEstimate(model.estimates()[Delay::kTimer].value, Micros(200));
  // The tail guards heads that cannot shrink.
  EXPECT_EQ(plan.head_guard, Millis(6));
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

TEST(DelayModelTest, LateStartsAndJitterBecomeTheTail) {
  DelayModel model(Spec(), Options(), Fixed());
  Time t = 0;
  for (int i = 0; i < 100; ++i) {
    const Duration late_start = i % 20 == 3 ? Millis(4) : Micros(100);  // 5% start 4 ms late
    const Duration run = i % 20 == 7 ? Millis(18) : Millis(9);         // 5% run twice as long; ℓ(4) = 9 ms
    model.RecordBatch(0, 1, 4, t, t + late_start, t + late_start + run);
    t += Millis(20);
  }
  const ComputePlan c = model.Refresh(Seconds(2)).Compute(0, 1, 2);
  EXPECT_EQ(c.scale, 1);       // typically as profiled
  EXPECT_EQ(c.tail_scale, 2);  // the tail
  EXPECT_EQ(c.late_start, Millis(4));
  EXPECT_EQ(c.Occupancy(Spec().models[1].profile, 4), Millis(9));
  EXPECT_EQ(c.Latency(Spec().models[1].profile, 4), Millis(22));
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
  clock.AdvanceTo(Millis(3100));  // the sample left the 2 s window at 2.3 s; the plan holds it 1 s
  ASSERT_EQ(applied.size(), 1u);
  clock.AdvanceTo(Millis(3200));
  ASSERT_EQ(applied.size(), 2u);
  EXPECT_EQ(applied[1].second.frontrun_slack, Micros(500));
  model.Stop();
  EXPECT_EQ(clock.pending_timers(), 0u);
}

}  // namespace
}  // namespace tutti
