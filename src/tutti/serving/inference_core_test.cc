#include "tutti/serving/inference_core.h"

#include <future>
#include <map>
#include <random>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tutti/core/manual_clock.h"
#include "tutti/core/real_clock.h"
#include "tutti/executors/emulated_executor.h"
#include "tutti/executors/torch_executor.h"
#include "tutti/serving/batch_stage.h"
#include "tutti/testing/torchscript_fixture.h"

namespace tutti {
namespace {

using ::testing::HasSubstr;

// One model, ℓ(b) = 1 ms · b + 5 ms, SLO 20 ms, on `gpus` emulated GPUs.
std::unique_ptr<InferenceCore> EmulatedCore(Clock* clock, int gpus, const std::string& policy,
                                            bool await_completion = false) {
  ClusterSpec spec;
  spec.models = {{"resnet", *LatencyProfile::Linear(Millis(1), Millis(5), 16), Millis(20)}};
  spec.gpus = gpus;
  std::vector<std::unique_ptr<Executor>> executors;
  for (int g = 0; g < gpus; ++g) {
    executors.push_back(std::make_unique<EmulatedExecutor>(
        clock, std::vector<EmulatedExecutor::Model>{{spec.models[0].profile, 10}}));
  }
  InferenceCore::Options options;
  options.policy = policy;
  options.scheduler.await_completion = await_completion;
  return *InferenceCore::Create(spec, {{4, 10}}, std::move(executors), options, clock);
}

struct Answers {
  std::vector<InferenceOutcome> got;
  InferenceCallback Fn() {
    return [this](InferenceOutcome o) { got.push_back(std::move(o)); };
  }
};

TEST(InferenceCoreTest, EveryAcceptedRequestIsAnsweredOnceWithMarkedEmulatedOutputs) {
  for (const std::string& policy : SchedulerPolicyNames()) {
    ManualClock clock;
    std::unique_ptr<InferenceCore> core = EmulatedCore(&clock, 4, policy);
    Answers answers;
    for (int i = 0; i < 200; ++i) {
      clock.AdvanceTo(Micros(500) * i);
      ASSERT_TRUE(core->Submit(0, std::vector<float>(4, 1.0f), 0, answers.Fn()).ok());
    }
    clock.AdvanceBy(Seconds(1));
    ASSERT_EQ(answers.got.size(), 200u) << policy;
    EXPECT_EQ(core->in_flight(), 0);
    const ModelCounters c = core->Counters()[0];
    EXPECT_EQ(c.good + c.late + c.dropped + c.error, 200) << policy;
    for (const InferenceOutcome& o : answers.got) {
      if (!o.status.ok()) {
        EXPECT_EQ(o.status.code(), absl::StatusCode::kDeadlineExceeded);
        continue;
      }
      EXPECT_TRUE(o.emulated);
      EXPECT_EQ(o.output, std::vector<float>(10, 0.0f));
      EXPECT_EQ(o.late, o.finished > o.deadline);
      EXPECT_GE(o.started, o.arrival);
    }
    if (policy == "deferred") {
      EXPECT_EQ(c.good, 200);  // 2 kr/s: the staggered bound on 4 GPUs is 2.75 kr/s
      EXPECT_GT(static_cast<double>(c.batched_requests) / c.batches, 1.5);
    }
  }
}

// More models than memory: 40 models of 100 MB on two emulated executors
// that hold 5 each. Loads reach the executors before the batches that
// need them (an executor fails a batch of a model it does not hold), and
// every request is answered.
TEST(InferenceCoreTest, ModelsBeyondMemoryAreLoadedOnTheirExecutorsFirst) {
  ManualClock clock;
  ClusterSpec spec;
  const LatencyProfile profile = *LatencyProfile::Linear(Micros(500), Millis(2), 16);
  for (int m = 0; m < 40; ++m) {
    spec.models.push_back({"m" + std::to_string(m), profile, Millis(50)});
    spec.models.back().weights_bytes = 100'000'000;
  }
  spec.gpus = 2;
  spec.memory.gpu_bytes = 500'000'000;
  spec.memory.bytes_per_s = 10e9;  // 10 ms a load
  std::vector<std::unique_ptr<Executor>> executors;
  for (int g = 0; g < 2; ++g) {
    executors.push_back(std::make_unique<EmulatedExecutor>(
        &clock, std::vector<EmulatedExecutor::Model>(40, {profile, 10}), /*memory_budget=*/true));
  }
  InferenceCore::Options options;
  options.policy = "loads";
  std::unique_ptr<InferenceCore> core =
      *InferenceCore::Create(spec, std::vector<ModelShape>(40, {4, 10}), std::move(executors), options, &clock);
  Answers answers;
  std::mt19937_64 rng(3);
  std::vector<double> weights;
  for (int m = 0; m < 40; ++m) weights.push_back(1.0 / (m + 1));
  std::discrete_distribution<int> pick(weights.begin(), weights.end());
  const int n = 2000;
  for (int i = 0; i < n; ++i) {
    clock.AdvanceTo(Millis(2) * i);
    ASSERT_TRUE(core->Submit(pick(rng), std::vector<float>(4, 1.0f), 0, answers.Fn()).ok());
  }
  clock.AdvanceBy(Seconds(1));
  ASSERT_EQ(answers.got.size(), static_cast<size_t>(n));
  EXPECT_EQ(core->in_flight(), 0);
  int good = 0;
  for (const InferenceOutcome& o : answers.got) {
    EXPECT_NE(o.status.code(), absl::StatusCode::kFailedPrecondition) << o.status;  // never a model not loaded
    good += o.status.ok() && !o.late;
  }
  EXPECT_GT(core->WeightsLoads(), 20);     // far beyond the first ten
  // Each executor holds at most 5 models now, and the counters say which.
  std::vector<int> held(2, 0);
  for (const ModelCounters& c : core->Counters()) {
    ASSERT_TRUE(c.loaded_on.has_value());
    for (int g : *c.loaded_on) ++held[g];
  }
  EXPECT_EQ(held, (std::vector<int>{5, 5}));  // the Zipf load keeps both full
  EXPECT_GT(good, n * 9 / 10);      // 500 r/s over 40 models, 10 at a time
}

TEST(InferenceCoreTest, ObjectiveThatCannotBeMetIsAnsweredWithAnExplicitError) {
  ManualClock clock;
  std::unique_ptr<InferenceCore> core = EmulatedCore(&clock, 1, "deferred");
  Answers answers;
  // ℓ(1) = 6 ms: a 2 ms objective can never be met.
  ASSERT_TRUE(core->Submit(0, std::vector<float>(4), Millis(2), answers.Fn()).ok());
  clock.AdvanceBy(Millis(100));
  ASSERT_EQ(answers.got.size(), 1u);
  EXPECT_EQ(answers.got[0].status.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(answers.got[0].status.message(), HasSubstr("cannot be met"));
  EXPECT_EQ(core->Counters()[0].dropped, 1);
}

TEST(InferenceCoreTest, BadRequestsAreRefusedWithoutACallback) {
  ManualClock clock;
  std::unique_ptr<InferenceCore> core = EmulatedCore(&clock, 1, "deferred");
  Answers answers;
  EXPECT_EQ(core->Submit(3, std::vector<float>(4), 0, answers.Fn()).code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(core->Submit(0, std::vector<float>(5), 0, answers.Fn()).message(),
              HasSubstr("takes 4 input values, got 5"));
  EXPECT_FALSE(core->Submit(0, std::vector<float>(4), -1, answers.Fn()).ok());
  core->StopAccepting();
  EXPECT_EQ(core->Submit(0, std::vector<float>(4), 0, answers.Fn()).code(), absl::StatusCode::kUnavailable);
  clock.AdvanceBy(Seconds(1));
  EXPECT_TRUE(answers.got.empty());
}

// 1,000 requests queued behind a busy GPU (which takes nothing more until
// its batch is done), each cancelled while queued: each is answered
// Cancelled and none runs, though the batches they were planned in are
// dispatched; a request whose timeout passes while queued is withdrawn the
// same way, and one that reaches a batch in time runs.
TEST(InferenceCoreTest, CancelledRequestsAreAnsweredAndNeverRun) {
  for (const std::string& policy : SchedulerPolicyNames()) {
    if (policy == "nexus") continue;  // plans its GPUs ahead, from rates: a burst is not what it plans for
    SCOPED_TRACE(policy);
    ManualClock clock;
    std::unique_ptr<InferenceCore> core = EmulatedCore(&clock, 1, policy, /*await_completion=*/true);
    Answers first, cancelled, timed_out, kept;
    const Duration objective = Seconds(30);  // nothing is dropped for its deadline
    for (int i = 0; i < 16; ++i) {  // a full batch: it takes the idle GPU at once, for ℓ(16) = 21 ms
      ASSERT_TRUE(core->Submit(0, std::vector<float>(4), objective, first.Fn()).ok());
    }
    std::vector<std::shared_ptr<CancelFlag>> flags;
    for (int i = 0; i < 1000; ++i) {  // each cancelled while queued
      flags.push_back(std::make_shared<CancelFlag>());
      ASSERT_TRUE(core->SubmitWith(0, {.cancel = flags.back()}, std::vector<float>(4), objective, cancelled.Fn()).ok());
      flags.back()->Cancel();
    }
    auto timeout = std::make_shared<CancelFlag>();
    timeout->ExpireAt(clock.Now() + Micros(100));
    ASSERT_TRUE(core->SubmitWith(0, {.cancel = timeout}, std::vector<float>(4), objective, timed_out.Fn()).ok());
    clock.AdvanceBy(Micros(200));
    auto late_timeout = std::make_shared<CancelFlag>();
    late_timeout->ExpireAt(clock.Now() + Seconds(40));  // past the 30 s deadline: it runs before
    ASSERT_TRUE(core->SubmitWith(0, {.cancel = late_timeout}, std::vector<float>(4), objective, kept.Fn()).ok());
    clock.AdvanceBy(Seconds(35));

    ASSERT_EQ(first.got.size(), 16u);
    for (const InferenceOutcome& o : first.got) EXPECT_TRUE(o.status.ok()) << o.status;
    ASSERT_EQ(cancelled.got.size(), 1000u);
    for (const InferenceOutcome& o : cancelled.got) {
      ASSERT_EQ(o.status.code(), absl::StatusCode::kCancelled) << o.status;
      EXPECT_THAT(o.status.message(), HasSubstr("was cancelled"));
    }
    ASSERT_EQ(timed_out.got.size(), 1u);
    EXPECT_EQ(timed_out.got[0].status.code(), absl::StatusCode::kCancelled);
    ASSERT_EQ(kept.got.size(), 1u);
    EXPECT_TRUE(kept.got[0].status.ok()) << kept.got[0].status;
    // The executor's batch log: the 17 requests that were not withdrawn, nothing else.
    int64_t ran = 0;
    for (const BatchTrace& b : core->RecentBatches(0)) ran += b.size;
    EXPECT_EQ(ran, 17);
    const ModelCounters c = core->Counters()[0];
    EXPECT_EQ(c.cancelled, 1001);
    EXPECT_EQ(c.good, 17);
    EXPECT_EQ(c.batched_requests, 17);
    EXPECT_EQ(core->in_flight(), 0);
  }
}

TEST(InferenceCoreTest, CreateChecksCounts) {
  ManualClock clock;
  ClusterSpec spec;
  spec.models = {{"m", *LatencyProfile::Linear(Millis(1), Millis(5), 16), Millis(20)}};
  spec.gpus = 2;
  EXPECT_THAT(InferenceCore::Create(spec, {{4, 10}}, {}, {}, &clock).status().message(),
              HasSubstr("0 executors for 2 GPUs"));
}

// The same core under the real clock with a real libtorch model: outputs
// equal the model's own, from many threads at once.
TEST(InferenceCoreTest, RealClockAndTorchExecutorServeExactModelOutputs) {
  RealClock clock;
  ModelRepository repo = *ModelRepository::Open(testing::FixtureRepo());
  std::vector<std::unique_ptr<TorchModel>> models;
  models.push_back(*TorchModel::Load(**repo.Find("linear")));
  std::vector<std::unique_ptr<Executor>> executors;
  executors.push_back(std::make_unique<TorchExecutor>(&clock, std::move(models)));
  ClusterSpec spec;
  spec.models = {{"linear", *LatencyProfile::Linear(Micros(10), Micros(200), 8), Seconds(5)}};
  spec.gpus = 1;
  std::unique_ptr<InferenceCore> core =
      *InferenceCore::Create(spec, {{784, 10}}, std::move(executors), {}, &clock);
  const std::vector<float> inputs = testing::FixtureInputs(2);
  const std::vector<float> expected = testing::FixtureExpectedOutputs();
  std::vector<std::promise<InferenceOutcome>> results(64);
  std::vector<std::thread> clients;
  for (int t = 0; t < 4; ++t) {
    clients.emplace_back([&, t] {
      for (int i = t; i < 64; i += 4) {
        std::vector<float> x(inputs.begin() + (i % 2) * 784, inputs.begin() + (i % 2 + 1) * 784);
        ASSERT_TRUE(core->Submit(0, std::move(x), 0, [&, i](InferenceOutcome o) {
          results[i].set_value(std::move(o));
        }).ok());
      }
    });
  }
  for (std::thread& c : clients) c.join();
  for (int i = 0; i < 64; ++i) {
    InferenceOutcome o = results[i].get_future().get();
    ASSERT_TRUE(o.status.ok()) << o.status;
    EXPECT_FALSE(o.emulated);
    for (int k = 0; k < 10; ++k) EXPECT_NEAR(o.output[k], expected[(i % 2) * 10 + k], 1e-5);
  }
  core->WaitIdle();
  EXPECT_EQ(core->Counters()[0].good + core->Counters()[0].late, 64);
}

// A batch stage that keeps the odd items of every batch of its model and
// answers them itself once an internal request of model 1, submitted per
// batch, comes back — with 7s, marked reconstructed, or with its error.
class KeepOddItems final : public BatchStage {
 public:
  void OnDispatch(const Dispatched& batch, StageHost& host) override {
    ++dispatched_;
    sizes_[batch.batch] = batch.size;
    EXPECT_EQ(batch.inputs.size(), static_cast<size_t>(batch.size) * 4);
    host.SubmitInternal(1, std::vector<float>(4), batch.earliest_deadline,
                        [this, h = &host, id = batch.batch](InferenceOutcome o) {
                          ++internal_answers_;
                          for (int p = 1; p < sizes_.at(id); p += 2) {
                            InferenceOutcome out;
                            out.status = o.status;
                            if (o.status.ok()) out.output.assign(10, 7.0f);
                            out.reconstructed = o.status.ok();
                            out.started = out.finished = h->Now();
                            h->Answer(id, p, std::move(out));
                          }
                        });
  }
  std::vector<bool> OnExecuted(uint64_t batch, int size, const ExecResult& result, StageHost&) override {
    EXPECT_EQ(sizes_.at(batch), size);
    EXPECT_TRUE(result.status.ok());
    std::vector<bool> deliver(size);
    for (int i = 0; i < size; ++i) deliver[i] = i % 2 == 0;
    return deliver;
  }
  std::vector<std::pair<std::string, int64_t>> EventCounts() const override { return {{"dispatched", dispatched_}}; }

  int64_t dispatched_ = 0;
  int64_t internal_answers_ = 0;
  std::map<uint64_t, int> sizes_;
};

// Model 0 on GPU 0 with `stage`, model 1 (the stage's internal requests) on GPU 1.
absl::StatusOr<std::unique_ptr<InferenceCore>> StagedCore(
    Clock* clock, std::vector<std::pair<ModelId, std::shared_ptr<BatchStage>>> stages) {
  ClusterSpec spec;
  const LatencyProfile profile = *LatencyProfile::Linear(Millis(1), Millis(5), 16);
  spec.models = {{"staged", profile, Millis(20)}, {"internal", profile, Millis(20)}};
  spec.sub_clusters = {{{0}, 1}, {{1}, 1}};
  std::vector<std::unique_ptr<Executor>> executors;
  for (int g = 0; g < 2; ++g) {
    executors.push_back(
        std::make_unique<EmulatedExecutor>(clock, std::vector<EmulatedExecutor::Model>{{profile, 10}}));
  }
  InferenceCore::Options options;
  options.stages = std::move(stages);
  return InferenceCore::Create(spec, {{4, 10}, {4, 10}}, std::move(executors), options, clock);
}

TEST(InferenceCoreTest, AStageAnswersTheItemsItKeepsAndItsInternalRequestsReachOnlyIt) {
  ManualClock clock;
  auto stage = std::make_shared<KeepOddItems>();
  std::unique_ptr<InferenceCore> core = *StagedCore(&clock, {{0, stage}});
  std::vector<int> answered(300, 0);
  std::vector<InferenceOutcome> got(300);
  for (int i = 0; i < 300; ++i) {
    clock.AdvanceTo(Micros(400) * i);
    ASSERT_TRUE(core->Submit(0, std::vector<float>(4, 1.0f), 0, [&, i](InferenceOutcome o) {
      ++answered[i];
      got[i] = std::move(o);
    }).ok());
  }
  clock.AdvanceBy(Seconds(1));
  EXPECT_EQ(core->in_flight(), 0);
  int rebuilt = 0, original = 0;
  for (int i = 0; i < 300; ++i) {
    ASSERT_EQ(answered[i], 1) << i;
    if (!got[i].status.ok()) continue;
    ASSERT_GT(got[i].batch_size, 0);
    EXPECT_LE(got[i].arrival, got[i].finished);
    if (got[i].reconstructed) {
      ++rebuilt;
      EXPECT_EQ(got[i].output, std::vector<float>(10, 7.0f));
    } else {
      ++original;
      EXPECT_EQ(got[i].output, std::vector<float>(10, 0.0f));
    }
  }
  const ModelCounters staged = core->Counters()[0], internal = core->Counters()[1];
  EXPECT_GT(rebuilt, 0);
  EXPECT_GT(original, 0);
  EXPECT_EQ(staged.reconstructed, rebuilt);
  EXPECT_EQ(staged.good + staged.late + staged.dropped + staged.error, 300);
  // One internal request per batch, answered to the stage alone.
  EXPECT_EQ(stage->dispatched_, staged.batches);
  EXPECT_EQ(stage->internal_answers_, staged.batches);
  EXPECT_EQ(internal.good + internal.late + internal.dropped + internal.error, staged.batches);
  EXPECT_EQ(staged.stage_events, (std::vector<std::pair<std::string, int64_t>>{{"dispatched", staged.batches}}));
  EXPECT_TRUE(internal.stage_events.empty());
}

TEST(InferenceCoreTest, CreateChecksTheStages) {
  ManualClock clock;
  auto stage = std::make_shared<KeepOddItems>();
  EXPECT_THAT(StagedCore(&clock, {{2, stage}}).status().message(), HasSubstr("unknown model 2"));
  EXPECT_THAT(StagedCore(&clock, {{0, stage}, {0, std::make_shared<KeepOddItems>()}}).status().message(),
              HasSubstr("two batch stages for model 'staged'"));
}

}  // namespace
}  // namespace tutti
