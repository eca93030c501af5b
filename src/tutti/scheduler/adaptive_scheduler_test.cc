#include "tutti/scheduler/adaptive_scheduler.h"

#include <algorithm>
#include <memory>
#include <random>
#include <set>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tutti/core/manual_clock.h"

namespace tutti {
namespace {

// `models` copies of a model with ℓ(b) = α·b + β (batches up to 32) and
// objective `slo`, on `gpus` GPUs.
ClusterSpec Cluster(int models, Duration alpha, Duration beta, Duration slo, int gpus) {
  ClusterSpec spec;
  for (int i = 0; i < models; ++i) {
    ModelSpec m;
    m.name = "m" + std::to_string(i);
    m.profile = *LatencyProfile::Linear(alpha, beta, 32);
    m.slo = slo;
    spec.models.push_back(m);
  }
  spec.gpus = gpus;
  return spec;
}

// Poisson arrivals at `rate` requests/s, spread evenly over the models, for
// `duration` (seed fixed).
std::vector<Request> Poisson(const ClusterSpec& spec, double rate, Duration duration, uint64_t seed = 1) {
  std::mt19937_64 rng(seed);
  std::exponential_distribution<double> gap(rate);
  std::uniform_int_distribution<ModelId> model(0, static_cast<ModelId>(spec.models.size()) - 1);
  std::vector<Request> out;
  for (double t = gap(rng); t < ToSeconds(duration); t += gap(rng)) {
    const ModelId m = model(rng);
    const Time at = Seconds(t);
    out.push_back(Request{out.size() + 1, m, at, at + spec.models[m].slo});
  }
  return out;
}

// Runs the `adaptive` policy over `arrivals` on exact GPUs, counting as Replay does.
struct AdaptiveRun {
  ReplayCount count;
  std::vector<std::string> choices;  // rank 0's, at the end of each second
  int64_t switches = 0;
};
AdaptiveRun RunAdaptive(const ClusterSpec& spec, const std::vector<Request>& arrivals, SchedulerOptions options = {}) {
  AdaptiveRun run;
  run.count = {std::vector<int64_t>(spec.models.size()), std::vector<int64_t>(spec.models.size())};
  ManualClock clock;
  CallbackListener listener(
      [&](Batch b) {
        for (const Request& r : b.requests) ++(b.exec_at + b.latency <= r.deadline ? run.count.good : run.count.bad)[r.model];
      },
      [&](const Request& r) { ++run.count.bad[r.model]; });
  AdaptiveScheduler s(spec, options, &clock, &listener);
  Time next_second = Seconds(1);
  for (const Request& r : arrivals) {
    clock.AdvanceTo(r.arrival);
    if (r.arrival >= next_second) {
      run.choices.emplace_back(s.choice(0));
      next_second += Seconds(1);
    }
    s.Submit(r);
  }
  clock.AdvanceBy(Seconds(1));
  run.choices.emplace_back(s.choice(0));
  run.switches = s.switches();
  return run;
}

// A choice's policy by name (the test fails on an unknown one).
RankPolicy Choice(std::string_view name) {
  const AdaptiveChoice* c = FindAdaptiveChoice(name);
  EXPECT_NE(c, nullptr) << name;
  return c != nullptr ? c->policy : RankPolicy{};
}

// What a scheduler plans with before any SetDelayPlan.
DelayPlan PlanOf(const ClusterSpec& spec, const SchedulerOptions& options) {
  return {spec.delays, options.frontrun_slack, {}};
}

int64_t Sum(const std::vector<int64_t>& v) {
  int64_t s = 0;
  for (int64_t x : v) s += x;
  return s;
}

// 8 models with ℓ(b) = 0.5·b + 4 ms, objective 20 ms (batching pays).
ClusterSpec EightModels(int gpus) { return Cluster(8, Millis(0.5), Millis(4), Millis(20), gpus); }
const SchedulerOptions kEarlyDrop{.drop = DropPolicy::kEarly};

TEST(AdaptiveReplayTest, CountsEveryRequestOnceUnderEveryChoice) {
  const ClusterSpec spec = EightModels(4);
  const std::vector<Request> arrivals = Poisson(spec, 4000, Seconds(1));
  std::vector<int64_t> per_model(spec.models.size());
  for (const Request& r : arrivals) ++per_model[r.model];
  for (const AdaptiveChoice& c : AdaptiveChoices()) {
    const ReplayCount n = Replay(spec, kEarlyDrop, PlanOf(spec, kEarlyDrop), {}, c.policy, arrivals);
    for (size_t m = 0; m < per_model.size(); ++m) EXPECT_EQ(n.good[m] + n.bad[m], per_model[m]) << c.name << " " << m;
    EXPECT_GT(Sum(n.bad), 0) << c.name;  // loaded: each has some to compare
  }
}

// 2,000 r/s is light for 4 GPUs and too much for 2.
TEST(AdaptiveReplayTest, GpusDownTakeNoWork) {
  const ClusterSpec spec = EightModels(4);
  const std::vector<Request> arrivals = Poisson(spec, 2000, Seconds(1));
  const ReplayCount all = Replay(spec, kEarlyDrop, PlanOf(spec, kEarlyDrop), {}, Choice("scarce"), arrivals);
  const ReplayCount half = Replay(spec, kEarlyDrop, PlanOf(spec, kEarlyDrop), {2, 3}, Choice("scarce"), arrivals);
  EXPECT_EQ(Sum(all.bad), 0);
  EXPECT_GT(Sum(half.bad), 100);
}

TEST(AdaptiveReplayTest, BestChoiceCountsBadBeyondEachModelsOnePercentFirst) {
  // Two models of 1,000 requests each. a: 15 bad on one model (5 beyond its
  // 10 allowed); b: 18 bad, 9 on each (none beyond); c: as b but 17.
  const ReplayScore a = Score({{985, 1000}, {15, 0}}), b = Score({{991, 991}, {9, 9}}), c = Score({{991, 992}, {9, 8}});
  EXPECT_DOUBLE_EQ(a.excess, 5);
  EXPECT_EQ(a.bad, 15);
  EXPECT_DOUBLE_EQ(b.excess, 0);
  EXPECT_EQ(BestChoice({a, b, c}, Deferral::kLatency), 2);
  EXPECT_EQ(BestChoice({a, b, b}, Deferral::kLatency), 1);  // a tie goes to the first
  EXPECT_EQ(BestChoice({b, b, c}, Deferral::kLatency), 2);
  EXPECT_EQ(BestChoice({c, b, c}, Deferral::kLatency), 0);
}

TEST(AdaptiveReplayTest, StressCompressesTheGapsAndKeepsEachTimeToDeadline) {
  const std::vector<Request> in = {{1, 0, Millis(10), Millis(30)}, {2, 1, Millis(20), Millis(25)}, {3, 0, Millis(60), Millis(100)}};
  const std::vector<Request> out = Compress(in, 2);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].arrival, Millis(10));
  EXPECT_EQ(out[1].arrival, Millis(15));
  EXPECT_EQ(out[2].arrival, Millis(35));
  EXPECT_EQ(out[1].deadline, Millis(20));
  EXPECT_EQ(out[2].deadline, Millis(75));
  EXPECT_EQ(out[1].id, 2u);
  EXPECT_EQ(out[1].model, 1);
}

// Equal plainly, the choice with more headroom under stress wins.
TEST(AdaptiveReplayTest, TiesGoToTheChoiceWithHeadroom) {
  ReplayScore quiet;  // nothing bad in the window
  ReplayScore strained = quiet, roomy = quiet;
  strained.stressed_bad = 40;
  strained.stressed_excess = 12;
  roomy.stressed_bad = 3;
  EXPECT_EQ(BestChoice({strained, roomy}, Deferral::kLatency), 1);
  EXPECT_EQ(BestChoice({roomy, strained}, Deferral::kLatency), 0);
  ReplayScore worse = roomy;
  worse.bad = 1;  // bad within the allowance counts after headroom
  EXPECT_EQ(BestChoice({worse, strained}, Deferral::kLatency), 0);
  worse.excess = 0.5;  // bad beyond it counts first
  EXPECT_EQ(BestChoice({worse, strained}, Deferral::kLatency), 1);
}

// Equal in goodput, under stress too: a fixed pool takes the sooner
// answers; an autoscaled one the less GPU time, then the sooner answers.
TEST(AdaptiveReplayTest, TiesGoToLatencyInAFixedPoolAndToGpuTimeWhenAutoscaling) {
  ReplayScore soon, frugal;
  soon.busy = Millis(900);
  soon.latency = Millis(500);
  frugal.busy = Millis(300);
  frugal.latency = Millis(1500);
  EXPECT_EQ(BestChoice({frugal, soon}, Deferral::kLatency), 1);
  EXPECT_EQ(BestChoice({frugal, soon}, Deferral::kConsolidate), 0);
  ReplayScore frugal_and_soon = frugal;
  frugal_and_soon.latency = Millis(1400);
  EXPECT_EQ(BestChoice({frugal, frugal_and_soon}, Deferral::kConsolidate), 1);
  ReplayScore nearly_as_frugal = frugal;  // 1% more GPU time, answered much sooner
  nearly_as_frugal.busy = Millis(303);
  nearly_as_frugal.latency = Millis(700);
  EXPECT_EQ(BestChoice({frugal, nearly_as_frugal}, Deferral::kConsolidate), 1);
  ReplayScore bad_but_soon = soon;
  bad_but_soon.bad = 1;
  EXPECT_EQ(BestChoice({bad_but_soon, frugal}, Deferral::kLatency), 1) << "goodput first";
}

// Autoscaling, at light load every way serves all, under stress too:
// adaptive holds batches as deferral does and, once it has seen the
// arrivals for a second, leaves the same high-numbered GPUs idle
// (releasable).
TEST(AdaptiveSchedulerTest, AutoscalingAtLightLoadItKeepsDeferralsConsolidation) {
  const ClusterSpec spec = EightModels(16);
  const std::vector<Request> arrivals = Poisson(spec, 2000, Seconds(4));
  SchedulerOptions options = kEarlyDrop;
  options.deferral = Deferral::kConsolidate;
  auto gpus_used = [&](const std::string& policy, std::vector<std::string>* choices) {
    ManualClock clock;
    std::set<GpuId> used;
    CallbackListener listener(
        [&](Batch b) {
          if (b.exec_at >= Seconds(1)) used.insert(b.gpu);
        },
        [](const Request&) {});
    std::unique_ptr<Scheduler> s = *CreateScheduler(policy, spec, options, &clock, &listener);
    for (const Request& r : arrivals) {
      clock.AdvanceTo(r.arrival);
      s->Submit(r);
      if (choices) choices->emplace_back(static_cast<AdaptiveScheduler*>(s.get())->choice(0));
    }
    clock.AdvanceBy(Seconds(1));
    return used;
  };
  std::vector<std::string> choices;
  const std::set<GpuId> adaptive = gpus_used("adaptive", &choices);
  EXPECT_EQ(adaptive, gpus_used("deferred", nullptr));
  EXPECT_LT(adaptive.size(), 16u);
  EXPECT_LT(adaptive.size(), gpus_used("eager", nullptr).size());
  EXPECT_THAT(choices, ::testing::Each("prompt"));
}

// 8 models on 8 GPUs near capacity: prompt deferral leaves many requests
// late that the other ways serve, and adaptive leaves it — for the way with
// the most headroom under stress, as every other way is within the
// allowance plainly.
TEST(AdaptiveSchedulerTest, LeavesDeferralWhereOtherWaysServeBetter) {
  const ClusterSpec spec = EightModels(8);
  const std::vector<Request> arrivals = Poisson(spec, 8000, Seconds(5));
  auto bad = [&](std::string_view c) { return Sum(Replay(spec, kEarlyDrop, PlanOf(spec, kEarlyDrop), {}, Choice(c), arrivals).bad); };
  const int64_t others = std::max({bad("eager"), bad("eager+early"), bad("scarce")});
  ASSERT_LT(4 * others, bad("prompt"));
  const AdaptiveRun run = RunAdaptive(spec, arrivals, kEarlyDrop);
  // It starts prompt and leaves it.
  EXPECT_EQ(run.choices.front(), "prompt");
  EXPECT_NE(run.choices.back(), "prompt");
  EXPECT_LT(Sum(run.count.bad), bad("prompt") / 2);
}

// Two models on 8 GPUs near capacity: waiting for frontrun makes batches
// large enough; eager's small ones leave many times more requests late.
TEST(AdaptiveSchedulerTest, KeepsWaitingWhereWaitingPays) {
  const ClusterSpec spec = Cluster(2, Millis(0.5), Millis(4), Millis(20), 8);
  const std::vector<Request> arrivals = Poisson(spec, 11000, Seconds(5));
  auto bad = [&](std::string_view c) { return Sum(Replay(spec, kEarlyDrop, PlanOf(spec, kEarlyDrop), {}, Choice(c), arrivals).bad); };
  const int64_t waiting = std::max(bad("prompt"), bad("scarce"));
  ASSERT_GT(bad("eager+early"), 5 * waiting);
  ASSERT_GT(bad("eager"), 5 * waiting);
  const AdaptiveRun run = RunAdaptive(spec, arrivals, kEarlyDrop);
  for (const std::string& c : run.choices) EXPECT_THAT(c, ::testing::Not(::testing::StartsWith("eager")));
  EXPECT_LE(Sum(run.count.bad), waiting);
}

// A request stamped long before now (re-submitted after a failover) is
// scheduled like any other.
TEST(AdaptiveSchedulerTest, ARequestFromLongAgoIsScheduled) {
  const ClusterSpec spec = EightModels(2);
  ManualClock clock(Seconds(10));
  int64_t answered = 0;
  CallbackListener listener([&](Batch b) { answered += static_cast<int64_t>(b.requests.size()); },
                            [&](const Request&) { ++answered; });
  AdaptiveScheduler s(spec, kEarlyDrop, &clock, &listener);
  s.Submit(Request{1, 0, Seconds(1), Seconds(10) + Millis(20)});
  clock.AdvanceBy(Seconds(1));
  EXPECT_EQ(answered, 1);
  EXPECT_EQ(s.queued(), 0);
}

TEST(AdaptiveSchedulerTest, TheSameArrivalsGiveTheSameDecisions) {
  const ClusterSpec spec = EightModels(8);
  const std::vector<Request> arrivals = Poisson(spec, 8000, Seconds(3), 7);
  const AdaptiveRun a = RunAdaptive(spec, arrivals, kEarlyDrop), b = RunAdaptive(spec, arrivals, kEarlyDrop);
  EXPECT_EQ(a.count.bad, b.count.bad);
  EXPECT_EQ(a.choices, b.choices);
  EXPECT_GT(a.switches, 0);
}

// On the replay thread the choice comes once the replays are done: here
// the test waits for them after every arrival.
TEST(AdaptiveSchedulerTest, ReplaysOnTheirOwnThreadChooseAsInline) {
  const ClusterSpec spec = EightModels(8);
  const std::vector<Request> arrivals = Poisson(spec, 8000, Seconds(3));
  SchedulerOptions options = kEarlyDrop;
  options.adaptive_replay_thread = true;
  ManualClock clock;
  int64_t bad = 0;
  CallbackListener listener(
      [&](Batch b) {
        for (const Request& r : b.requests) bad += b.exec_at + b.latency > r.deadline;
      },
      [&](const Request&) { ++bad; });
  AdaptiveScheduler s(spec, options, &clock, &listener);
  for (const Request& r : arrivals) {
    clock.AdvanceTo(r.arrival);
    s.Submit(r);
    s.AwaitReplays();
  }
  clock.AdvanceBy(Seconds(1));
  EXPECT_EQ(s.choice(0), RunAdaptive(spec, arrivals, kEarlyDrop).choices.back());
  EXPECT_GT(s.switches(), 0);
  EXPECT_EQ(s.queued(), 0);
}

// Bad requests of one strong-batching model at half of 8 GPUs' capacity
// when the scheduler stalls for `stall` at 2 s, counted from 3 s on: under
// the adaptive choice `policy` throughout, or adaptive (`policy` empty).
struct StallRun {
  int64_t bad_after = 0, after = 0;
};
StallRun RunWithAStall(const std::string& policy, Duration stall) {
  const ClusterSpec spec = Cluster(1, Micros(268), Micros(5172), Millis(20), 8);
  const std::vector<Request> arrivals = Poisson(spec, 10000, Seconds(6), 3);
  StallRun run;
  ManualClock clock;
  std::unique_ptr<Scheduler> s;
  CallbackListener listener(
      [&](Batch b) {
        for (const Request& r : b.requests) {
          if (r.arrival < Seconds(3)) continue;
          ++run.after;
          run.bad_after += b.exec_at + b.latency > r.deadline;
        }
        clock.ScheduleAt(b.exec_at + b.latency, [&s, gpu = b.gpu] { s->OnBatchDone(gpu); });
      },
      [&](const Request& r) {
        if (r.arrival < Seconds(3)) return;
        ++run.after;
        ++run.bad_after;
      });
  const SchedulerOptions options{.drop = DropPolicy::kEarly};
  if (policy.empty()) {
    s = std::make_unique<AdaptiveScheduler>(spec, options, &clock, &listener);
  } else {
    s = std::make_unique<CandidateScheduler>(spec, options, &clock, &listener, FindAdaptiveChoice(policy)->policy);
  }
  // The scheduler's thread stalls at 2 s: what arrives meanwhile reaches it
  // when the stall ends.
  for (const Request& r : arrivals) {
    const bool held = r.arrival >= Seconds(2) && r.arrival < Seconds(2) + stall;
    clock.AdvanceTo(std::max(clock.Now(), held ? Seconds(2) + stall : r.arrival));
    s->Submit(r);
  }
  clock.AdvanceBy(Seconds(1));
  return run;
}

// A stall of the scheduler tips eager with lazy drop into a collapse it
// does not leave at half its capacity: small batches of the oldest
// requests, all late. Early drop recovers at once. Replays from empty
// queues see neither.
TEST(AdaptiveSchedulerTest, AStallTipsLazyEagerIntoACollapseThatEarlyDropLeaves) {
  const StallRun eager = RunWithAStall("eager", Millis(15));
  EXPECT_GT(eager.bad_after, eager.after / 2);
  const StallRun early = RunWithAStall("eager+early", Millis(15));
  EXPECT_EQ(early.bad_after, 0);
  const StallRun adaptive = RunWithAStall("", Millis(15));
  EXPECT_EQ(adaptive.bad_after, 0);
}

// A way is stuck where it leaves a larger share bad live than its replay of
// the window says, by 5 points, over at least 100 arrivals.
TEST(AdaptiveReplayTest, AWayIsStuckWhereItServesLiveFarWorseThanReplayed) {
  EXPECT_TRUE(Stuck(8000, 10000, 0, 20000));  // a collapse the replay cannot see
  EXPECT_FALSE(Stuck(300, 10000, 0, 20000));  // 3 points: a stall's cost
  EXPECT_TRUE(Stuck(1200, 10000, 200, 20000));
  EXPECT_FALSE(Stuck(6000, 10000, 12000, 20000));  // as bad in the replay: overload
  EXPECT_FALSE(Stuck(50, 60, 0, 100));             // too few to tell
}

}  // namespace
}  // namespace tutti
