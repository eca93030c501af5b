#include "tutti/delays/delay_injection.h"

#include <algorithm>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tutti/core/manual_clock.h"

namespace tutti {
namespace {

using ::testing::HasSubstr;

// The empirical q-quantile of n keyed samples.
Duration EmpiricalQuantile(const DelayInjection& inj, int n, double q) {
  std::vector<Duration> v;
  for (int i = 0; i < n; ++i) v.push_back(inj.Sample(inj.response, kResponseStream, i));
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(q * n)];
}

TEST(DelayDistributionTest, QuantileFunctions) {
  EXPECT_EQ(DelayDistribution::Constant(Millis(3)).Quantile(0.7), Millis(3));
  EXPECT_EQ(DelayDistribution::Uniform(Millis(1), Millis(3))->Quantile(0.5), Millis(2));
  const DelayDistribution ln = *DelayDistribution::LogNormal(Micros(500), Millis(3));
  EXPECT_NEAR(static_cast<double>(ln.Quantile(0.5)), Micros(500), 1);
  EXPECT_NEAR(static_cast<double>(ln.Quantile(0.999)), Millis(3), Micros(1));
  const DelayDistribution ex = *DelayDistribution::Exponential(Millis(1));
  EXPECT_NEAR(static_cast<double>(ex.Quantile(1 - 1 / M_E)), Millis(1), Micros(1));
  const DelayDistribution pts = *DelayDistribution::FromQuantiles({{0.5, Millis(1)}, {0.99, Millis(2)}, {1, Millis(10)}});
  EXPECT_EQ(pts.Quantile(0.25), Micros(500));  // linear from 0 up to the first point
  EXPECT_EQ(pts.Quantile(0.5), Millis(1));
  EXPECT_EQ(pts.Quantile(0.745), Micros(1500));
  EXPECT_EQ(pts.Quantile(0.995), Millis(6));
}

TEST(DelayDistributionTest, BadParametersAreErrors) {
  EXPECT_THAT(DelayDistribution::Uniform(Millis(3), Millis(1)).status().message(), HasSubstr("low <= high"));
  EXPECT_FALSE(DelayDistribution::Exponential(0).ok());
  EXPECT_THAT(DelayDistribution::LogNormal(Millis(3), Millis(1)).status().message(), HasSubstr("median <= p999"));
  EXPECT_THAT(DelayDistribution::FromQuantiles({{0.5, Millis(1)}}).status().message(), HasSubstr("include 1"));
  EXPECT_THAT(DelayDistribution::FromQuantiles({{0.5, Millis(2)}, {1, Millis(1)}}).status().message(),
              HasSubstr("not decrease"));
}

TEST(DelayInjectionTest, SamplesArePureFunctionsOfTheKeyAndFollowTheDistribution) {
  DelayInjection inj;
  inj.response = *DelayDistribution::LogNormal(Micros(400), Millis(3));
  inj.seed = 7;
  EXPECT_EQ(inj.Sample(inj.response, kResponseStream, 42), inj.Sample(inj.response, kResponseStream, 42));
  EXPECT_NE(inj.Sample(inj.response, kResponseStream, 42), inj.Sample(inj.response, kDispatchStream, 42));
  EXPECT_EQ(inj.Sample(inj.dispatch, kDispatchStream, 42), 0);  // absent: nothing added
  EXPECT_NEAR(static_cast<double>(EmpiricalQuantile(inj, 200000, 0.999)), Millis(3), Micros(150));
  EXPECT_NEAR(static_cast<double>(EmpiricalQuantile(inj, 200000, 0.5)), Micros(400), Micros(10));
}

TEST(LateTimerClockTest, TimersFireLateByTheirKeyedDelayAndReportIt) {
  ManualClock base;
  DelayInjection inj;
  inj.timer = *DelayDistribution::Uniform(Millis(1), Millis(2));
  std::vector<Duration> lateness;
  LateTimerClock clock(&base, &inj, [&](Duration d) { lateness.push_back(d); });
  Time fired = 0;
  clock.ScheduleAt(Millis(10), [&] { fired = base.Now(); });
  base.AdvanceTo(Millis(10));
  EXPECT_EQ(fired, 0);
  base.AdvanceTo(Millis(20));
  const Duration late = inj.Sample(inj.timer, kTimerStream, Millis(10));
  EXPECT_EQ(fired, Millis(10) + late);
  ASSERT_EQ(lateness.size(), 1u);
  EXPECT_EQ(lateness[0], late);
  EXPECT_GE(late, Millis(1));
  EXPECT_LE(late, Millis(2));
}

}  // namespace
}  // namespace tutti
