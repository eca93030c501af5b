#include "tutti/profiler/profiler.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tutti/core/manual_clock.h"

namespace tutti {
namespace {

using ::testing::ElementsAre;

TEST(ProfilerTest, BatchSizesAreOneToThirtyTwoThenPowersOfTwoAndTheMax) {
  EXPECT_THAT(ProfileBatchSizes(4), ElementsAre(1, 2, 3, 4));
  std::vector<int> s = ProfileBatchSizes(200);
  EXPECT_EQ(s.size(), 32u + 3u);
  EXPECT_EQ(s[31], 32);
  EXPECT_THAT(std::vector<int>(s.begin() + 32, s.end()), ElementsAre(64, 128, 200));
  EXPECT_EQ(ProfileBatchSizes(256).back(), 256);
  EXPECT_EQ(ProfileBatchSizes(256).size(), 32u + 3u);
}

TEST(ProfilerTest, RecoversAnExactLinearExecutorAndIgnoresOutliersAndWarmup) {
  ManualClock clock;
  int calls = 0;
  // ℓ(b) = 100 µs · b + 400 µs, with a slow first (cold) run and one outlier
  // per batch size that the median must ignore.
  auto run = [&](int b) {
    ++calls;
    Duration d = Micros(100) * b + Micros(400);
    if (calls == 1 || calls % 13 == 0) d *= 20;
    clock.AdvanceBy(d);
    return absl::OkStatus();
  };
  ProfilerOptions options{.max_batch = 64, .warmup_runs = 2, .repeats = 9, .min_time_per_batch = 0};
  std::vector<int> reported;
  absl::StatusOr<LatencyProfile> p =
      MeasureLatencyProfile(run, clock, options, [&](int b, Duration) { reported.push_back(b); });
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(calls, 33 * (2 + 9));
  EXPECT_EQ(reported, ProfileBatchSizes(64));
  EXPECT_EQ(p->max_batch(), 64);
  EXPECT_EQ(p->Latency(1), Micros(500));
  EXPECT_EQ(p->Latency(48), Micros(5200));  // interpolated between 32 and 64
  EXPECT_NEAR(p->fit().alpha_ns, 100e3, 1);
  EXPECT_NEAR(p->fit().beta_ns, 400e3, 1);
}

TEST(ProfilerTest, FastBatchesAreSampledForTheMinimumTime) {
  ManualClock clock;
  std::vector<int> runs_per_batch(3);
  auto run = [&](int b) {
    ++runs_per_batch[b];
    clock.AdvanceBy(b == 1 ? Micros(100) : Millis(5));
    return absl::OkStatus();
  };
  ProfilerOptions options{.max_batch = 2, .warmup_runs = 0, .repeats = 3,
                          .min_time_per_batch = Millis(20), .max_repeats = 150};
  ASSERT_TRUE(MeasureLatencyProfile(run, clock, options).ok());
  EXPECT_EQ(runs_per_batch[1], 150);  // 200 runs would be needed; capped
  EXPECT_EQ(runs_per_batch[2], 4);    // 4 × 5 ms reaches 20 ms
}

TEST(ProfilerTest, NoisyDecreasingMeasurementsAreMadeMonotone) {
  ManualClock clock;
  auto run = [&](int b) {
    clock.AdvanceBy(b == 3 ? Micros(100) : Micros(200) * b);  // b = 3 "faster" than b = 2
    return absl::OkStatus();
  };
  absl::StatusOr<LatencyProfile> p = MeasureLatencyProfile(run, clock, {.max_batch = 4});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->Latency(3), p->Latency(2));
}

TEST(ProfilerTest, PropagatesExecutorErrorsAndRejectsBadOptions) {
  ManualClock clock;
  auto fail = [](int b) {
    return b < 3 ? absl::OkStatus() : absl::InternalError("out of memory at batch 3");
  };
  EXPECT_EQ(MeasureLatencyProfile(fail, clock, {.max_batch = 8}).status().message(),
            "out of memory at batch 3");
  auto ok = [](int) { return absl::OkStatus(); };
  EXPECT_EQ(MeasureLatencyProfile(ok, clock, {.max_batch = 0}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(MeasureLatencyProfile(ok, clock, {.max_batch = 4, .repeats = 0}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tutti
