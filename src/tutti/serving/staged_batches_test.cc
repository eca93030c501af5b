#include "tutti/serving/staged_batches.h"

#include "gtest/gtest.h"
#include "tutti/core/manual_clock.h"

namespace tutti {
namespace {

// A stage that keeps the items it is told to keep and records what it saw.
class KeepingStage final : public BatchStage {
 public:
  void OnDispatch(const Dispatched& batch, StageHost&) override {
    seen.push_back(batch);
    inputs.assign(batch.inputs.begin(), batch.inputs.end());
  }
  std::vector<bool> OnExecuted(uint64_t, int size, const ExecResult&, StageHost&) override {
    std::vector<bool> deliver(size, true);
    for (int i : keep) deliver[i] = false;
    return deliver;
  }
  std::vector<std::pair<std::string, int64_t>> EventCounts() const override { return {}; }

  std::vector<Dispatched> seen;
  std::vector<float> inputs;
  std::vector<int> keep;
};

class StagedBatchesTest : public ::testing::Test {
 protected:
  struct NoExtra {};
  using Host = StagedBatches<NoExtra>;

  static ClusterSpec TwoModels() {
    ClusterSpec spec;
    spec.models = {{"mlp", *LatencyProfile::Linear(Micros(100), Millis(1), 8), Millis(50)},
                   {"plain", *LatencyProfile::Linear(Micros(100), Millis(1), 8), Millis(50)}};
    spec.gpus = 1;
    return spec;
  }
  StagedBatchesTest() {
    stages_[0] = stage_;
    Host::Hooks hooks;
    hooks.submit_internal = [this](ModelId model, std::vector<float>, Time, std::function<void(InferenceOutcome)>) {
      internal_.push_back(model);
    };
    hooks.schedule_after = [this](Duration delay, std::function<void()>) { timers_.push_back(delay); };
    host_ = std::make_unique<Host>(&table_, &stages_, &clock_, std::move(hooks));
  }
  uint64_t Add(Time deadline) {
    return table_.Add(0, {1, 2}, [this](InferenceOutcome o) { outcomes_.push_back(std::move(o)); }, 0, deadline);
  }
  InferenceOutcome Output(Time finished) {
    InferenceOutcome out;
    out.output = {9, 9, 9};
    out.reconstructed = true;
    out.finished = finished;
    return out;
  }
  // Answers `answers` and returns how many.
  int Run(Answers answers) { return static_cast<int>(RunAnswers(std::move(answers))); }

  ManualClock clock_;
  ClusterSpec spec_ = TwoModels();
  std::vector<ModelShape> shapes_{{2, 3}, {2, 3}};
  RequestTable<NoExtra> table_{&spec_, &shapes_};
  std::shared_ptr<KeepingStage> stage_ = std::make_shared<KeepingStage>();
  std::vector<std::shared_ptr<BatchStage>> stages_{2};
  std::unique_ptr<Host> host_;
  std::vector<InferenceOutcome> outcomes_;
  std::vector<ModelId> internal_;
  std::vector<Duration> timers_;
};

TEST_F(StagedBatchesTest, ShowsEachDispatchedBatchWithItsEarliestDeadline) {
  EXPECT_NE(host_->stage(0), nullptr);
  EXPECT_EQ(host_->stage(1), nullptr);
  const uint64_t a = Add(Millis(30)), b = Add(Millis(20));
  const std::vector<float> inputs = {1, 2, 3, 4};
  const uint64_t staged = host_->Dispatch(0, {a, b}, inputs);
  ASSERT_EQ(stage_->seen.size(), 1u);
  EXPECT_EQ(stage_->seen[0].batch, staged);
  EXPECT_EQ(stage_->seen[0].size, 2);
  EXPECT_EQ(stage_->seen[0].earliest_deadline, Millis(20));
  EXPECT_EQ(stage_->inputs, inputs);
  EXPECT_NE(host_->Dispatch(0, {Add(Millis(5))}, {{5, 6}}), staged);  // ids unique
  // The hooks are the engine's.
  host_->SubmitInternal(1, {}, 0, {});
  host_->ScheduleAfter(Millis(3), [] {});
  EXPECT_EQ(internal_, std::vector<ModelId>{1});
  EXPECT_EQ(timers_, std::vector<Duration>{Millis(3)});
}

TEST_F(StagedBatchesTest, AStageAnswerIsCompletedCountedOnceAndLeavesFlightWhenTheBatchIsBack) {
  clock_.AdvanceTo(Millis(1));
  const uint64_t a = Add(Millis(10)), b = Add(Millis(40));
  const uint64_t staged = host_->Dispatch(0, {a, b}, {{1, 2, 3, 4}});
  // Answered before the batch is back: late (finished past its deadline), one answer only.
  host_->Answer(staged, 0, Output(Millis(12)));
  host_->Answer(staged, 0, Output(Millis(13)));
  Answers answers;
  int64_t done = 0;
  host_->TakeAnswers(&answers, &done);
  EXPECT_EQ(Run(std::move(answers)), 1);
  EXPECT_EQ(done, 0);  // its batch still runs
  ASSERT_EQ(outcomes_.size(), 1u);
  EXPECT_EQ(outcomes_[0].deadline, Millis(10));
  EXPECT_EQ(outcomes_[0].batch_size, 2);
  EXPECT_TRUE(outcomes_[0].late);
  EXPECT_EQ(table_.counters(0).late, 1);
  EXPECT_EQ(table_.counters(0).reconstructed, 1);
  // Back: the item already answered leaves flight now; the stage keeps the other.
  stage_->keep = {1};
  EXPECT_EQ(host_->Executed(staged, {}), (std::vector<bool>{true, false}));
  host_->ForgetIfFinished(staged);
  ASSERT_NE(host_->Find(staged), nullptr);  // b still waits
  host_->Answer(staged, 1, Output(Millis(14)));
  answers.clear();
  done = 0;
  host_->TakeAnswers(&answers, &done);
  EXPECT_EQ(Run(std::move(answers)), 1);
  EXPECT_EQ(done, 2);
  EXPECT_FALSE(outcomes_[1].late);
  EXPECT_EQ(host_->Find(staged), nullptr);  // back and all answered: forgotten
  host_->Answer(staged, 1, Output(Millis(15)));  // a second answer to a forgotten batch is ignored
  host_->TakeAnswers(&answers, &done);
  EXPECT_TRUE(answers.empty());
}

TEST_F(StagedBatchesTest, ABatchIsForgottenOnceItsEngineAnsweredWhatItDelivers) {
  const uint64_t a = Add(Millis(10));
  const uint64_t staged = host_->Dispatch(0, {a}, {{1, 2}});
  EXPECT_EQ(host_->Executed(staged, {}), std::vector<bool>{true});
  host_->ForgetIfFinished(staged);
  EXPECT_NE(host_->Find(staged), nullptr);
  Answers answers;
  table_.Answer(a, {}, &answers);  // the engine answers it with its original
  host_->ForgetIfFinished(staged);
  EXPECT_EQ(host_->Find(staged), nullptr);
}

TEST_F(StagedBatchesTest, ABatchThatNeverCameBackIsAbandonedOnceNoItemWaits) {
  const uint64_t a = Add(Millis(10)), b = Add(Millis(10));
  const uint64_t staged = host_->Dispatch(0, {a, b}, {{1, 2, 3, 4}});
  Answers answers;
  table_.Answer(a, {}, &answers);  // e.g. by the engine's watchdog
  EXPECT_TRUE(host_->Abandoned().empty());
  table_.Answer(b, {}, &answers);
  EXPECT_EQ(host_->Abandoned(), std::vector<uint64_t>{staged});
  host_->Executed(staged, {});
  host_->ForgetIfFinished(staged);
  EXPECT_TRUE(host_->Abandoned().empty());
  EXPECT_EQ(host_->Find(staged), nullptr);
}

}  // namespace
}  // namespace tutti
