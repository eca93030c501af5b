// ParM coded serving in the InferenceCore, on a manual clock with a linear
// test model F(x) = Wx: with the sum encoder F is its own exact parity model,
// so every reconstruction must equal the original output exactly.
#include <map>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tutti/stages/parm_stage.h"
#include "tutti/core/manual_clock.h"
#include "tutti/serving/inference_core.h"

namespace tutti {
namespace {

constexpr int kIn = 4, kOut = 3;

std::vector<float> F(const std::vector<float>& x) {
  std::vector<float> y;
  for (size_t i = 0; i < x.size(); i += kIn) {
    for (int o = 0; o < kOut; ++o) {
      float v = 0;
      for (int j = 0; j < kIn; ++j) v += static_cast<float>(o - j) * x[i + j];
      y.push_back(v);
    }
  }
  return y;
}

// Runs F on batches, one at a time, each taking `latency` (or failing).
class LinearExecutor final : public Executor {
 public:
  LinearExecutor(Clock* clock, Duration latency, bool fails) : clock_(clock), latency_(latency), fails_(fails) {}
  void Run(ExecBatch batch, DoneFn done) override {
    ExecResult r;
    r.started = std::max({clock_->Now(), batch.start_at, busy_until_});
    r.finished = busy_until_ = r.started + latency_;
    if (fails_) {
      r.status = absl::InternalError("the GPU fell off the bus");
    } else {
      r.output = F(batch.input);
    }
    clock_->ScheduleAt(r.finished, [r = std::move(r), done = std::move(done)]() mutable { done(std::move(r)); });
  }
  std::string kind() const override { return "linear"; }

 private:
  Clock* const clock_;
  const Duration latency_;
  const bool fails_;
  Time busy_until_ = 0;
};

struct Setup {
  int k = 2;
  Duration slow = Millis(40);  // the last deployed instance's batch latency
  bool last_fails = false;
  Duration reconstruct_delay = 0;
  int requests = 120;
};

// The count of a stage event, from a model's counters.
int64_t Event(const ModelCounters& c, const std::string& name) {
  for (const auto& [event, n] : c.stage_events) {
    if (event == name) return n;
  }
  ADD_FAILURE() << "no stage event " << name;
  return -1;
}

struct ServeResult {
  std::vector<InferenceOutcome> outcomes;  // by request
  std::vector<int> answers;                // callbacks per request
  std::vector<std::vector<float>> inputs;
  ModelCounters deployed, parity;
};

// k deployed instances (the last one slow or failing) and one parity
// instance, eager scheduling of single requests arriving every 1/k ms, so
// that the scheduler (which plans with ℓ(1) = 1 ms) rotates over instances.
ServeResult Serve(const Setup& s) {
  ManualClock clock;
  ClusterSpec spec;
  const LatencyProfile one = *LatencyProfile::Linear(0, Millis(1), 1);
  spec.models = {{"linear", one, Millis(100)}, {"linear-parity", one, Millis(100)}};
  spec.sub_clusters = {{{0}, s.k}, {{1}, 1}};
  std::vector<std::unique_ptr<Executor>> executors;
  for (int g = 0; g < s.k; ++g) {
    const bool last = g == s.k - 1;
    executors.push_back(
        std::make_unique<LinearExecutor>(&clock, last ? s.slow : Millis(1), last && s.last_fails));
  }
  executors.push_back(std::make_unique<LinearExecutor>(&clock, Millis(1), false));
  InferenceCore::Options options;
  options.policy = "eager";
  const std::vector<ModelShape> shapes = {{kIn, kOut}, {kIn, kOut}};
  auto stages =
      MakeParmStages(spec, shapes, {{0, 1, *ParityCodec::Create(ParityEncoder::kSum, s.k, {kIn}), s.reconstruct_delay}});
  EXPECT_TRUE(stages.ok()) << stages.status();
  options.stages = *stages;
  absl::StatusOr<std::unique_ptr<InferenceCore>> core =
      InferenceCore::Create(spec, shapes, std::move(executors), options, &clock);
  EXPECT_TRUE(core.ok()) << core.status();
  ServeResult run;
  run.outcomes.resize(s.requests);
  run.answers.assign(s.requests, 0);
  for (int i = 0; i < s.requests; ++i) {
    clock.AdvanceTo(Micros(1000 / s.k) * i);
    std::vector<float> x(kIn);
    for (int j = 0; j < kIn; ++j) x[j] = static_cast<float>((i * 5 + j * 3) % 9) - 4;
    run.inputs.push_back(x);
    EXPECT_TRUE((*core)->Submit(0, x, 0, [&run, i](InferenceOutcome o) {
      ++run.answers[i];
      run.outcomes[i] = std::move(o);
    }).ok());
  }
  clock.AdvanceBy(Seconds(10));
  EXPECT_EQ((*core)->in_flight(), 0);
  run.deployed = (*core)->Counters()[0];
  run.parity = (*core)->Counters()[1];
  return run;
}

TEST(ParmStageTest, SlowInstanceIsMaskedByExactReconstructionsForEveryK) {
  for (int k = 2; k <= 4; ++k) {
    ServeResult run = Serve({.k = k});
    int rebuilt = 0;
    for (size_t i = 0; i < run.outcomes.size(); ++i) {
      ASSERT_EQ(run.answers[i], 1) << "k " << k << " request " << i;
      const InferenceOutcome& o = run.outcomes[i];
      ASSERT_TRUE(o.status.ok()) << o.status;
      EXPECT_EQ(o.output, F(run.inputs[i])) << "k " << k << " request " << i;  // exact, rebuilt or not
      rebuilt += o.reconstructed;
      // A reconstruction arrives long before the slow instance's 40 ms.
      if (o.reconstructed) {
        EXPECT_LT(o.finished - o.arrival, Millis(10));
      }
    }
    EXPECT_GT(rebuilt, 0) << "k " << k;
    EXPECT_EQ(run.deployed.reconstructed, rebuilt);
    EXPECT_EQ(run.deployed.good + run.deployed.late, 120);
    EXPECT_EQ(run.deployed.batches, 120);
    EXPECT_EQ(run.deployed.reconstructed, rebuilt);
    // Every slow original came back after its reconstruction and was discarded.
    EXPECT_EQ(Event(run.deployed, "discarded_original"), rebuilt);
    EXPECT_EQ(Event(run.deployed, "group"), run.deployed.batches / k);
    // Parity queries are internal: counted for the parity model, answered to nobody.
    EXPECT_EQ(run.parity.good + run.parity.late + run.parity.dropped, Event(run.deployed, "group"));
  }
}

TEST(ParmStageTest, OriginalsThatBeatTheReconstructionDelayWin) {
  // The slow instance takes 1.5 ms (its queue grows by at most 7.5 ms);
  // reconstructions wait 20 ms for the original.
  ServeResult run = Serve({.k = 2, .slow = Micros(1500), .reconstruct_delay = Millis(20), .requests = 30});
  for (size_t i = 0; i < run.outcomes.size(); ++i) {
    ASSERT_EQ(run.answers[i], 1);
    EXPECT_FALSE(run.outcomes[i].reconstructed);
  }
  EXPECT_EQ(run.deployed.reconstructed, 0);
  EXPECT_EQ(Event(run.deployed, "discarded_original"), 0);
  // Without the delay the same run answers some requests with reconstructions.
  ServeResult eager = Serve({.k = 2, .slow = Micros(1500), .requests = 30});
  EXPECT_GT(eager.deployed.reconstructed, 0);
}

TEST(ParmStageTest, FailedBatchesAreRebuiltInsteadOfFailing) {
  ServeResult run = Serve({.k = 3, .slow = Millis(1), .last_fails = true});
  int rebuilt = 0, failed = 0;
  for (size_t i = 0; i < run.outcomes.size(); ++i) {
    ASSERT_EQ(run.answers[i], 1);
    const InferenceOutcome& o = run.outcomes[i];
    if (!o.status.ok()) {
      EXPECT_EQ(o.status.message(), "the GPU fell off the bus");
      ++failed;
      continue;
    }
    EXPECT_EQ(o.output, F(run.inputs[i]));
    rebuilt += o.reconstructed;
  }
  EXPECT_GT(rebuilt, 0);
  EXPECT_EQ(run.deployed.error, failed);
  EXPECT_EQ(run.deployed.reconstructed, rebuilt);
  // Only a group with two failed batches, or the trailing group that never
  // filled, leaves a failure unrebuilt.
  EXPECT_LT(failed, rebuilt);
}

TEST(ParmStageTest, MakeParmStagesChecksTheCodingEntries) {
  ClusterSpec spec;
  const LatencyProfile one = *LatencyProfile::Linear(0, Millis(1), 1);
  spec.models = {{"a", one, Millis(100)}, {"b", one, Millis(100)}};
  spec.gpus = 1;
  auto make = [&](std::vector<ModelShape> shapes, std::vector<ParmCoding> coding) {
    return MakeParmStages(spec, shapes, coding).status();
  };
  const ParityCodec codec = *ParityCodec::Create(ParityEncoder::kSum, 2, {kIn});
  EXPECT_TRUE(make({{kIn, kOut}, {kIn, kOut}}, {{0, 1, codec}}).ok());
  EXPECT_THAT(make({{kIn, kOut}, {kIn, kOut}}, {{0, 0, codec}}).message(), ::testing::HasSubstr("bad model ids"));
  EXPECT_THAT(make({{kIn, kOut}, {kIn, kOut}}, {{0, 1, codec}, {1, 0, codec}}).message(),
              ::testing::HasSubstr("coded twice or is a parity model"));
  EXPECT_THAT(make({{kIn, kOut}, {kIn, kOut + 1}}, {{0, 1, codec}}).message(),
              ::testing::HasSubstr("must match the sizes"));
}

}  // namespace
}  // namespace tutti
