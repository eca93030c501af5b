#include "tutti/graphs/graph_engine.h"

#include <optional>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tutti/planner/latency_split.h"
#include "tutti/testing/fake_engine.h"

namespace tutti {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// The fake engine (testing/fake_engine.h) under a recorder: it notes each
// step's model and objective, and lets `compute` of time pass on the manual
// clock before the fake answers (which it does at once, at Now()).
class Recorder final : public InferenceEngine {
 public:
  Recorder(testing::FakeEngine* fake, ManualClock* clock) : fake_(fake), clock_(clock) {}
  absl::Status Submit(ModelId model, std::vector<float> input, Duration objective, InferenceCallback done) override {
    submitted.push_back({model, objective});
    return fake_->Submit(model, std::move(input), objective, [this, done = std::move(done)](InferenceOutcome o) {
      clock_->AdvanceBy(compute);
      o.finished = clock_->Now();
      done(std::move(o));
    });
  }
  void StopAccepting() override { fake_->StopAccepting(); }
  void WaitIdle() override { fake_->WaitIdle(); }
  int64_t in_flight() const override { return fake_->in_flight(); }
  std::vector<ModelCounters> Counters() const override { return fake_->Counters(); }
  std::vector<double> BusyFractions() const override { return {}; }
  Time Now() const override { return clock_->Now(); }
  void OnAnswerWritten(const WrittenAnswer&) override {}
  DelayReport Delays() const override { return {}; }

  std::vector<std::pair<ModelId, Duration>> submitted;
  Duration compute = 0;

 private:
  testing::FakeEngine* const fake_;
  ManualClock* const clock_;
};

// Models "a" (4 values → 3) and "b" (3 → 2), ℓ(1) = 1.1 ms each; the graph
// "pair" runs a, then b on a's output, over a 100 ms objective split 30/70.
class GraphEngineTest : public ::testing::Test {
 protected:
  GraphEngineTest() {
    spec_.models = {{"a", *LatencyProfile::Linear(Micros(100), Millis(1), 8), kSecond},
                    {"b", *LatencyProfile::Linear(Micros(100), Millis(1), 8), kSecond}};
    spec_.gpus = 1;
    fake_ = std::make_unique<testing::FakeEngine>(spec_, std::vector<ModelShape>{{4, 3}, {3, 2}}, &clock_);
    recorder_ = std::make_unique<Recorder>(fake_.get(), &clock_);
    GraphSpec pair{"pair", Millis(100), 4, 2, {{0, -1}, {1, 0}}, {0.3, 0.7}};
    engine_ = *GraphEngine::Create(recorder_.get(), spec_, {pair});
  }
  // Submits the graph (model 2); the answer lands in answer_.
  absl::Status Infer(std::vector<float> input, Duration objective = 0) {
    return engine_->Submit(2, std::move(input), objective, [this](InferenceOutcome o) {
      EXPECT_FALSE(answer_.has_value()) << "answered twice";
      answer_ = std::move(o);
    });
  }

  ManualClock clock_{Millis(5)};
  ClusterSpec spec_;
  std::unique_ptr<testing::FakeEngine> fake_;
  std::unique_ptr<Recorder> recorder_;
  std::unique_ptr<GraphEngine> engine_;
  std::optional<InferenceOutcome> answer_;
};

TEST_F(GraphEngineTest, RunsTheStepsInTurnOnEachOthersOutputs) {
  ASSERT_TRUE(Infer({1, 2, 3, 4}).ok());
  ASSERT_TRUE(answer_.has_value());
  ASSERT_TRUE(answer_->status.ok()) << answer_->status;
  // a: (j + 1) × 10 = 10, 20, 30; b: (j + 1) × 60.
  EXPECT_THAT(answer_->output, ElementsAre(60, 120));
  EXPECT_EQ(answer_->arrival, Millis(5));
  EXPECT_EQ(answer_->deadline, Millis(105));
  EXPECT_FALSE(answer_->late);
  const std::vector<ModelCounters> c = engine_->Counters();
  ASSERT_EQ(c.size(), 3u);  // a, b, then the graph
  EXPECT_EQ(c[0].good, 1);
  EXPECT_EQ(c[1].good, 1);
  EXPECT_EQ(c[2].good, 1);
  EXPECT_EQ(engine_->in_flight(), 0);
}

TEST_F(GraphEngineTest, EachStepIsDueAtItsShareOfTheObjective) {
  recorder_->compute = Millis(10);
  ASSERT_TRUE(Infer({1, 2, 3, 4}).ok());
  // a is due 30 ms after arrival; b at the end, 10 ms of a's compute later.
  EXPECT_THAT(recorder_->submitted, ElementsAre(std::pair{0, Millis(30)}, std::pair{1, Millis(90)}));
  // A request's own objective scales the shares.
  recorder_->submitted.clear();
  answer_.reset();
  ASSERT_TRUE(Infer({1, 2, 3, 4}, Millis(200)).ok());
  EXPECT_THAT(recorder_->submitted, ElementsAre(std::pair{0, Millis(60)}, std::pair{1, Millis(190)}));
  EXPECT_FALSE(answer_->late);
}

TEST_F(GraphEngineTest, AMiddleStepDroppedIsOneClearError) {
  // 2 ms in all: a gets 0.6 ms < ℓ(1) and is dropped — the graph's one answer.
  ASSERT_TRUE(Infer({1, 2, 3, 4}, Millis(2)).ok());
  ASSERT_TRUE(answer_.has_value());
  EXPECT_EQ(answer_->status.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(answer_->status.message(), HasSubstr("graph 'pair', step 0 ('a'): the latency objective of this 'a'"));
  // 4 ms: a gets 1.2 ms ≥ ℓ(1) and runs; taking 3 ms, it leaves b 1 ms <
  // ℓ(1): b is dropped.
  answer_.reset();
  recorder_->compute = Millis(3);
  ASSERT_TRUE(Infer({1, 2, 3, 4}, Millis(4)).ok());
  ASSERT_TRUE(answer_.has_value());
  EXPECT_THAT(answer_->status.message(), HasSubstr("step 1 ('b'): the latency objective of this 'b' request"));
  // a taking longer than the whole objective: b's share ran out before it started.
  answer_.reset();
  recorder_->compute = Millis(5);
  ASSERT_TRUE(Infer({1, 2, 3, 4}, Millis(4)).ok());
  EXPECT_THAT(answer_->status.message(), HasSubstr("step 1 ('b'): its share of the latency objective had run out"));
  const ModelCounters graph = engine_->Counters()[2];
  EXPECT_EQ(graph.dropped, 3);
  EXPECT_EQ(graph.good, 0);
  // Per step, against the step's own deadline.
  ASSERT_EQ(graph.steps.size(), 2u);
  EXPECT_EQ(graph.steps[0].model, "a");
  EXPECT_DOUBLE_EQ(graph.steps[0].deadline_share, 0.3);
  EXPECT_DOUBLE_EQ(graph.steps[1].deadline_share, 1.0);
  EXPECT_EQ(graph.steps[0].dropped, 1);
  EXPECT_EQ(graph.steps[0].late, 2);  // 3 and 5 ms against its 1.2 ms
  EXPECT_EQ(graph.steps[1].dropped, 2);
  EXPECT_EQ(engine_->in_flight(), 0);
}

TEST_F(GraphEngineTest, RefusalsAreImmediateAndNeverAnswered) {
  EXPECT_EQ(Infer({1, 2}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(engine_->Submit(3, {1}, 0, [](InferenceOutcome) {}).code(), absl::StatusCode::kNotFound);
  engine_->StopAccepting();
  EXPECT_EQ(Infer({1, 2, 3, 4}).code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(engine_->Submit(0, {1, 2, 3, 4}, 0, [](InferenceOutcome) {}).code(), absl::StatusCode::kUnavailable);
  EXPECT_FALSE(answer_.has_value());
  engine_->WaitIdle();
}

TEST_F(GraphEngineTest, TheInnerModelsAreServedAsBefore) {
  std::optional<InferenceOutcome> direct;
  ASSERT_TRUE(engine_->Submit(1, {1, 1, 1}, 0, [&](InferenceOutcome o) { direct = std::move(o); }).ok());
  EXPECT_THAT(direct->output, ElementsAre(3, 6));
  EXPECT_EQ(engine_->Counters()[2].good, 0);
}

TEST(GraphSharesTest, TheSplitFollowsTheProfilesAndTheEvenSplitTheLength) {
  ClusterSpec spec;
  // a batches well (its time grows slowly with the batch), b hardly at all.
  spec.models = {{"a", *LatencyProfile::Linear(Micros(200), Millis(8), 64), kSecond},
                 {"b", *LatencyProfile::Linear(Millis(4), Micros(500), 64), kSecond}};
  GraphSpec graph{"pair", Millis(100), 1, 1, {{0, -1}, {1, 0}}, {}};
  graph.even_split = true;
  const std::vector<double> even = MakeGraphShares(graph, spec);
  EXPECT_THAT(even, ElementsAre(0.5, 0.5));
  graph.even_split = false;
  const std::vector<double> split = MakeGraphShares(graph, spec);
  ASSERT_EQ(split.size(), 2u);
  EXPECT_NEAR(split[0] + split[1], 1, 1e-9);  // the whole objective
  auto gpus = [&](const std::vector<double>& shares) {
    return 1 / ThroughputWithin(spec.models[0].profile, static_cast<Duration>(shares[0] * 1e8)) +
           1 / ThroughputWithin(spec.models[1].profile, static_cast<Duration>(shares[1] * 1e8));
  };
  EXPECT_LT(gpus(split), gpus(even));  // fewer GPUs than the even split
}

TEST(GraphSharesTest, WhatTheProfilesDoNotNeedIsGivenOutInProportion) {
  ClusterSpec spec;
  // Cheap steps: any batch fits in a few ms of a 100 ms objective, so the
  // split alone would leave a step due within milliseconds of arrival.
  spec.models = {{"a", *LatencyProfile::Linear(Micros(100), Micros(50), 8), kSecond},
                 {"b", *LatencyProfile::Linear(Micros(300), Micros(50), 8), kSecond},
                 {"c", *LatencyProfile::Linear(Micros(100), Micros(50), 8), kSecond}};
  // a → b, a → c: two paths; b costs more than c.
  GraphSpec graph{"fork", Millis(100), 1, 1, {{0, -1}, {1, 0}, {2, 0}}, {}};
  const std::vector<double> shares = MakeGraphShares(graph, spec);
  ASSERT_EQ(shares.size(), 3u);
  EXPECT_NEAR(std::max(shares[0] + shares[1], shares[0] + shares[2]), 1, 1e-9);
  EXPECT_GT(shares[0], 0.1);  // not a few ms: due well after arrival
  EXPECT_GE(shares[1], shares[2]);
  GraphSpec even = graph;
  even.even_split = true;
  EXPECT_THAT(MakeGraphShares(even, spec), ElementsAre(0.5, 0.5, 0.5));
}

// An engine of scripted models, answering at once: "router" (1 value → 3)
// is one-hot at ⌊input⌋ mod 3; "x" and "y" (1 → 2) give {10 × input, 0}
// and {20 × input, 0}; "heads" (head, value → 2) gives {100 × head + value,
// 0}, as a prefix group's model; "broken" fails.
class Scripted final : public InferenceEngine {
 public:
  static ClusterSpec Spec() {
    ClusterSpec spec;
    for (const char* name : {"router", "x", "y", "heads", "broken"}) {
      spec.models.push_back({name, *LatencyProfile::Linear(Micros(100), Millis(1), 8), kSecond});
    }
    return spec;
  }
  absl::Status Submit(ModelId model, std::vector<float> input, Duration, InferenceCallback done) override {
    submitted.push_back({model, input});
    InferenceOutcome o;
    switch (model) {
      case 0: o.output = {0, 0, 0}; o.output[static_cast<int>(input[0]) % 3] = 1; break;
      case 1: o.output = {10 * input[0], 0}; break;
      case 2: o.output = {20 * input[0], 0}; break;
      case 3: o.output = {100 * input[0] + input[1], 0}; break;
      default: o.status = absl::InternalError("broken on purpose");
    }
    done(std::move(o));
    return absl::OkStatus();
  }
  void StopAccepting() override {}
  void WaitIdle() override {}
  int64_t in_flight() const override { return 0; }
  std::vector<ModelCounters> Counters() const override { return std::vector<ModelCounters>(5); }
  std::vector<double> BusyFractions() const override { return {}; }
  Time Now() const override { return 0; }
  void OnAnswerWritten(const WrittenAnswer&) override {}
  DelayReport Delays() const override { return {}; }

  std::vector<std::pair<ModelId, std::vector<float>>> submitted;
};

// The router picks x for class 0 and y for class 1; class 2 exits early
// with the router's own output.
GraphSpec Routed() {
  GraphSpec g{"routed", kSecond, 1, 3, {{0}, {1}, {2}}, {0.5, 0.5, 0.5}};
  g.steps[1].route_from = g.steps[2].route_from = 0;
  g.steps[1].route_values = {0};
  g.steps[2].route_values = {1};
  g.steps[1].gamma = g.steps[2].gamma = 0.5;
  g.outputs = {1, 2};
  g.exit_from = 0;
  g.exit_values = {2};
  return g;
}

InferenceOutcome Call(GraphEngine& engine, ModelId graph, std::vector<float> input) {
  std::optional<InferenceOutcome> answer;
  EXPECT_TRUE(engine.Submit(graph, std::move(input), 0, [&](InferenceOutcome o) {
    EXPECT_FALSE(answer.has_value()) << "answered twice";
    answer = std::move(o);
  }).ok());
  EXPECT_TRUE(answer.has_value());
  return answer.value_or(InferenceOutcome{});
}

TEST(GraphRoutingTest, ARouteChoosesTheNextStepAndAClassCanExitEarly) {
  Scripted inner;
  std::unique_ptr<GraphEngine> engine = *GraphEngine::Create(&inner, Scripted::Spec(), {Routed()});
  EXPECT_THAT(Call(*engine, 5, {3}).output, ElementsAre(30, 0));  // class 0: x
  EXPECT_THAT(Call(*engine, 5, {4}).output, ElementsAre(80, 0));  // class 1: y
  EXPECT_THAT(Call(*engine, 5, {5}).output, ElementsAre(0, 0, 1));  // class 2: the router's answer
  std::vector<ModelId> ran;
  for (const auto& [model, input] : inner.submitted) ran.push_back(model);
  EXPECT_THAT(ran, ElementsAre(0, 1, 0, 2, 0));  // a step that is not routed to never runs
  const ModelCounters graph = engine->Counters()[5];
  EXPECT_EQ(graph.good, 3);
  EXPECT_EQ(graph.steps[1].good, 1);
  EXPECT_EQ(graph.steps[2].good, 1);
}

TEST(GraphRoutingTest, ARequestNoRouteTakesGetsOneClearError) {
  Scripted inner;
  GraphSpec g = Routed();
  g.exit_from = -1;
  std::unique_ptr<GraphEngine> engine = *GraphEngine::Create(&inner, Scripted::Spec(), {g});
  const InferenceOutcome o = Call(*engine, 5, {5});
  EXPECT_EQ(o.status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(o.status.message(), HasSubstr("graph 'routed': no route takes this request (step 0 ('router') chose "
                                            "class 2), so no step made its output"));
  EXPECT_EQ(engine->in_flight(), 0);
}

TEST(GraphRoutingTest, AFailingBranchAnswersOnceAndItsSiblingIsNotHeard) {
  Scripted inner;
  // Two steps read the input at once: "broken", and x (the output).
  GraphSpec g{"fork", kSecond, 1, 2, {{4}, {1}}, {0.5, 1}};
  std::unique_ptr<GraphEngine> engine = *GraphEngine::Create(&inner, Scripted::Spec(), {g});
  const InferenceOutcome o = Call(*engine, 5, {2});
  EXPECT_EQ(o.status.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(o.status.message(), HasSubstr("graph 'fork', step 0 ('broken'): broken on purpose"));
  EXPECT_EQ(engine->Counters()[5].error, 1);
  EXPECT_EQ(engine->Counters()[5].steps[1].good, 1);  // ran, counted, not answered
  // Each reader got the input: copied for the first, moved to the last.
  ASSERT_EQ(inner.submitted.size(), 2u);
  EXPECT_THAT(inner.submitted[1].second, ElementsAre(2));
}

TEST(GraphRoutingTest, AHeadStepPutsItsHeadBeforeTheInput) {
  Scripted inner;
  GraphSpec member{"shoes", kSecond, 1, 2, {{3}}, {1.0}};
  member.steps[0].head = 2;
  std::unique_ptr<GraphEngine> engine = *GraphEngine::Create(&inner, Scripted::Spec(), {member});
  EXPECT_THAT(Call(*engine, 5, {7}).output, ElementsAre(207, 0));
  EXPECT_THAT(inner.submitted[0].second, ElementsAre(2, 7));
}

TEST(GraphRoutingTest, MeasuredFanOutThatDriftsReSplitsTheObjective) {
  Scripted inner;
  ClusterSpec spec = Scripted::Spec();
  spec.models[1].profile = *LatencyProfile::Linear(Micros(50), Millis(20), 64);  // x batches well
  GraphSpec g = Routed();
  g.exit_from = -1;
  g.shares = MakeGraphShares(g, spec);
  std::unique_ptr<GraphEngine> engine =
      *GraphEngine::Create(&inner, spec, {g}, GraphOptions{.resplit_every = 10, .gamma_drift = 0.1});
  for (int i = 0; i < 10; ++i) Call(*engine, 5, {3});  // all to x: its γ is 1, not 0.5
  EXPECT_EQ(engine->resplits(0), 0);  // checked with the 11th
  Call(*engine, 5, {3});
  EXPECT_EQ(engine->resplits(0), 1);
  const GraphSpec now = engine->graphs()[0];
  EXPECT_DOUBLE_EQ(now.steps[1].gamma, 1.0);
  EXPECT_DOUBLE_EQ(now.steps[2].gamma, 0.5);  // never reached: nothing learnt
  for (int i = 0; i < 11; ++i) Call(*engine, 5, {3});  // no drift now
  EXPECT_EQ(engine->resplits(0), 1);
  EXPECT_EQ(engine->Counters()[5].good, 22);
}

TEST(GraphRoutingTest, SideBySideStepsMergeTheirOutputs) {
  Scripted inner;
  GraphSpec both{"both", kSecond, 1, 2, {{1}, {2}}, {1, 1}};  // x and y on the input, side by side
  both.outputs = {0, 1};
  both.merge = GraphSpec::Merge::kMean;
  GraphSpec summed = both;
  summed.name = "summed";
  summed.merge = GraphSpec::Merge::kSum;
  // The router, then x for class 0 only, and y always: merged over those that ran.
  GraphSpec some{"some", kSecond, 1, 2, {{0}, {1}, {2}}, {0.5, 0.5, 0.5}};
  some.steps[1].route_from = 0;
  some.steps[1].route_values = {0};
  some.steps[2].route_from = 0;
  some.steps[2].route_values = {0, 1, 2};
  some.outputs = {1, 2};
  some.merge = GraphSpec::Merge::kMean;
  std::unique_ptr<GraphEngine> engine = *GraphEngine::Create(&inner, Scripted::Spec(), {both, summed, some});
  EXPECT_THAT(Call(*engine, 5, {2}).output, ElementsAre(30, 0));  // (20 + 40) / 2
  EXPECT_THAT(Call(*engine, 6, {2}).output, ElementsAre(60, 0));
  EXPECT_THAT(Call(*engine, 7, {3}).output, ElementsAre(45, 0));  // class 0: (30 + 60) / 2
  EXPECT_THAT(Call(*engine, 7, {4}).output, ElementsAre(80, 0));  // class 1: y alone
  EXPECT_EQ(engine->Counters()[7].good, 2);
}

TEST(GraphEngineCreateTest, BadGraphsAreRefused) {
  ClusterSpec spec;
  spec.models = {{"a", *LatencyProfile::Linear(Micros(100), Millis(1), 8), kSecond}};
  ManualClock clock;
  testing::FakeEngine fake(spec, {{1, 1}}, &clock);
  EXPECT_THAT(GraphEngine::Create(&fake, spec, {{"g", kSecond, 1, 1, {{4, -1}}, {1.0}}}).status().message(),
              HasSubstr("step 0 runs unknown model 4"));
  EXPECT_THAT(GraphEngine::Create(&fake, spec, {{"g", kSecond, 1, 1, {{0, 0}}, {1.0}}}).status().message(),
              HasSubstr("reads no earlier step"));
  EXPECT_FALSE(GraphEngine::Create(&fake, spec, {{"g", kSecond, 1, 1, {{0, -1}}, {}}}).ok());
}

}  // namespace
}  // namespace tutti
