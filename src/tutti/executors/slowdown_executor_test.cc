#include "tutti/executors/slowdown_executor.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tutti/core/manual_clock.h"
#include "tutti/executors/emulated_executor.h"

namespace tutti {
namespace {

TEST(PlanSlowdownsTest, KeepsTheConfiguredNumberOfEpisodesUnderWayAndIsSeeded) {
  SlowdownOptions options{.concurrent = 3, .instances_per_episode = 2, .min_duration = Millis(100),
                          .max_duration = Millis(300), .factor = 4, .random = true, .seed = 7};
  const auto plan = PlanSlowdowns(10, options, 0, Seconds(20));
  EXPECT_EQ(plan, PlanSlowdowns(10, options, 0, Seconds(20)));
  for (Time t = 0; t < Seconds(20); t += Millis(37)) {
    int slowed = 0;
    for (const auto& episodes : plan) {
      for (const SlowdownEpisode& e : episodes) {
        if (e.start <= t && t < e.end) {
          ++slowed;
          EXPECT_EQ(e.factor, 4);
          EXPECT_GE(e.end - e.start, Millis(100));
          EXPECT_LE(e.end - e.start, Millis(300));
        }
      }
    }
    // 3 lanes × 2 instances each (an instance may be picked by two lanes).
    EXPECT_EQ(slowed, 6) << "at " << t;
  }
  options.concurrent = 0;
  for (const auto& episodes : PlanSlowdowns(10, options, 0, Seconds(20))) EXPECT_TRUE(episodes.empty());
}

TEST(SlowdownExecutorTest, BatchesInsideAnEpisodeTakeFactorTimesLongerAndQueueBehind) {
  ManualClock clock;
  const LatencyProfile profile = *LatencyProfile::Linear(0, Millis(2), 4);
  auto inner = std::make_unique<EmulatedExecutor>(&clock, std::vector<EmulatedExecutor::Model>{{profile, 1}});
  SlowdownExecutor slow(&clock, std::move(inner), {{Millis(10), Millis(20), 3.0}});
  EXPECT_EQ(slow.EpisodeAt(Millis(9)), nullptr);
  ASSERT_NE(slow.EpisodeAt(Millis(10)), nullptr);
  EXPECT_EQ(slow.EpisodeAt(Millis(10))->factor, 3);
  EXPECT_EQ(slow.EpisodeAt(Millis(20)), nullptr);
  std::vector<ExecResult> done;
  auto record = [&](ExecResult r) { done.push_back(std::move(r)); };
  slow.Run({0, 1, {0}, 0}, record);            // 0 → 2 ms: normal
  slow.Run({0, 1, {0}, Millis(11)}, record);   // 11 → 13, stretched to 17
  slow.Run({0, 1, {0}, Millis(12)}, record);   // waits: 17 → 19, stretched to 23
  clock.AdvanceBy(Seconds(1));
  ASSERT_EQ(done.size(), 3u);
  EXPECT_EQ(done[0].finished, Millis(2));
  EXPECT_EQ(done[1].started, Millis(11));
  EXPECT_EQ(done[1].finished, Millis(17));
  EXPECT_EQ(done[2].started, Millis(17));
  EXPECT_EQ(done[2].finished, Millis(23));
}

TEST(SlowdownExecutorTest, APacedExecutorHoldsEachBatchUntilThePaceAfterItsStart) {
  ManualClock clock;
  const LatencyProfile profile = *LatencyProfile::Linear(Millis(3), 0, 4);  // 3 ms an item
  auto inner = std::make_unique<EmulatedExecutor>(&clock, std::vector<EmulatedExecutor::Model>{{profile, 1}});
  SlowdownExecutor paced(&clock, std::move(inner), {}, 1, Millis(5));
  std::vector<ExecResult> done;
  auto record = [&](ExecResult r) { done.push_back(std::move(r)); };
  paced.Run({0, 1, {0}, 0}, record);           // 0 → 3 ms, held to 5
  paced.Run({0, 1, {0}, Millis(1)}, record);   // waits: 5 → 8, held to 10
  paced.Run({0, 2, {0, 0}, Millis(2)}, record);  // waits: 10 → 16, longer than the pace
  clock.AdvanceBy(Millis(9));
  ASSERT_EQ(done.size(), 1u);  // the second is not out before the pace
  clock.AdvanceBy(Seconds(1));
  ASSERT_EQ(done.size(), 3u);
  EXPECT_EQ(done[0].finished, Millis(5));
  EXPECT_EQ(done[1].started, Millis(5));
  EXPECT_EQ(done[1].finished, Millis(10));
  EXPECT_EQ(done[2].started, Millis(10));
  EXPECT_EQ(done[2].finished, Millis(16));
}

TEST(SlowdownExecutorTest, RandomEpisodesStretchEachBatchByAnExponentialMultiplier) {
  auto run = [](uint64_t seed) {
    ManualClock clock;
    const LatencyProfile profile = *LatencyProfile::Linear(0, Millis(1), 1);
    auto inner = std::make_unique<EmulatedExecutor>(&clock, std::vector<EmulatedExecutor::Model>{{profile, 1}});
    SlowdownExecutor slow(&clock, std::move(inner), {{0, Seconds(100), 3.0, true}}, seed);
    std::vector<Duration> took;
    for (int i = 0; i < 2000; ++i) {
      slow.Run({0, 1, {0}, 0}, [&](ExecResult r) { took.push_back(r.finished - r.started); });
    }
    clock.AdvanceBy(Seconds(200));
    return took;
  };
  const std::vector<Duration> a = run(5);
  ASSERT_EQ(a.size(), 2000u);
  EXPECT_EQ(a, run(5));
  EXPECT_NE(a, run(6));
  double mean = 0;
  for (Duration d : a) {
    EXPECT_GE(d, Millis(1));
    mean += ToMillis(d) / a.size();
  }
  EXPECT_NEAR(mean, 3.0, 0.2);  // 1 + 2 · E[Exp(1)]
}

}  // namespace
}  // namespace tutti
