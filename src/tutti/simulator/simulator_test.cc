#include "tutti/simulator/simulator.h"

#include <map>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rapidjson/document.h"
#include "tutti/config/scheduler_reader.h"
#include "tutti/core/manual_clock.h"
#include "tutti/planner/latency_split.h"
#include "tutti/scheduler/nexus_scheduler.h"
#include "tutti/simulator/report.h"

namespace tutti {
namespace {

SimConfig Config(const std::string& policy, double rate, int gpus = 8) {
  SimConfig c;
  ModelSpec resnet;  // Symphony Table 2
  resnet.name = "ResNet50";
  resnet.profile = *LatencyProfile::Linear(Millis(1.053), Millis(5.072), 64);
  resnet.slo = Millis(25);
  ModelSpec inception;
  inception.name = "InceptionResNetV2";
  inception.profile = *LatencyProfile::Linear(Millis(5.090), Millis(18.368), 64);
  inception.slo = Millis(70);
  c.cluster.models = {resnet, inception};
  c.cluster.gpus = gpus;
  c.workload.rate = rate;
  c.policy = policy;
  c.duration = Seconds(2);
  c.warmup = Millis(200);
  return c;
}

TEST(SimulatorTest, SameConfigAndSeedGiveIdenticalResults) {
  SimConfig c = Config("deferred", 3000);
  c.jitter = 0.1;
  SimResult a = *RunSimulation(c), b = *RunSimulation(c);
  EXPECT_EQ(a.total.arrived, b.total.arrived);
  EXPECT_EQ(a.total.good, b.total.good);
  EXPECT_EQ(a.total.batches, b.total.batches);
  EXPECT_EQ(a.total.latency.Quantile(0.99), b.total.latency.Quantile(0.99));
  EXPECT_EQ(a.gpu_busy, b.gpu_busy);
  c.seed = 2;
  SimResult other = *RunSimulation(c);
  EXPECT_NE(other.total.arrived, a.total.arrived);
}

// The options that hold a GPU until its batches are reported done work in
// the simulator as in a server: its GPUs report each batch's end. On exact
// GPUs a batch is done before its GPU's next release, so max_in_flight 2
// changes no decision, at light load or in overload; await_completion costs
// little (each GPU idles for the hand-off), nothing like GPUs held for ever.
TEST(SimulatorTest, GpusHeldUntilTheirBatchesEndAreReleased) {
  for (const char* policy : {"deferred", "eager"}) {
    for (double rate : {1000.0, 2000.0}) {
      SCOPED_TRACE(absl::StrCat(policy, " at ", rate));
      SimConfig c = Config(policy, rate);
      const SimResult free = *RunSimulation(c);
      c.options.max_in_flight = 2;
      const SimResult held = *RunSimulation(c);
      c.options.await_completion = true;
      const SimResult awaited = *RunSimulation(c);
      EXPECT_EQ(held.total.good, free.total.good);
      EXPECT_EQ(held.total.batches, free.total.batches);
      EXPECT_GT(free.total.good, 0.5 * free.total.arrived);
      EXPECT_GT(awaited.total.good, 0.95 * free.total.good);
    }
  }
}

TEST(SimulatorTest, EveryRequestEndsExactlyOnceUnderEveryPolicy) {
  for (const std::string& policy : SchedulerPolicyNames()) {
    for (double rate : {500.0, 4000.0, 20000.0}) {  // light, busy, overloaded
      SimConfig c = Config(policy, rate);
      c.jitter = 0.05;
      c.options.drop = rate > 10000 ? DropPolicy::kEarly : DropPolicy::kLazy;
      absl::StatusOr<SimResult> r = RunSimulation(c);
      ASSERT_TRUE(r.ok()) << r.status();
      for (const ModelMetrics& m : r->models) {
        EXPECT_EQ(m.arrived, m.good + m.late + m.dropped) << policy << " " << rate << " " << m.name;
      }
      EXPECT_GT(r->total.arrived, 0);
    }
  }
}

// More models than memory: 300 models of 100 MB, room for 40 on each of
// two GPUs, a Zipf load. The simulator checks the memory contract as it
// emulates (SimResult::memory_violations); every request ends once.
TEST(SimulatorTest, ModelsBeyondMemoryAreLoadedAsPlannedAndKeepTheContract) {
  SimConfig c;
  for (int i = 0; i < 300; ++i) {
    c.cluster.models.push_back({"m" + std::to_string(i), *LatencyProfile::Linear(Micros(500), Millis(2), 16),
                                Millis(50)});
    c.cluster.models.back().weights_bytes = 100'000'000;
  }
  c.cluster.gpus = 2;
  c.cluster.memory.gpu_bytes = 4'000'000'000;
  c.workload.rate = 400;
  c.workload.zipf_s = 1;
  c.duration = 20 * kSecond;
  c.warmup = 2 * kSecond;
  c.series_interval = kSecond;
  std::map<std::string, SimResult> results;
  for (const std::string variant : {"", "on_demand", "first_request"}) {
    c.policy = "loads";
    c.options = {};
    if (!variant.empty()) {
      ASSERT_TRUE(ApplyPolicyVariant(variant, &c.options));
    }
    absl::StatusOr<SimResult> r = RunSimulation(c);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->memory_violations, 0) << variant;
    EXPECT_EQ(r->total.arrived, r->total.good + r->total.late + r->total.dropped) << variant;
    EXPECT_GT(r->loads, 40) << variant;  // far more than the first fill
    EXPECT_LE(r->peak_memory_bytes, c.cluster.memory.gpu_bytes);
    int64_t series_loads = 0;
    for (int64_t n : r->series.loads) series_loads += n;
    EXPECT_GE(series_loads, r->loads);  // the series counts the warm-up too
    results[variant] = *std::move(r);
  }
  // Its report names the 11 busiest models and sums the other 289, and
  // draws loads and memory over time.
  rapidjson::Document d;
  d.Parse(SimReportJson(results[""], "loads", 2).c_str());
  ASSERT_FALSE(d.HasParseError());
  ASSERT_EQ(d["models"].Size(), 12u);
  EXPECT_STREQ(d["models"][11].GetString(), "the other 289 models");
  EXPECT_STREQ(d["models"][0].GetString(), "m0");  // Zipf: the first is the busiest
  ASSERT_EQ(d["loads"].Size(), d["t"].Size());
  double held = 0;
  for (const auto& gb : d["memory_gb"].GetArray()) held = std::max(held, gb.GetDouble());
  EXPECT_GT(held, 4.0);  // both GPUs filled …
  EXPECT_LE(held, 8.0);  // … within their budgets
  EXPECT_GT(results[""].total.good, results["first_request"].total.good);
  EXPECT_GE(results[""].total.good, results["on_demand"].total.good);
  // A memory budget is refused by a policy that keeps every model loaded.
  c.policy = "deferred";
  EXPECT_THAT(RunSimulation(c).status().message(), ::testing::HasSubstr("needs the loads policy"));
}

TEST(SimulatorTest, DeferredKeepsSpareGpusIdleAtLowLoad) {
  // Symphony: below peak, the idle GPUs are the highest-numbered ones.
  SimResult r = *RunSimulation(Config("deferred", 300));
  EXPECT_EQ(r.total.rate(), 0);
  EXPECT_LE(r.gpus_used, 4);
  for (GpuId g = 5; g < 8; ++g) EXPECT_EQ(r.BusyFraction(g), 0) << g;
  EXPECT_GT(r.BusyFraction(0), r.BusyFraction(2));  // load concentrates on low ids
  EXPECT_GE(r.advice.remove, 5);
  // Eager spreads the same load over more GPUs with smaller batches.
  SimResult eager = *RunSimulation(Config("eager", 300));
  EXPECT_GE(eager.gpus_used, r.gpus_used);
  EXPECT_LE(eager.total.MeanBatch(), r.total.MeanBatch());
}

TEST(SimulatorTest, OverloadIsReportedAndScalingAdviceAddsGpus) {
  SimResult r = *RunSimulation(Config("deferred", 20000));
  EXPECT_GT(r.total.rate(), 0.3);
  EXPECT_GT(r.advice.add, 0);
  EXPECT_EQ(r.total.QuantileWithDrops(0.99), kInfiniteFuture);
}

// Symphony Figure 15's panels: a light first second, an overloaded second.
// Two priority levels, half the requests each, at 1.5 times capacity
// (Symphony's ResNet50 on 8 A100s, SLO 20 ms, deferred with early drop):
// priority 1 keeps its p99 within the objective while priority 2 absorbs
// the excess, and the whole keeps one level's goodput at capacity.
TEST(SimulatorTest, AtOneAndAHalfTimesCapacityTheHigherPriorityKeepsItsObjective) {
  SimConfig c;
  ModelSpec resnet;
  resnet.name = "ResNet50";
  resnet.profile = *LatencyProfile::Linear(Millis(0.268), Millis(5.172), 64);
  resnet.slo = Millis(20);
  c.cluster.models = {resnet};
  c.cluster.gpus = 8;
  c.policy = "deferred";
  c.options.drop = DropPolicy::kEarly;
  c.duration = Seconds(3);
  c.warmup = Millis(500);
  c.workload.rate = 20000;  // about its goodput at one level
  const SimResult one = *RunSimulation(c);
  EXPECT_TRUE(one.levels.empty());
  c.workload.rate = 30000;
  const SimResult flat = *RunSimulation(c);
  c.workload.priority_shares = {0.5, 0.5};
  const SimResult two = *RunSimulation(c);
  ASSERT_EQ(two.levels.size(), 2u);
  EXPECT_EQ(two.levels[0].arrived + two.levels[1].arrived, two.total.arrived);
  EXPECT_NEAR(static_cast<double>(two.levels[0].arrived) / two.total.arrived, 0.5, 0.02);
  EXPECT_GT(flat.total.rate(), 0.25) << "one level: every request pays for the excess";
  EXPECT_LE(two.levels[0].rate(), 0.01) << "priority 1: p99 within the objective";
  EXPECT_GT(two.levels[1].rate(), 0.5) << "priority 2 absorbs the excess";
  EXPECT_GE(two.Goodput(), 0.95 * one.Goodput());
}

TEST(SimulatorTest, SeriesFollowAChangingWorkload) {
  SimConfig c = Config("deferred", 300);
  c.workload.phases = {{kSecond, 20000}};
  c.series_interval = Millis(500);
  const SimResult r = *RunSimulation(c);
  const SimSeries& s = r.series;
  ASSERT_EQ(s.gpus_used.size(), 4u);
  ASSERT_EQ(s.good.size(), 2u);
  int64_t ended = 0, measured = 0;
  for (size_t m = 0; m < 2; ++m) {
    for (size_t i = 0; i < 4; ++i) ended += s.good[m][i] + s.bad[m][i];
    measured += r.models[m].arrived;
  }
  // Every request is counted once, by its arrival (the series include the warm-up).
  EXPECT_GE(ended, measured);
  int64_t bad_light = 0, bad_heavy = 0;
  for (size_t m = 0; m < 2; ++m) bad_light += s.bad[m][0] + s.bad[m][1], bad_heavy += s.bad[m][2] + s.bad[m][3];
  EXPECT_EQ(bad_light, 0);
  EXPECT_GT(bad_heavy, 0);
  // Light: few GPUs and advice to release; overloaded: all of them and advice to add.
  EXPECT_LE(s.gpus_used[0], 4);
  EXPECT_GT(s.advice[0].remove, 0);
  EXPECT_EQ(s.gpus_used[3], 8);
  EXPECT_GT(s.advice[3].add, 0);
  EXPECT_EQ(s.advice[3].remove, 0);
  EXPECT_GT(s.busy[3], s.busy[0]);
}

TEST(SimulatorTest, TheReportsDataIsJsonOfTheSeries) {
  SimConfig c = Config("deferred", 300);
  c.cluster.models[0].name = "Res\"Net</script>";
  c.series_interval = Millis(500);
  const SimResult r = *RunSimulation(c);
  rapidjson::Document d;
  d.Parse(SimReportJson(r, "deferred+early", 8).c_str());
  ASSERT_FALSE(d.HasParseError());
  EXPECT_STREQ(d["policy"].GetString(), "deferred+early");
  EXPECT_STREQ(d["models"][0].GetString(), "Res\"Net</script>");
  EXPECT_EQ(d["t"].Size(), 4u);
  EXPECT_EQ(d["good"][1].Size(), 4u);
  EXPECT_EQ(d["gpus_used"][0].GetInt(), r.series.gpus_used[0]);
  EXPECT_EQ(d["advice_remove"][0].GetInt(), r.series.advice[0].remove);
  EXPECT_DOUBLE_EQ(d["good"][0][1].GetDouble(), r.series.good[0][1] / 0.5);
}

// Closed-loop autoscaling: a pool of 16 GPUs, 2 up at first; the load
// rises eightfold for 40 s and falls back. The GPUs up follow it, and once
// they have caught up, requests are good again.
TEST(SimulatorTest, AutoscalingFollowsTheLoad) {
  SimConfig c = Config("deferred", 300, 16);
  c.options.drop = DropPolicy::kEarly;
  c.workload.phases = {{Seconds(40), 2500}, {Seconds(80), 300}};  // 16 GPUs serve about 3,250 r/s
  c.duration = Seconds(120);
  c.warmup = kSecond;
  c.series_interval = Seconds(2);
  c.autoscale = AutoscaleOptions{.interval = Seconds(2), .min_gpus = 1, .initial_gpus = 2,
                                 .provision_delay = Seconds(2)};
  const absl::StatusOr<SimResult> r = RunSimulation(c);
  ASSERT_TRUE(r.ok()) << r.status();
  for (const ModelMetrics& m : r->models) EXPECT_EQ(m.arrived, m.good + m.late + m.dropped) << m.name;
  const SimSeries& s = r->series;
  ASSERT_EQ(s.gpus_allocated.size(), 60u);
  const auto most = [&](int from_s, int to_s) {
    return *std::max_element(s.gpus_allocated.begin() + from_s / 2, s.gpus_allocated.begin() + to_s / 2);
  };
  const auto bad_rate = [&](int from_s, int to_s) {
    int64_t good = 0, bad = 0;
    for (size_t m = 0; m < s.good.size(); ++m) {
      for (int i = from_s / 2; i < to_s / 2; ++i) good += s.good[m][i], bad += s.bad[m][i];
    }
    return static_cast<double>(bad) / static_cast<double>(std::max<int64_t>(1, good + bad));
  };
  const int light = most(20, 40), heavy = most(60, 80), after = most(110, 120);
  EXPECT_GE(heavy, 2 * light) << light << " " << heavy;
  EXPECT_LT(after, heavy);
  EXPECT_LE(heavy, 16);
  // Steady (the last 15 s of each phase): under 1% bad.
  EXPECT_LT(bad_rate(25, 40), 0.01);
  EXPECT_LT(bad_rate(65, 80), 0.01);
  EXPECT_LT(bad_rate(105, 120), 0.01);
  EXPECT_GT(bad_rate(40, 46), 0.01);  // the step itself, before GPUs come
  EXPECT_GT(r->scale_ups, 0);
  EXPECT_GT(r->scale_downs, 0);
  EXPECT_EQ(r->peak_gpus_allocated, *std::max_element(s.gpus_allocated.begin(), s.gpus_allocated.end()));
  EXPECT_LT(r->gpu_seconds_allocated, 0.6 * 16 * ToSeconds(r->window));  // far from all 16, all the time
  // Same config and seed, same run.
  const SimResult again = *RunSimulation(c);
  EXPECT_EQ(again.series.gpus_allocated, s.gpus_allocated);
  EXPECT_EQ(again.total.good, r->total.good);
}

TEST(SimulatorTest, AutoscalingNeedsMembershipAndSaneBounds) {
  SimConfig c = Config("nexus", 500, 8);
  c.autoscale = AutoscaleOptions{.initial_gpus = 2};
  EXPECT_EQ(RunSimulation(c).status().code(), absl::StatusCode::kUnimplemented);
  c.policy = "deferred";
  c.autoscale->initial_gpus = 9;
  EXPECT_THAT(std::string(RunSimulation(c).status().message()), ::testing::HasSubstr("initial_gpus"));
  c.autoscale->initial_gpus = 2;
  c.autoscale->max_gpus = 20;
  EXPECT_FALSE(RunSimulation(c).ok());
}

TEST(SimulatorTest, RejectsBadConfigs) {
  SimConfig c = Config("deferred", 100);
  c.warmup = c.duration;
  EXPECT_FALSE(RunSimulation(c).ok());
  c = Config("magic", 100);
  EXPECT_FALSE(RunSimulation(c).ok());
}

// A graph: queries through ResNet50, then InceptionResNetV2 on gamma of
// its outputs each, 200 ms split 40/60, at a light constant load.
SimConfig GraphConfig(double gamma, Duration objective = Millis(200)) {
  SimConfig c = Config("eager", 200);
  c.workload.arrival = ArrivalKind::kConstant;
  c.graph = SimGraph{{1, gamma}, {0.4, 0.6}, objective};
  return c;
}

TEST(SimulatorGraphTest, EveryQueryGivesItsNextStepGammaItemsAndIsJudgedWhole) {
  for (double gamma : {0.0, 0.5, 1.0, 3.0}) {
    absl::StatusOr<SimResult> r = RunSimulation(GraphConfig(gamma));
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_EQ(r->models.size(), 1u);
    ASSERT_EQ(r->steps.size(), 2u);
    const ModelMetrics& q = r->models[0];
    EXPECT_EQ(q.name, "query");
    EXPECT_EQ(q.slo, Millis(200));
    EXPECT_GT(q.arrived, 300);
    EXPECT_EQ(q.good, q.arrived) << "gamma " << gamma;  // light load: every query on time
    EXPECT_EQ(r->steps[0].arrived, q.arrived);
    EXPECT_NEAR(static_cast<double>(r->steps[1].arrived) / q.arrived, gamma, 0.06) << "gamma " << gamma;
    // A query's latency covers its steps': at least both batches of one.
    if (gamma >= 1) {
      EXPECT_GE(q.latency.Quantile(0.01), Millis(5.072 + 1.053 + 18.368 + 5.090));
    }
    EXPECT_DOUBLE_EQ(r->Goodput(), static_cast<double>(q.good) / ToSeconds(r->window));
  }
}

// `nexus` plans its first epoch for what each step is offered: a graph's
// second step gets gamma items per query. Planned for equal rates, the
// cheap second step would get a fraction of the GPUs it needs until the
// first replan.
TEST(SimulatorGraphTest, NexusPlansEachStepForItsFanOutFromTheStart) {
  SimConfig c = GraphConfig(10);
  std::swap(c.cluster.models[0], c.cluster.models[1]);  // the costly model first, then 10 cheap items
  c.cluster.models[0].slo = Millis(80);  // the 0.4 / 0.6 shares of 200 ms
  c.cluster.models[1].slo = Millis(120);
  c.workload = {.arrival = ArrivalKind::kPoisson, .rate = 150};
  c.policy = "nexus";
  EXPECT_EQ(OfferedModelRates(c), (std::vector<double>{150, 1500}));

  SchedulerOptions options;
  options.nexus_initial_rates = OfferedModelRates(c);
  ManualClock clock;
  CallbackListener listener([](Batch) {}, [](const Request&) {});
  NexusScheduler first(c.cluster, options, &clock, &listener);
  double planned[2] = {0, 0};
  for (const GpuNode& node : first.plan()) {
    for (const NodeSession& s : node.sessions) planned[s.model] += s.rate;
  }
  ASSERT_GT(planned[0], 150);  // headroom: the cluster is filled
  EXPECT_NEAR(planned[1] / planned[0], 10, 0.5);

  c.options.nexus_epoch = Seconds(10);  // no replan within the run
  const SimResult r = *RunSimulation(c);
  EXPECT_EQ(r.policy, "nexus");
  EXPECT_GT(r.models[0].arrived, 250);
  EXPECT_LT(r.models[0].rate(), 0.01);
}

TEST(SimulatorGraphTest, AQueryWhoseSecondStepCannotMakeItIsDropped) {
  // 25 ms: ResNet50 (6.1 ms for one) fits its 10 ms share; InceptionResNetV2
  // (23.5 ms for one) cannot fit the rest: every query is dropped.
  absl::StatusOr<SimResult> r = RunSimulation(GraphConfig(1, Millis(25)));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->models[0].dropped, r->models[0].arrived);
  EXPECT_EQ(r->steps[0].dropped, 0);
  EXPECT_EQ(r->steps[1].dropped, r->steps[1].arrived);
  SimConfig bad = GraphConfig(1);
  bad.graph->shares = {1.0};
  EXPECT_FALSE(RunSimulation(bad).ok());
}

}  // namespace
}  // namespace tutti

namespace tutti {
namespace {

// Model-less: a cheap slow variant (two slots) and a dear fast one (two
// slots) for a task; the load rises past what the cheap one carries and
// falls back.
SimConfig ModelLessConfig(std::vector<int> allowed) {
  SimConfig c;
  c.policy = "deferred";
  c.duration = Seconds(60);
  ModelSpec cheap{"cheap", *LatencyProfile::Linear(Millis(0.5), Millis(1), 16), Millis(20)};
  ModelSpec fast{"fast", *LatencyProfile::Linear(Millis(0.05), Millis(0.5), 64), Millis(20)};
  c.cluster.models = {cheap, fast};
  c.cluster.sub_clusters = {{{0}, 2}, {{1}, 2}};
  c.workload.rate = 500;
  for (int t = 1; t < 60; ++t) {  // 500/s, rising 16% a second to 10,000/s, falling back
    const double level = std::clamp(std::min((t - 5) / 20.0, (55 - t) / 20.0), 0.0, 1.0);
    c.workload.phases.push_back({Seconds(t), 500 * std::pow(20, level)});
  }
  SimModelLess ml;
  ml.task = {0.8, Millis(20), 0};
  ml.variants = {{"cheap", "cpu", 0.85, Millis(1.5), ThroughputWithin(cheap.profile, Millis(10)), 1, Millis(500)},
                 {"fast", "gpu", 0.9, Millis(0.55), ThroughputWithin(fast.profile, Millis(10)), 8, Millis(500)}};
  ml.autoscale.allowed = std::move(allowed);
  // Headroom above INFaaS's 1.05: the load rises 16% a second and the cheap
  // variant's batches stop at 16, so at its saturation it has none.
  ml.autoscale.slack = 1.2;
  c.model_less = ml;
  return c;
}

TEST(SimulatorModelLessTest, VariantsFollowTheLoadAndCostLessThanAFixedVariant) {
  const SimResult tutti = *RunSimulation(ModelLessConfig({}));
  const SimResult fixed = *RunSimulation(ModelLessConfig({1}));
  EXPECT_EQ(tutti.total.arrived, fixed.total.arrived);  // the same queries
  EXPECT_EQ(tutti.total.good + tutti.total.late + tutti.total.dropped, tutti.total.arrived);
  EXPECT_LT(tutti.total.rate(), 0.001);
  EXPECT_LT(fixed.total.rate(), 0.001);
  // Both variants served; the dear one only around the peak.
  EXPECT_GT(tutti.models[0].good, 0);
  EXPECT_GT(tutti.models[1].good, 0);
  EXPECT_GT(tutti.instance_seconds[0], tutti.instance_seconds[1]);
  EXPECT_LT(tutti.cost, 0.6 * fixed.cost);
  EXPECT_GE(tutti.scale_ups, 1);
  EXPECT_GE(tutti.scale_downs, 1);
  // Accuracy: each answer scores its variant's; the fixed run's is the fast one's.
  EXPECT_GT(tutti.accuracy, 0.85);
  EXPECT_LT(tutti.accuracy, 0.9);
  EXPECT_DOUBLE_EQ(fixed.accuracy, 0.9);
  EXPECT_EQ(fixed.models[0].arrived, 0);
  // Deterministic.
  const SimResult again = *RunSimulation(ModelLessConfig({}));
  EXPECT_EQ(again.total.good, tutti.total.good);
  EXPECT_EQ(again.allocation, tutti.allocation);
}

TEST(SimulatorModelLessTest, NeedsOneVariantPerModelOnItsOwnSubCluster) {
  SimConfig c = ModelLessConfig({});
  c.cluster.sub_clusters = {{{0, 1}, 4}};
  EXPECT_EQ(RunSimulation(c).status().code(), absl::StatusCode::kInvalidArgument);
  c = ModelLessConfig({});
  c.model_less->variants.pop_back();
  EXPECT_EQ(RunSimulation(c).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tutti
