#include "tutti/serving/sharded_core.h"

#include <memory>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "tutti/core/manual_clock.h"
#include "tutti/executors/emulated_executor.h"
#include "tutti/serving/batch_stage.h"

namespace tutti {
namespace {

// Three sub-clusters: model a on GPUs 0-1, b on GPU 2, c on GPU 3. Two
// shards place a alone (2 GPUs) and b with c.
ClusterSpec ThreeSubClusters() {
  ClusterSpec spec;
  const LatencyProfile profile = *LatencyProfile::Linear(Millis(1), Millis(4), 16);
  spec.models = {{"a", profile, Millis(20)}, {"b", profile, Millis(20)}, {"c", profile, Millis(20)}};
  spec.sub_clusters = {{{0}, 2}, {{1}, 1}, {{2}, 1}};
  return spec;
}

std::unique_ptr<ShardedCore> Core(Clock* clock, int shards, InferenceCore::Options options = {}) {
  const ClusterSpec spec = ThreeSubClusters();
  std::vector<std::unique_ptr<Executor>> executors;
  for (int g = 0; g < spec.num_gpus(); ++g) {
    executors.push_back(std::make_unique<EmulatedExecutor>(
        clock, std::vector<EmulatedExecutor::Model>{{spec.models[0].profile, 10}}));
  }
  auto core = ShardedCore::Create(spec, std::vector<ModelShape>(3, {4, 10}), std::move(executors), options, clock,
                                  shards);
  EXPECT_TRUE(core.ok()) << core.status();
  return core.ok() ? std::move(*core) : nullptr;
}

struct Seen {
  ModelId model;
  InferenceOutcome out;
};

// A fixed Poisson-like trace over the three models (1.2 kr/s in all),
// through `core`; every outcome in submission order.
std::vector<Seen> Drive(ManualClock& clock, ShardedCore& core, int n) {
  std::vector<Seen> seen(n);
  std::vector<bool> answered(n, false);
  std::mt19937_64 rng(7);
  std::exponential_distribution<double> gap(1.2);  // per ms
  std::uniform_int_distribution<int> pick(0, 2);
  double at_ms = 0;
  for (int i = 0; i < n; ++i) {
    at_ms += gap(rng);
    clock.AdvanceTo(Micros(static_cast<int64_t>(at_ms * 1000)));
    const ModelId m = pick(rng);
    seen[i].model = m;
    EXPECT_TRUE(core.Submit(m, std::vector<float>(4, 1.0f), 0, [&, i](InferenceOutcome o) {
                      seen[i].out = std::move(o);
                      answered[i] = true;
                    }).ok());
  }
  clock.AdvanceBy(Seconds(1));
  for (int i = 0; i < n; ++i) EXPECT_TRUE(answered[i]) << i;
  return seen;
}

TEST(ShardedCoreTest, ShardsAnswerInGlobalIdsWhatOneCoreWouldDecide) {
  ManualClock one_clock, two_clock;
  std::unique_ptr<ShardedCore> one = Core(&one_clock, 1);
  std::unique_ptr<ShardedCore> two = Core(&two_clock, 2);
  ASSERT_NE(one, nullptr);
  ASSERT_NE(two, nullptr);
  EXPECT_EQ(two->shards(), 2);
  const int n = 3000;
  const std::vector<Seen> a = Drive(one_clock, *one, n);
  const std::vector<Seen> b = Drive(two_clock, *two, n);
  const int first_gpu[] = {0, 2, 3}, gpus[] = {2, 1, 1};
  int ran = 0;
  for (int i = 0; i < n; ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(a[i].out.status.code(), b[i].out.status.code());
    EXPECT_EQ(a[i].out.executor, b[i].out.executor);
    EXPECT_EQ(a[i].out.started, b[i].out.started);
    EXPECT_EQ(a[i].out.finished, b[i].out.finished);
    EXPECT_EQ(a[i].out.batch_size, b[i].out.batch_size);
    if (!b[i].out.status.ok()) continue;
    ++ran;
    // On its own sub-cluster's executors, in global ids.
    EXPECT_GE(b[i].out.executor, first_gpu[b[i].model]);
    EXPECT_LT(b[i].out.executor, first_gpu[b[i].model] + gpus[b[i].model]);
  }
  EXPECT_GT(ran, n * 9 / 10);
  // Counters, busy times and traces in global ids too.
  const std::vector<ModelCounters> ca = one->Counters(), cb = two->Counters();
  ASSERT_EQ(cb.size(), 3u);
  for (int m = 0; m < 3; ++m) {
    EXPECT_EQ(ca[m].good, cb[m].good) << m;
    EXPECT_EQ(ca[m].batches, cb[m].batches) << m;
  }
  EXPECT_EQ(one->BusyTimes(), two->BusyTimes());
  const std::vector<BatchTrace> ta = one->RecentBatches(0), tb = two->RecentBatches(0);
  ASSERT_EQ(ta.size(), tb.size());
  for (const BatchTrace& t : tb) {
    EXPECT_GE(t.executor, first_gpu[t.model]);
    EXPECT_LT(t.executor, first_gpu[t.model] + gpus[t.model]);
  }
  EXPECT_EQ(two->in_flight(), 0);
}

// A written answer reaches the shard whose batch it was: every batch's
// response delay is learnt once, though the shards number batches alike.
TEST(ShardedCoreTest, WrittenAnswersReachTheirShard) {
  ManualClock clock;
  std::unique_ptr<ShardedCore> core = Core(&clock, 2);
  ASSERT_NE(core, nullptr);
  const std::vector<Seen> seen = Drive(clock, *core, 600);
  int64_t batches = 0;
  for (const ModelCounters& c : core->Counters()) batches += c.batches;
  for (const Seen& s : seen) {
    if (s.out.status.ok()) core->OnAnswerWritten(s.out.Written());
  }
  EXPECT_EQ(core->Delays().histograms[static_cast<int>(Delay::kResponse)].count(), batches);
}

TEST(ShardedCoreTest, AnExecutorTakenDownIsGivenNoBatch) {
  ManualClock clock;
  std::unique_ptr<ShardedCore> core = Core(&clock, 2);
  ASSERT_NE(core, nullptr);
  ASSERT_TRUE(core->SetExecutorUp(1, false).ok());  // a's second GPU, in shard 0
  EXPECT_FALSE(core->SetExecutorUp(4, false).ok());
  for (const Seen& s : Drive(clock, *core, 600)) EXPECT_NE(s.out.executor, 1);
}

// A stage that keeps nothing to itself.
class PassStage final : public BatchStage {
 public:
  void OnDispatch(const Dispatched&, StageHost&) override {}
  std::vector<bool> OnExecuted(uint64_t, int size, const ExecResult&, StageHost&) override {
    return std::vector<bool>(size, true);
  }
  std::vector<std::pair<std::string, int64_t>> EventCounts() const override { return {}; }
};

TEST(ShardedCoreTest, RefusesMoreShardsThanSubClustersAndStagesAcrossShards) {
  ManualClock clock;
  const ClusterSpec spec = ThreeSubClusters();
  auto make = [&](int shards, InferenceCore::Options options) {
    std::vector<std::unique_ptr<Executor>> executors;
    for (int g = 0; g < spec.num_gpus(); ++g) {
      executors.push_back(std::make_unique<EmulatedExecutor>(
          &clock, std::vector<EmulatedExecutor::Model>{{spec.models[0].profile, 10}}));
    }
    return ShardedCore::Create(spec, std::vector<ModelShape>(3, {4, 10}), std::move(executors), options, &clock,
                               shards)
        .status();
  };
  EXPECT_EQ(make(4, {}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(make(0, {}).code(), absl::StatusCode::kInvalidArgument);
  InferenceCore::Options staged;
  staged.stages.push_back({0, std::make_shared<PassStage>()});
  EXPECT_EQ(make(2, staged).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(make(3, {}).ok());
  // An unknown model is refused, not routed.
  std::unique_ptr<ShardedCore> core = Core(&clock, 3);
  EXPECT_EQ(core->Submit(7, std::vector<float>(4), 0, [](InferenceOutcome) {}).code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace tutti
