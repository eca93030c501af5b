#include "tutti/executors/emulated_executor.h"

#include "gtest/gtest.h"
#include "tutti/core/manual_clock.h"

namespace tutti {
namespace {

struct Done {
  std::vector<ExecResult> results;
  Executor::DoneFn Fn() {
    return [this](ExecResult r) { results.push_back(std::move(r)); };
  }
};

EmulatedExecutor Make(ManualClock* clock) {
  // ResNet50 on an A100-like profile: ℓ(b) = 1 ms · b + 5 ms; 10 outputs.
  return EmulatedExecutor(clock, {{*LatencyProfile::Linear(Millis(1), Millis(5), 16), 10}});
}

TEST(EmulatedExecutorTest, TakesExactlyTheProfileLatencyAndReturnsMarkedZeros) {
  ManualClock clock;
  EmulatedExecutor gpu = Make(&clock);
  Done done;
  gpu.Run({0, 3, std::vector<float>(3 * 784), 0}, done.Fn());
  clock.AdvanceTo(Millis(7.999));
  EXPECT_TRUE(done.results.empty());
  clock.AdvanceTo(Millis(8));
  ASSERT_EQ(done.results.size(), 1u);
  const ExecResult& r = done.results[0];
  EXPECT_TRUE(r.status.ok());
  EXPECT_TRUE(r.emulated);
  EXPECT_EQ(r.started, 0);
  EXPECT_EQ(r.finished, Millis(8));
  EXPECT_EQ(r.output, std::vector<float>(30, 0.0f));
}

TEST(EmulatedExecutorTest, RunsOneBatchAtATimeAndHonoursStartTimes) {
  ManualClock clock;
  EmulatedExecutor gpu = Make(&clock);
  Done done;
  gpu.Run({0, 1, {}, 0}, done.Fn());             // 0 → 6 ms
  gpu.Run({0, 1, {}, 0}, done.Fn());             // queued: 6 → 12 ms
  gpu.Run({0, 2, {}, Millis(20)}, done.Fn());    // waits for its start: 20 → 27 ms
  clock.AdvanceTo(Seconds(1));
  ASSERT_EQ(done.results.size(), 3u);
  EXPECT_EQ(done.results[1].started, Millis(6));
  EXPECT_EQ(done.results[1].finished, Millis(12));
  EXPECT_EQ(done.results[2].started, Millis(20));
  EXPECT_EQ(done.results[2].finished, Millis(27));
}

TEST(EmulatedExecutorTest, BatchOutsideTheProfileIsAnError) {
  ManualClock clock;
  EmulatedExecutor gpu = Make(&clock);
  Done done;
  gpu.Run({0, 17, {}, 0}, done.Fn());
  ASSERT_EQ(done.results.size(), 1u);
  EXPECT_EQ(done.results[0].status.code(), absl::StatusCode::kInvalidArgument);
}

// With a memory budget a model runs only once loaded, from its load's end,
// and not after its eviction.
TEST(EmulatedExecutorTest, UnderAMemoryBudgetOnlyLoadedModelsRun) {
  ManualClock clock;
  const LatencyProfile profile = *LatencyProfile::Linear(Millis(1), Millis(5), 16);
  EmulatedExecutor gpu(&clock, {{profile, 10}, {profile, 10}}, /*memory_budget=*/true);
  Done done;
  gpu.Run({0, 1, {}, 0}, done.Fn());  // nothing is loaded
  ASSERT_EQ(done.results.size(), 1u);
  EXPECT_EQ(done.results[0].status.code(), absl::StatusCode::kFailedPrecondition);
  gpu.Load({0, 0, Millis(8), {}});
  gpu.Run({0, 1, {}, Millis(4)}, done.Fn());  // before the load ends
  ASSERT_EQ(done.results.size(), 2u);
  EXPECT_EQ(done.results[1].status.code(), absl::StatusCode::kFailedPrecondition);
  gpu.Run({0, 2, {}, Millis(8)}, done.Fn());  // at its end: runs
  clock.AdvanceTo(Millis(20));
  ASSERT_EQ(done.results.size(), 3u);
  EXPECT_TRUE(done.results[2].status.ok());
  EXPECT_EQ(done.results[2].started, Millis(8));
  gpu.Load({1, Millis(20), Millis(8), {0}});  // model 1 in, model 0 out
  gpu.Run({0, 1, {}, Millis(30)}, done.Fn());
  ASSERT_EQ(done.results.size(), 4u);
  EXPECT_EQ(done.results[3].status.code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace tutti
