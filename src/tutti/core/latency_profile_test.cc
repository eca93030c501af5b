#include "tutti/core/latency_profile.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tutti {
namespace {

using ::testing::HasSubstr;

// Symphony Table 2: ResNet50 on a V100-class GPU, α = 1.053 ms, β = 5.072 ms.
LatencyProfile ResNet50() { return *LatencyProfile::Linear(Millis(1.053), Millis(5.072), 64); }

TEST(LatencyProfileTest, LinearProfileIsExact) {
  LatencyProfile p = ResNet50();
  EXPECT_EQ(p.max_batch(), 64);
  EXPECT_EQ(p.Latency(1), Millis(6.125));
  EXPECT_EQ(p.Latency(16), Millis(1.053 * 16 + 5.072));
  EXPECT_NEAR(p.fit().alpha_ns, 1.053e6, 1e-3);
  EXPECT_NEAR(p.fit().beta_ns, 5.072e6, 1e-3);
}

TEST(LatencyProfileTest, FitRecoversAlphaBetaFromNoisyPoints) {
  std::vector<ProfilePoint> pts;
  for (int b = 1; b <= 32; ++b) {
    const Duration noise = (b % 2 == 0 ? 1 : -1) * Micros(5);
    pts.push_back({b, Micros(100) * b + Micros(900) + noise});
  }
  LatencyProfile p = *LatencyProfile::FromPoints(pts, Monotonicity::kReject);
  EXPECT_NEAR(p.fit().alpha_ns, 100e3, 1e3);
  EXPECT_NEAR(p.fit().beta_ns, 900e3, 10e3);
}

TEST(LatencyProfileTest, InterpolatesBetweenMeasuredSizes) {
  LatencyProfile p = *LatencyProfile::FromPoints({{1, 100}, {4, 400}, {8, 1200}},
                                                 Monotonicity::kReject);
  EXPECT_EQ(p.max_batch(), 8);
  EXPECT_EQ(p.Latency(2), 200);
  EXPECT_EQ(p.Latency(4), 400);
  EXPECT_EQ(p.Latency(6), 800);
  EXPECT_EQ(p.Latency(8), 1200);
}

TEST(LatencyProfileTest, RejectsNonMonotoneTableNamingTheSizes) {
  auto p = LatencyProfile::FromPoints({{1, 100}, {2, 300}, {4, 250}}, Monotonicity::kReject);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(p.status().message(), HasSubstr("not monotone: l(4)"));
  EXPECT_THAT(p.status().message(), HasSubstr("l(2)"));
}

TEST(LatencyProfileTest, EnforcesMonotonicityByRunningMaximum) {
  auto p = LatencyProfile::FromPoints({{1, 100}, {2, 300}, {4, 250}, {8, 500}},
                                      Monotonicity::kEnforce);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->Latency(4), 300);
  EXPECT_EQ(p->Latency(3), 300);
  for (int b = 2; b <= p->max_batch(); ++b) EXPECT_GE(p->Latency(b), p->Latency(b - 1));
}

TEST(LatencyProfileTest, RejectsMalformedPoints) {
  EXPECT_FALSE(LatencyProfile::FromPoints({}, Monotonicity::kReject).ok());
  EXPECT_THAT(LatencyProfile::FromPoints({{2, 10}}, Monotonicity::kReject).status().message(),
              HasSubstr("must include batch size 1"));
  EXPECT_THAT(LatencyProfile::FromPoints({{1, 10}, {1, 12}}, Monotonicity::kReject)
                  .status().message(),
              HasSubstr("appears twice"));
  EXPECT_THAT(LatencyProfile::FromPoints({{0, 10}}, Monotonicity::kReject).status().message(),
              HasSubstr("not positive"));
  EXPECT_THAT(LatencyProfile::FromPoints({{1, 0}}, Monotonicity::kReject).status().message(),
              HasSubstr("must be positive"));
  EXPECT_FALSE(LatencyProfile::Linear(-1, 5, 8).ok());
  EXPECT_FALSE(LatencyProfile::Linear(1, 5, 0).ok());
}

TEST(LatencyProfileTest, MaxBatchWithinBudget) {
  LatencyProfile p = ResNet50();
  // Symphony Table 2: without coordination the batch must satisfy 2ℓ(b) <= 25 ms,
  // i.e. ℓ(b) <= 12.5 ms → b = 7.
  EXPECT_EQ(p.MaxBatchWithin(Millis(12.5)), 7);
  // Staggered: (1 + 1/8)ℓ(b) <= 25 ms → ℓ(b) <= 22.22 ms → b = 16.
  EXPECT_EQ(p.MaxBatchWithin(Millis(25.0 * 8 / 9)), 16);
  EXPECT_EQ(p.MaxBatchWithin(Millis(6.125)), 1);  // exactly ℓ(1)
  EXPECT_EQ(p.MaxBatchWithin(Millis(6.124)), 0);
  EXPECT_EQ(p.MaxBatchWithin(Seconds(10)), 64);
}

TEST(LatencyProfileTest, MaxBatchForRateMatchesNexusResidualRule) {
  // Nexus §4.1 model A (Table 2: ℓ(4) = 50, ℓ(8) = 75, ℓ(16) = 100 ms; ℓ(1)
  // extrapolated), SLO 200 ms, residual 64 r/s → batch 8 (ℓ(8) = 75 ms plus
  // 8/64 s = 125 ms of gathering: exactly 200 ms).
  LatencyProfile a = *LatencyProfile::FromPoints(
      {{1, Millis(31.25)}, {4, Millis(50)}, {8, Millis(75)}, {16, Millis(100)}},
      Monotonicity::kReject);
  EXPECT_EQ(a.MaxBatchWithin(Millis(100)), 16);  // saturated: 2ℓ(b) <= 200 ms
  EXPECT_EQ(a.MaxBatchForRate(Millis(200), 64.0), 8);
  // Brute force agrees on many rates.
  for (double r : {1.0, 10.0, 64.0, 100.0, 1000.0, 1e6}) {
    int expect = 0;
    for (int b = 1; b <= a.max_batch(); ++b) {
      if (static_cast<double>(a.Latency(b)) + b / r * 1e9 <= static_cast<double>(Millis(200))) {
        expect = b;
      }
    }
    EXPECT_EQ(a.MaxBatchForRate(Millis(200), r), expect) << "rate " << r;
  }
}

TEST(LatencyProfileTest, LargestFitting) {
  EXPECT_EQ(LargestFitting(10, [](int b) { return b <= 7; }), 7);
  EXPECT_EQ(LargestFitting(10, [](int b) { return b <= 70; }), 10);
  EXPECT_EQ(LargestFitting(10, [](int) { return false; }), 0);
  EXPECT_EQ(LargestFitting(0, [](int) { return true; }), 0);
}

TEST(LatencyProfileTest, ThroughputIsBatchOverLatency) {
  LatencyProfile p = *LatencyProfile::Linear(Millis(5), Millis(35), 64);
  EXPECT_DOUBLE_EQ(p.Throughput(16), 16 / 0.115);
}

}  // namespace
}  // namespace tutti
