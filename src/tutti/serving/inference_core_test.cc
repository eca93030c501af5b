#include "tutti/serving/inference_core.h"

#include <future>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tutti/core/manual_clock.h"
#include "tutti/core/real_clock.h"
#include "tutti/executors/emulated_executor.h"
#include "tutti/executors/torch_executor.h"
#include "tutti/testing/torchscript_fixture.h"

namespace tutti {
namespace {

using ::testing::HasSubstr;

// One model, ℓ(b) = 1 ms · b + 5 ms, SLO 20 ms, on `gpus` emulated GPUs.
std::unique_ptr<InferenceCore> EmulatedCore(Clock* clock, int gpus, const std::string& policy) {
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
    EXPECT_EQ(c.success + c.late + c.dropped + c.error, 200) << policy;
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
      EXPECT_EQ(c.success, 200);  // 2 kr/s: the staggered bound on 4 GPUs is 2.75 kr/s
      EXPECT_GT(static_cast<double>(c.batched_requests) / c.batches, 1.5);
    }
  }
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
  EXPECT_EQ(core->Counters()[0].success + core->Counters()[0].late, 64);
}

}  // namespace
}  // namespace tutti
