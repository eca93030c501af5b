#include "tutti/scheduler/nexus_scheduler.h"

#include <map>

#include "gtest/gtest.h"
#include "tutti/core/manual_clock.h"

namespace tutti {
namespace {

struct Recorder : SchedulerListener {
  std::vector<Batch> batches;
  int64_t drops = 0;
  void OnDispatch(Batch b) override { batches.push_back(std::move(b)); }
  void OnDrop(const Request&, DropReason) override { ++drops; }
};

LatencyProfile NexusProfile(double l1, double l4, double l8, double l16) {
  return *LatencyProfile::FromPoints(
      {{1, Millis(l1)}, {4, Millis(l4)}, {8, Millis(l8)}, {16, Millis(l16)}}, Monotonicity::kReject);
}

// Nexus §4.1: models A, B, C (Table 2), SLOs 200/250/250 ms, 64/32/32 r/s.
ClusterSpec Section41(int gpus) {
  ClusterSpec spec;
  spec.models = {{"A", NexusProfile(31.25, 50, 75, 100), Millis(200)},
                 {"B", NexusProfile(20, 50, 90, 125), Millis(250)},
                 {"C", NexusProfile(33.75, 60, 95, 125), Millis(250)}};
  spec.gpus = gpus;
  return spec;
}

TEST(NexusSchedulerTest, Section41PlanRunsAAndBOnOneGpuAndCOnAnother) {
  ClusterSpec spec = Section41(4);
  SchedulerOptions options;
  options.nexus_initial_rates = {64, 32, 32};
  options.nexus_epoch = Seconds(100);  // one plan for the whole test
  options.nexus_fill_cluster = false;  // the paper's plan, without headroom
  ManualClock clock;
  Recorder rec;
  NexusScheduler s(spec, options, &clock, &rec);
  ASSERT_EQ(s.plan().size(), 2u);
  EXPECT_EQ(s.plan()[0].duty_cycle, Millis(125));

  // Constant arrivals at the planned rates for 10 s.
  const double rates[3] = {64, 32, 32};
  std::vector<Time> next = {0, Millis(3), Millis(7)};
  RequestId id = 0;
  for (;;) {
    const int m = std::min_element(next.begin(), next.end()) - next.begin();
    if (next[m] >= Seconds(10)) break;
    clock.AdvanceTo(next[m]);
    s.Submit({id++, m, next[m], next[m] + spec.models[m].slo});
    next[m] += Seconds(1 / rates[m]);
  }
  clock.AdvanceBy(Seconds(1));
  EXPECT_EQ(rec.drops, 0);
  std::map<ModelId, std::set<GpuId>> gpus_of;
  std::map<GpuId, Time> busy_until;
  for (const Batch& b : rec.batches) {
    gpus_of[b.model].insert(b.gpu);
    EXPECT_GE(b.exec_at, busy_until[b.gpu]);
    busy_until[b.gpu] = b.exec_at + b.latency;
    for (const Request& r : b.requests) EXPECT_LE(b.exec_at + b.latency, r.deadline);
    int planned = 0;
    for (const NodeSession& ns : s.plan()[b.gpu].sessions) {
      if (ns.model == b.model) planned = ns.batch;
    }
    EXPECT_LE(static_cast<int>(b.requests.size()), planned);
  }
  EXPECT_EQ(gpus_of[0], (std::set<GpuId>{0}));
  EXPECT_EQ(gpus_of[1], (std::set<GpuId>{0}));
  EXPECT_EQ(gpus_of[2], (std::set<GpuId>{1}));
  EXPECT_EQ(id, static_cast<RequestId>(64 * 10 + 32 * 10 + 32 * 10));
}

// Nexus's backends are work-conserving: a GPU runs the next of its
// sessions with requests as soon as it is free, in the cycle's order, never
// waiting for a session's time slot while work is queued.
TEST(NexusSchedulerTest, AGpuNeverIdlesWhileOneOfItsSessionsHasWork) {
  ClusterSpec spec = Section41(4);
  SchedulerOptions options;
  options.nexus_initial_rates = {64, 32, 32};
  options.nexus_epoch = Seconds(100);
  options.nexus_fill_cluster = false;
  ManualClock clock;
  Recorder rec;
  NexusScheduler s(spec, options, &clock, &rec);
  ASSERT_EQ(s.plan()[0].sessions.size(), 2u);  // A then B on GPU 0
  clock.AdvanceTo(Millis(10));
  s.Submit({1, 1, Millis(10), Millis(260)});  // B, while A (first in the cycle) has nothing
  ASSERT_EQ(rec.batches.size(), 1u);
  EXPECT_EQ(rec.batches[0].model, 1);
  EXPECT_EQ(rec.batches[0].exec_at, Millis(10));  // at once, not at B's slot
  clock.AdvanceTo(Millis(15));
  s.Submit({2, 0, Millis(15), Millis(215)});  // A and B arrive while B's batch runs (until 30 ms)
  s.Submit({3, 1, Millis(15), Millis(265)});
  clock.AdvanceTo(Millis(200));
  ASSERT_EQ(rec.batches.size(), 3u);
  EXPECT_EQ(rec.batches[1].model, 0);  // the cycle goes on: A's turn
  EXPECT_EQ(rec.batches[1].exec_at, Millis(30));
  EXPECT_EQ(rec.batches[2].model, 1);  // then B's, as soon as A's batch ends
  EXPECT_EQ(rec.batches[2].exec_at, Millis(30) + Millis(31.25));
  EXPECT_EQ(rec.drops, 0);
}

TEST(NexusSchedulerTest, PlanShrinksToFitTheCluster) {
  ClusterSpec spec = Section41(1);
  std::vector<GpuNode> plan = PlanNexus(spec, {640, 320, 320}, 1, false);
  EXPECT_EQ(plan.size(), 1u);
  std::vector<GpuNode> roomy = PlanNexus(spec, {640, 320, 320}, 100);
  EXPECT_GT(roomy.size(), 90u);  // planned with headroom: uses the cluster
  EXPECT_LE(roomy.size(), 100u);
}

TEST(NexusSchedulerTest, ReplansFromObservedRatesEachEpoch) {
  ClusterSpec spec = Section41(8);
  SchedulerOptions options;
  options.nexus_epoch = Seconds(1);
  ManualClock clock;
  Recorder rec;
  NexusScheduler s(spec, options, &clock, &rec);
  auto nodes_with = [&](ModelId m) {
    int n = 0;
    for (const GpuNode& node : s.plan()) {
      for (const NodeSession& ns : node.sessions) n += ns.model == m;
    }
    return n;
  };
  // Equal (1 r/s) rates at first: the models share the 8 GPUs.
  EXPECT_LE(s.plan().size(), 8u);
  EXPECT_LT(nodes_with(0), 6);
  RequestId id = 0;
  for (Time t = 0; t < Seconds(2); t += Millis(2)) {  // only A, at 500 r/s
    clock.AdvanceTo(t);
    s.Submit({id++, 0, t, t + Millis(200)});
  }
  EXPECT_GE(nodes_with(0), 6);  // A now has (almost) every GPU
  EXPECT_LE(s.plan().size(), 8u);
  clock.AdvanceBy(Seconds(1));
  EXPECT_EQ(s.queued(), 0);
}

TEST(NexusSchedulerTest, RatesMoveWhenBeyondPoissonNoise) {
  // Many arrivals: a quarter of the plan (1,000 r/s planned, 1 s seen).
  EXPECT_FALSE(NexusRatesMoved({1000}, {1000}, Seconds(1)));
  EXPECT_FALSE(NexusRatesMoved({1000}, {1240}, Seconds(1)));
  EXPECT_TRUE(NexusRatesMoved({1000}, {1260}, Seconds(1)));
  EXPECT_TRUE(NexusRatesMoved({1000}, {740}, Seconds(1)));
  EXPECT_TRUE(NexusRatesMoved({100, 5}, {100, 500}, Seconds(1)));
  EXPECT_FALSE(NexusRatesMoved({100}, {400}, Seconds(4)));  // over a longer window
  // Fewer: three standard deviations (100 expected: ±30; 4 expected: ±6).
  EXPECT_FALSE(NexusRatesMoved({100}, {129}, Seconds(1)));
  EXPECT_TRUE(NexusRatesMoved({100}, {131}, Seconds(1)));
  EXPECT_FALSE(NexusRatesMoved({4}, {9}, Seconds(1)));
  EXPECT_TRUE(NexusRatesMoved({4}, {12}, Seconds(1)));
  EXPECT_FALSE(NexusRatesMoved({1}, {0}, Seconds(1)));  // a model not seen yet
}

// A long epoch still follows a change of rates within about a second, and
// keeps its plan while the rates hold.
TEST(NexusSchedulerTest, AnEpochEndsEarlyWhenTheRatesMove) {
  ClusterSpec spec = Section41(8);
  SchedulerOptions options;
  options.nexus_epoch = Seconds(30);
  options.nexus_initial_rates = {64, 32, 32};
  ManualClock clock;
  Recorder rec;
  NexusScheduler s(spec, options, &clock, &rec);
  const std::vector<GpuNode> first = s.plan();
  auto sessions_of = [&](ModelId m) {
    int n = 0;
    for (const GpuNode& node : s.plan()) {
      for (const NodeSession& ns : node.sessions) n += ns.model == m;
    }
    return n;
  };
  const int a_at_first = sessions_of(0);
  RequestId id = 0;
  auto offer = [&](Time from, Time to, const std::vector<Duration>& gaps) {
    std::vector<Time> next(gaps.size(), from);
    for (Time t = from; t < to; t += Millis(1)) {
      clock.AdvanceTo(t);
      for (ModelId m = 0; m < static_cast<ModelId>(gaps.size()); ++m) {
        if (t >= next[m]) {
          s.Submit({id++, m, t, t + spec.models[m].slo});
          next[m] += gaps[m];
        }
      }
    }
  };
  offer(0, Seconds(3), {Millis(1000.0 / 64), Millis(1000.0 / 32), Millis(1000.0 / 32)});
  EXPECT_EQ(sessions_of(0), a_at_first) << "the rates held: the plan too";
  offer(Seconds(3), Seconds(5), {Millis(2), Millis(1000.0 / 32), Millis(1000.0 / 32)});  // A: 500 r/s
  EXPECT_GT(sessions_of(0), a_at_first) << "replanned within two seconds, not thirty";
}

}  // namespace
}  // namespace tutti
