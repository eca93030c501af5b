#include "tutti/scheduler/load_scheduler.h"

#include <map>
#include <random>
#include <set>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tutti/core/manual_clock.h"
#include "tutti/scheduler/memory_ledger.h"

namespace tutti {
namespace {

using ::testing::HasSubstr;

// Every decision, with the memory contract checked as it goes
// (memory_ledger.h).
struct Recorder : SchedulerListener {
  explicit Recorder(const ClusterSpec& spec) : memory(spec) {}

  void OnDispatch(Batch b) override {
    memory.Ran(b.gpu, b.model, b.exec_at, b.exec_at + b.latency);
    for (const Request& r : b.requests) answered.insert(r.id);
    batches.push_back(std::move(b));
  }
  void OnDrop(const Request& r, DropReason why) override {
    answered.insert(r.id);
    drops.push_back({r, why});
  }
  void OnLoad(const Load& load) override {
    memory.Loaded(load);
    loads.push_back(load);
  }

  MemoryLedger memory;
  std::vector<Batch> batches;
  std::vector<std::pair<Request, DropReason>> drops;
  std::vector<Load> loads;
  std::set<RequestId> answered;
};

constexpr int64_t kMB = 1000 * 1000;

// `models` models of 100 MB, ℓ(b) = b + 4 ms, a 100 ms objective, on GPUs
// of `gpu_mb` each; loads at 10 GB/s: 10 ms.
ClusterSpec ManyModels(int models, int gpus, int64_t gpu_mb) {
  ClusterSpec spec;
  for (int i = 0; i < models; ++i) {
    ModelSpec m;
    m.name = "m" + std::to_string(i);
    m.profile = *LatencyProfile::Linear(Millis(1), Millis(4), 16);
    m.slo = Millis(100);
    m.weights_bytes = 100 * kMB;
    spec.models.push_back(m);
  }
  spec.gpus = gpus;
  spec.memory.gpu_bytes = gpu_mb * kMB;
  spec.memory.bytes_per_s = 10e9;
  return spec;
}

Request At(RequestId id, ModelId m, Time t, Duration slo = Millis(100)) { return Request{id, m, t, t + slo}; }

TEST(LoadSchedulerTest, AColdModelIsLoadedThenItsRequestsJoinTheBatchAfterTheLoad) {
  ClusterSpec spec = ManyModels(3, 1, 250);
  ManualClock clock;
  Recorder rec(spec);
  auto s = *CreateScheduler("loads", spec, {}, &clock, &rec);
  s->Submit(At(1, 0, 0));
  ASSERT_EQ(rec.loads.size(), 1u);  // planned at once: 10 ms + ℓ(1) fit 100 ms
  EXPECT_EQ(rec.loads[0].model, 0);
  EXPECT_EQ(rec.loads[0].duration, Millis(10));
  clock.AdvanceTo(Millis(4));
  s->Submit(At(2, 0, Millis(4)));  // arrives while the load runs
  EXPECT_TRUE(rec.batches.empty());
  clock.AdvanceTo(Millis(10));
  ASSERT_EQ(rec.batches.size(), 1u);
  EXPECT_EQ(rec.batches[0].exec_at, Millis(10));
  EXPECT_EQ(rec.batches[0].requests.size(), 2u);  // both, in the batch after the load
  clock.AdvanceBy(kSecond);
  EXPECT_EQ(rec.memory.breaches(), 0);
  EXPECT_EQ(s->queued(), 0);
}

TEST(LoadSchedulerTest, ALoadIsPlannedOnlyWhenLoadAndComputeMeetTheDeadline) {
  ClusterSpec spec = ManyModels(3, 1, 250);
  ManualClock clock;
  Recorder rec(spec);
  auto s = *CreateScheduler("loads", spec, {}, &clock, &rec);
  // 10 ms load + 5 ms batch of one: a 14 ms objective cannot be met, 15 can.
  s->Submit(At(1, 0, 0, Millis(14)));
  EXPECT_TRUE(rec.loads.empty());
  ASSERT_EQ(rec.drops.size(), 1u);
  EXPECT_EQ(rec.drops[0].second, DropReason::kEarlyDrop);  // at once, not at its deadline
  s->Submit(At(2, 1, 0, Millis(15)));
  ASSERT_EQ(rec.loads.size(), 1u);
  EXPECT_EQ(rec.loads[0].model, 1);
  clock.AdvanceBy(kSecond);
  ASSERT_EQ(rec.batches.size(), 1u);
  EXPECT_LE(rec.batches[0].exec_at + rec.batches[0].latency, Millis(15));
  // Load on first request loads it anyway, and the request ends dropped.
  SchedulerOptions first;
  first.load_mode = SchedulerOptions::LoadMode::kFirstRequest;
  ManualClock clock2;
  Recorder rec2(spec);
  auto triton = *CreateScheduler("loads", spec, first, &clock2, &rec2);
  triton->Submit(At(1, 0, 0, Millis(14)));
  EXPECT_EQ(rec2.loads.size(), 1u);
  clock2.AdvanceBy(kSecond);
  EXPECT_EQ(rec2.drops.size(), 1u);
  EXPECT_TRUE(rec2.batches.empty());
}

// With a response delay planned and no copy anywhere, a cold model is
// still loaded (no other GPU's copy stands in for it).
TEST(LoadSchedulerTest, AResponseDelayStillLetsAColdModelLoad) {
  ClusterSpec spec = ManyModels(4, 1, 250);
  spec.delays.resp = Millis(1);
  ManualClock clock;
  Recorder rec(spec);
  auto s = *CreateScheduler("loads", spec, {}, &clock, &rec);
  for (int m = 0; m < 4; ++m) {
    s->Submit(At(m, m, clock.Now()));
    clock.AdvanceBy(Millis(30));
  }
  EXPECT_EQ(rec.loads.size(), 4u);
  EXPECT_EQ(rec.batches.size(), 4u);
  EXPECT_TRUE(rec.drops.empty());
  EXPECT_EQ(rec.memory.breaches(), 0);
}

TEST(LoadSchedulerTest, EvictionNeverTakesAModelWithABatchInFlight) {
  // Room for two models. Model 0 runs a long batch; model 2's load must
  // evict model 1, idle, not model 0, though model 0 was used less recently.
  ClusterSpec spec = ManyModels(3, 1, 200);
  spec.models[0].profile = *LatencyProfile::Linear(Millis(1), Millis(80), 16);
  for (auto eviction : {SchedulerOptions::Eviction::kLru, SchedulerOptions::Eviction::kCostAware}) {
    SchedulerOptions options;
    options.eviction = eviction;
    ManualClock clock;
    Recorder rec(spec);
    auto s = *CreateScheduler("loads", spec, options, &clock, &rec);
    s->Submit(At(1, 1, 0, Millis(200)));  // model 1 loads first (0-10 ms)
    clock.AdvanceTo(Millis(10));           // … and runs 10-15 ms
    s->Submit(At(2, 0, Millis(10), Millis(200)));  // model 0 loads 10-20 ms
    clock.AdvanceTo(Millis(20));                    // … and runs 20-101 ms
    ASSERT_EQ(rec.batches.size(), 2u);
    s->Submit(At(3, 2, Millis(30), Millis(200)));
    clock.AdvanceTo(Millis(30));
    ASSERT_EQ(rec.loads.size(), 3u);
    EXPECT_EQ(rec.loads[2].model, 2);
    EXPECT_EQ(rec.loads[2].evicted, std::vector<ModelId>{1});
    clock.AdvanceBy(kSecond);
    EXPECT_EQ(rec.memory.breaches(), 0);
    EXPECT_EQ(rec.answered.size(), 3u);
  }
}

TEST(LoadSchedulerTest, CostAwareEvictionKeepsThePopularModel) {
  // Room for two. Model 0 is asked for every 20 ms, model 1 once; model 2's
  // load evicts model 1 under the cost-aware rule even though model 0 ran
  // longer ago, and model 0 under LRU.
  ClusterSpec spec = ManyModels(3, 1, 200);
  for (auto eviction : {SchedulerOptions::Eviction::kCostAware, SchedulerOptions::Eviction::kLru}) {
    SchedulerOptions options;
    options.eviction = eviction;
    ManualClock clock;
    Recorder rec(spec);
    auto s = *CreateScheduler("loads", spec, options, &clock, &rec);
    RequestId id = 1;
    for (int i = 0; i < 10; ++i) {
      clock.AdvanceTo(Millis(20) * i);
      s->Submit(At(id++, 0, clock.Now()));
    }
    clock.AdvanceTo(Millis(200));
    s->Submit(At(id++, 1, clock.Now()));
    clock.AdvanceTo(Millis(300));
    s->Submit(At(id++, 2, clock.Now()));
    ASSERT_EQ(rec.loads.size(), 3u);
    const ModelId expected = eviction == SchedulerOptions::Eviction::kCostAware ? 1 : 0;
    EXPECT_EQ(rec.loads[2].evicted, std::vector<ModelId>{expected});
    clock.AdvanceBy(kSecond);
    EXPECT_EQ(rec.memory.breaches(), 0);
  }
}

// Many models, a Zipf load, two GPUs whose copy engines cannot load every
// model asked for: every request answered once, the memory contract held
// throughout, and fewer drops with planned loads than loading on demand,
// fewer than loading on the first request, under either eviction rule.
TEST(LoadSchedulerTest, ManyModelsUnderZipfLoadKeepTheContract) {
  ClusterSpec spec = ManyModels(200, 2, 1000);  // 10 of 200 fit a GPU
  for (ModelSpec& m : spec.models) m.profile = *LatencyProfile::Linear(Micros(200), Millis(1), 16);
  using Mode = SchedulerOptions::LoadMode;
  using Eviction = SchedulerOptions::Eviction;
  std::map<std::pair<Mode, Eviction>, int64_t> drops;
  auto dropped = [&](Mode m, Eviction e) { return drops[std::make_pair(m, e)]; };
  for (Mode mode : {Mode::kPlanned, Mode::kOnDemand, Mode::kFirstRequest}) {
    for (Eviction eviction : {Eviction::kCostAware, Eviction::kLru}) {
      SchedulerOptions options;
      options.load_mode = mode;
      options.eviction = eviction;
      ManualClock clock;
      Recorder rec(spec);
      auto s = *CreateScheduler("loads", spec, options, &clock, &rec);
      std::mt19937_64 rng(5);
      std::vector<double> weights;
      for (int i = 0; i < 200; ++i) weights.push_back(1.0 / (i + 1));
      std::discrete_distribution<int> pick(weights.begin(), weights.end());
      std::exponential_distribution<double> gap(1500);  // requests/s
      Time t = 0;
      const int n = 3000;
      for (int i = 1; i <= n; ++i) {
        t += static_cast<Duration>(gap(rng) * 1e9);
        clock.AdvanceTo(t);
        s->Submit(At(i, pick(rng), t, Millis(30)));
      }
      clock.AdvanceBy(kSecond);
      EXPECT_EQ(s->queued(), 0);
      EXPECT_EQ(rec.memory.breaches(), 0);
      int64_t requests = 0;
      for (const Batch& b : rec.batches) {
        requests += static_cast<int64_t>(b.requests.size());
        for (const Request& r : b.requests) EXPECT_LE(b.exec_at + b.latency, r.deadline);
      }
      EXPECT_EQ(requests + static_cast<int64_t>(rec.drops.size()), n);  // each once
      EXPECT_EQ(rec.answered.size(), static_cast<size_t>(n));
      drops[{mode, eviction}] = static_cast<int64_t>(rec.drops.size());
    }
  }
  for (Eviction e : {Eviction::kCostAware, Eviction::kLru}) {
    EXPECT_LT(dropped(Mode::kPlanned, e), dropped(Mode::kOnDemand, e));
    EXPECT_LT(dropped(Mode::kOnDemand, e), dropped(Mode::kFirstRequest, e));
  }
  EXPECT_LT(dropped(Mode::kPlanned, Eviction::kCostAware), dropped(Mode::kPlanned, Eviction::kLru));
}

// The ledger counts each kind of breach once.
TEST(MemoryLedgerTest, CountsEveryBreachOfTheContract) {
  const ClusterSpec spec = ManyModels(3, 1, 200);  // room for two
  MemoryLedger ledger(spec);
  ledger.Ran(0, 0, 0, Millis(5));  // not loaded
  EXPECT_EQ(ledger.breaches(), 1);
  ledger.Loaded({0, 0, 0, Millis(10), {}});
  ledger.Ran(0, 0, Millis(5), Millis(9));  // before its load ends
  EXPECT_EQ(ledger.breaches(), 2);
  ledger.Ran(0, 0, Millis(10), Millis(30));  // fine
  ledger.Loaded({0, 1, Millis(10), Millis(10), {}});
  EXPECT_EQ(ledger.breaches(), 2);
  EXPECT_EQ(ledger.held_bytes(0), 200 * kMB);
  ledger.Loaded({0, 2, Millis(20), Millis(10), {0}});  // evicts model 0 while its batch runs
  EXPECT_EQ(ledger.breaches(), 3);
  ledger.Loaded({0, 0, Millis(40), Millis(10), {}});  // over the budget
  EXPECT_EQ(ledger.breaches(), 4);
  ledger.Loaded({0, 0, Millis(40), Millis(10), {1, 2}});  // model 0 is held already
  EXPECT_EQ(ledger.breaches(), 5);
}

TEST(LoadSchedulerTest, AMemoryBudgetNeedsTheLoadsPolicyAndWeightsThatFit) {
  ClusterSpec spec = ManyModels(2, 1, 250);
  ManualClock clock;
  Recorder rec(spec);
  EXPECT_THAT(CreateScheduler("deferred", spec, {}, &clock, &rec).status().message(),
              HasSubstr("needs the loads policy"));
  spec.models[1].weights_bytes = 300 * kMB;
  EXPECT_THAT(CreateScheduler("loads", spec, {}, &clock, &rec).status().message(),
              HasSubstr("do not fit a GPU"));
}

}  // namespace
}  // namespace tutti
