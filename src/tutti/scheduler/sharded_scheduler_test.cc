#include "tutti/scheduler/sharded_scheduler.h"

#include <algorithm>
#include <mutex>
#include <random>
#include <thread>
#include <tuple>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tutti/core/manual_clock.h"

namespace tutti {
namespace {

using ::testing::HasSubstr;

// What a scheduler decided, in a form that compares regardless of the
// order in which shards reported it. Thread-safe: shards report concurrently.
struct Decisions : SchedulerListener {
  using BatchKey = std::tuple<ModelId, GpuId, Time, Duration, std::vector<RequestId>>;
  std::mutex mu;
  std::vector<BatchKey> batches;
  std::vector<std::tuple<RequestId, ModelId, DropReason>> drops;

  void OnDispatch(Batch b) override {
    std::vector<RequestId> ids;
    for (const Request& r : b.requests) {
      EXPECT_EQ(r.model, b.model);
      ids.push_back(r.id);
    }
    std::lock_guard<std::mutex> lock(mu);
    batches.emplace_back(b.model, b.gpu, b.exec_at, b.latency, std::move(ids));
  }
  void OnDrop(const Request& r, DropReason why) override {
    std::lock_guard<std::mutex> lock(mu);
    drops.emplace_back(r.id, r.model, why);
  }
  void Sort() {
    std::sort(batches.begin(), batches.end());
    std::sort(drops.begin(), drops.end());
  }
};

// 12 models of mixed batching strength over 4 sub-clusters of 3, 2, 4 and
// 1 GPUs (models 0, 4, 8 in the first, and so on).
ClusterSpec MixedCluster() {
  ClusterSpec spec;
  for (int m = 0; m < 12; ++m) {
    ModelSpec s;
    s.name = "m" + std::to_string(m);
    s.profile = *LatencyProfile::Linear(Micros(200 + 150 * (m % 5)), Millis(1 + m % 4), 32);
    s.slo = Millis(15 + 5 * (m % 3));
    spec.models.push_back(s);
  }
  const int gpus[] = {3, 2, 4, 1};
  for (int r = 0; r < 4; ++r) {
    SubCluster sub{{}, gpus[r]};
    for (int m = r; m < 12; m += 4) sub.models.push_back(m);
    spec.sub_clusters.push_back(sub);
  }
  return spec;
}

// Poisson arrivals at `rate` r/s over the models, Zipf-ish (model m weighs 1/(m+1)).
std::vector<Request> Arrivals(const ClusterSpec& spec, double rate, int n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::exponential_distribution<double> gap(rate / 1e9);
  std::vector<double> weights;
  for (size_t m = 0; m < spec.models.size(); ++m) weights.push_back(1.0 / static_cast<double>(m + 1));
  std::discrete_distribution<int> pick(weights.begin(), weights.end());
  std::vector<Request> out;
  Time t = 0;
  for (int i = 0; i < n; ++i) {
    t += static_cast<Time>(gap(rng)) + 1;
    const ModelId m = pick(rng);
    out.push_back({static_cast<RequestId>(i + 1), m, t, t + spec.models[m].slo});
  }
  return out;
}

// Feeds `requests` in order on `clock`, then lets the timers finish the queue.
void Drive(ManualClock* clock, Scheduler* s, const std::vector<Request>& requests,
           const std::function<int64_t()>& queued) {
  for (const Request& r : requests) {
    clock->AdvanceTo(r.arrival);
    s->Submit(r);
  }
  while (queued() > 0 && clock->RunNextTimer()) {
  }
}

class ShardedSchedulerTest : public ::testing::TestWithParam<std::string> {};

// The determinism requirement: sharding changes where the work runs,
// not what is decided. Each shard runs on its own thread and clock, and
// every call for it is made there.
TEST_P(ShardedSchedulerTest, ShardsOnTheirOwnThreadsDecideAsOneThreadDoes) {
  const ClusterSpec spec = MixedCluster();
  const std::vector<Request> requests = Arrivals(spec, 6000, 20000, 7);

  Decisions one;
  {
    ManualClock clock;
    std::unique_ptr<Scheduler> s = *CreateScheduler(GetParam(), spec, {}, &clock, &one);
    Drive(&clock, s.get(), requests, [&] { return s->queued(); });
    EXPECT_EQ(s->queued(), 0);
  }
  one.Sort();

  Decisions sharded;
  ManualClock clocks[3];
  std::unique_ptr<ShardedScheduler> s =
      *ShardedScheduler::Create(GetParam(), spec, {}, {{&clocks[0]}, {&clocks[1]}, {&clocks[2]}}, &sharded);
  ASSERT_EQ(s->shards(), 3);
  std::vector<std::vector<Request>> per_shard(3);
  for (const Request& r : requests) per_shard[s->ShardOfModel(r.model)].push_back(r);
  std::vector<std::thread> threads;
  for (int i = 0; i < 3; ++i) {
    threads.emplace_back([&, i] { Drive(&clocks[i], s.get(), per_shard[i], [&] { return s->queued_in(i); }); });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(s->queued(), 0);
  sharded.Sort();

  ASSERT_GT(one.batches.size(), 1000u);
  EXPECT_EQ(sharded.batches, one.batches);
  EXPECT_EQ(sharded.drops, one.drops);
}

INSTANTIATE_TEST_SUITE_P(Policies, ShardedSchedulerTest, ::testing::Values("deferred", "adaptive", "eager", "timeout"));

TEST(ShardedSchedulerPlacementTest, LargestSubClustersFirstOntoTheLeastLoadedShard) {
  const ClusterSpec spec = MixedCluster();  // sub-clusters of 3, 2, 4, 1 GPUs
  ManualClock a, b;
  Decisions d;
  std::unique_ptr<ShardedScheduler> s = *ShardedScheduler::Create("deferred", spec, {}, {{&a}, {&b}}, &d);
  // 4 → shard 0, 3 → shard 1, 2 → shard 1 (3 < 4), 1 → shard 0 (4 < 5).
  EXPECT_EQ(s->ShardOfModel(2), 0);  // sub-cluster 2 (4 GPUs)
  EXPECT_EQ(s->ShardOfModel(0), 1);  // sub-cluster 0 (3 GPUs)
  EXPECT_EQ(s->ShardOfModel(1), 1);  // sub-cluster 1 (2 GPUs)
  EXPECT_EQ(s->ShardOfModel(3), 0);  // sub-cluster 3 (1 GPU)
  // GPUs keep the spec's numbering: 0–2 sub-cluster 0, 3–4 sub-cluster 1, 5–8 sub-cluster 2, 9 sub-cluster 3.
  EXPECT_EQ(s->ShardOfGpu(0), 1);
  EXPECT_EQ(s->ShardOfGpu(4), 1);
  EXPECT_EQ(s->ShardOfGpu(5), 0);
  EXPECT_EQ(s->ShardOfGpu(9), 0);
}

TEST(ShardedSchedulerPlacementTest, AShardHoldsWholeSubClusters) {
  ClusterSpec spec = MixedCluster();
  ManualClock clocks[5];
  Decisions d;
  absl::StatusOr<std::unique_ptr<ShardedScheduler>> s =
      ShardedScheduler::Create("deferred", spec, {}, {{&clocks[0]}, {&clocks[1]}, {&clocks[2]}, {&clocks[3]}, {&clocks[4]}}, &d);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.status().message(), HasSubstr("5 scheduler shards for 4 sub-clusters"));
  EXPECT_FALSE(ShardedScheduler::Create("deferred", spec, {}, {}, &d).ok());
  EXPECT_THAT(ShardedScheduler::Create("fifo", spec, {}, {{&clocks[0]}}, &d).status().message(),
              HasSubstr("unknown scheduling policy"));
  EXPECT_THAT(ShardedScheduler::Create("deferred", spec, {}, {{&clocks[0]}, {nullptr}}, &d).status().message(),
              HasSubstr("without a clock"));
}

// Membership, completions and delay plans reach the right shard under the
// shard's own ids: the same calls on one thread and on shards give the same
// decisions.
TEST(ShardedSchedulerRoutingTest, MembershipCompletionsAndDelayPlansFollowTheGlobalIds) {
  const ClusterSpec spec = MixedCluster();
  const std::vector<Request> requests = Arrivals(spec, 3000, 6000, 11);
  DelayPlan plan{{Micros(100), Micros(5), Micros(200)}, Micros(300), 0, {}};
  for (GpuId g = 0; g < spec.num_gpus(); ++g) {
    for (ModelId m = 0; m < 12; ++m) plan.compute.push_back({1.0 + 0.05 * ((g + m) % 4), 1.3, Micros(10 * g)});
  }
  SchedulerOptions options;
  options.await_completion = true;

  // Both runs: the plan from the start, GPU 6 down for the first second, and
  // every batch reported done when its predicted run ends.
  const auto run = [&](Scheduler* s, ManualClock* clock, Decisions* d) {
    s->SetDelayPlan(plan);
    ASSERT_TRUE(s->SetGpuUp(6, false, 0).ok());
    size_t reported = 0;
    for (const Request& r : requests) {
      if (r.arrival > Seconds(1) && clock->Now() <= Seconds(1)) {
        clock->AdvanceTo(Seconds(1));
        ASSERT_TRUE(s->SetGpuUp(6, true, Seconds(1)).ok());
      }
      // Report the batches whose run has ended by this arrival, in dispatch order.
      for (; reported < d->batches.size(); ++reported) {
        const auto& [model, gpu, exec_at, latency, ids] = d->batches[reported];
        if (exec_at + latency > r.arrival) break;
        clock->AdvanceTo(exec_at + latency);
        s->OnBatchDone(gpu);
      }
      clock->AdvanceTo(r.arrival);
      s->Submit(r);
    }
  };
  Decisions one, sharded;
  {
    ManualClock clock;
    std::unique_ptr<Scheduler> s = *CreateScheduler("deferred", spec, options, &clock, &one);
    run(s.get(), &clock, &one);
  }
  // One clock for both shards: one thread feeds them in the same order.
  ManualClock clock;
  std::unique_ptr<ShardedScheduler> s =
      *ShardedScheduler::Create("deferred", spec, options, {{&clock}, {&clock}}, &sharded);
  run(s.get(), &clock, &sharded);
  EXPECT_GT(one.batches.size(), 500u);
  // GPU 6 ran nothing in the first second, and something after it.
  int before = 0, after = 0;
  for (const auto& b : sharded.batches) {
    if (std::get<1>(b) == 6) ++(std::get<2>(b) < Seconds(1) ? before : after);
  }
  EXPECT_EQ(before, 0);
  EXPECT_GT(after, 0);
  one.Sort();
  sharded.Sort();
  EXPECT_EQ(sharded.batches, one.batches);
  EXPECT_EQ(sharded.drops, one.drops);
}

// A shard with a `post` never runs a call on the caller's thread: calls
// wait in its queue until its thread runs them, in order, and then decide
// as direct calls do.
TEST(ShardedSchedulerRoutingTest, CallsFromOtherThreadsWaitForTheShardsThread) {
  const ClusterSpec spec = MixedCluster();
  const std::vector<Request> requests = Arrivals(spec, 3000, 4000, 5);
  Decisions direct, posted;
  ManualClock direct_clock;
  {
    std::unique_ptr<ShardedScheduler> s =
        *ShardedScheduler::Create("deferred", spec, {}, {{&direct_clock}, {&direct_clock}}, &direct);
    Drive(&direct_clock, s.get(), requests, [&] { return s->queued(); });
  }
  ManualClock clock;
  std::vector<std::function<void()>> inbox[2];
  const auto post_to = [&](int i) { return [&, i](std::function<void()> fn) { inbox[i].push_back(std::move(fn)); }; };
  std::unique_ptr<ShardedScheduler> s =
      *ShardedScheduler::Create("deferred", spec, {}, {{&clock, post_to(0)}, {&clock, post_to(1)}}, &posted);
  size_t waited = 0;
  for (const Request& r : requests) {
    clock.AdvanceTo(r.arrival);
    const int shard = s->ShardOfModel(r.model);
    const int64_t before = s->queued_in(shard);
    s->Submit(r);
    EXPECT_EQ(s->queued_in(shard), before);  // not run here
    waited += inbox[shard].size();
    for (auto& fn : inbox[shard]) fn();  // the shard's thread runs it
    inbox[shard].clear();
  }
  while (s->queued() > 0 && clock.RunNextTimer()) {
  }
  EXPECT_EQ(waited, requests.size());
  EXPECT_EQ(s->queued(), 0);
  ASSERT_GT(direct.batches.size(), 300u);
  direct.Sort();
  posted.Sort();
  EXPECT_EQ(posted.batches, direct.batches);
  EXPECT_EQ(posted.drops, direct.drops);
  // Membership changes go through the queue too, and reach the right GPU.
  ASSERT_TRUE(s->SetGpuUp(9, false, 0).ok());
  EXPECT_EQ(inbox[s->ShardOfGpu(9)].size(), 1u);
  EXPECT_TRUE(inbox[1 - s->ShardOfGpu(9)].empty());
}

}  // namespace
}  // namespace tutti
