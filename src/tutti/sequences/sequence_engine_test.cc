#include "tutti/sequences/sequence_engine.h"

#include <mutex>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tutti/core/manual_clock.h"

namespace tutti {
namespace {

using ::testing::HasSubstr;

// Keeps what it is given; the test answers.
class RecordingEngine final : public InferenceEngine {
 public:
  struct Call {
    ModelId model;
    SequenceRef ref;
    std::vector<float> input;
    InferenceCallback done;
    int level = 0;
    std::shared_ptr<const CancelFlag> cancel;
  };
  absl::Status Submit(ModelId model, std::vector<float> input, Duration, InferenceCallback done) override {
    return SubmitWith(model, {}, std::move(input), 0, std::move(done));
  }
  absl::Status SubmitWith(ModelId model, const RequestContext& context, std::vector<float> input, Duration,
                          InferenceCallback done) override {
    if (refuse) return absl::UnavailableError("refused");
    calls.push_back({model, context.sequence, std::move(input), std::move(done), context.level, context.cancel});
    return absl::OkStatus();
  }
  // Answers call `i` with `status`.
  void Answer(size_t i, absl::Status status = absl::OkStatus()) {
    InferenceOutcome out;
    out.status = status;
    calls[i].done(std::move(out));
  }
  void StopAccepting() override {}
  void WaitIdle() override {}
  int64_t in_flight() const override { return 0; }
  std::vector<ModelCounters> Counters() const override { return {}; }
  std::vector<double> BusyFractions() const override { return {}; }
  Time Now() const override { return 0; }
  void OnAnswerWritten(const WrittenAnswer&) override {}
  DelayReport Delays() const override { return {}; }

  std::vector<Call> calls;
  bool refuse = false;
};

class SequenceEngineTest : public ::testing::Test {
 protected:
  SequenceEngineTest() {
    spec_.models.resize(2);
    spec_.models[0].name = "gru";
    spec_.models[1].name = "mlp";
    SequenceBatching b;
    b.max_sequence_idle_us = 1000;  // 1 ms
    b.state_shape = {4};
    engine_ = std::make_unique<SequenceEngine>(&inner_, spec_, std::vector<std::optional<SequenceBatching>>{b, {}},
                                               &clock_);
  }
  absl::Status Send(uint64_t id, bool start = false, bool end = false, std::vector<absl::Status>* answers = nullptr) {
    return engine_->SubmitWith(0, {.sequence = {id, start, end}}, {1}, 0, [answers](InferenceOutcome o) {
      if (answers != nullptr) answers->push_back(o.status);
    });
  }

  ManualClock clock_;
  ClusterSpec spec_;
  RecordingEngine inner_;
  std::unique_ptr<SequenceEngine> engine_;
};

// What else a request carries goes on with it: a stateless model's request
// keeps its priority level and cancel flag; a sequence's its level.
TEST_F(SequenceEngineTest, ARequestsLevelAndCancelFlagGoOnToTheInnerEngine) {
  const auto flag = std::make_shared<CancelFlag>();
  ASSERT_TRUE(engine_->SubmitWith(1, {.cancel = flag, .level = 2}, {1}, 0, [](InferenceOutcome) {}).ok());
  ASSERT_TRUE(engine_->SubmitWith(0, {.sequence = {7, true, false}, .level = 1}, {1}, 0, [](InferenceOutcome) {}).ok());
  ASSERT_EQ(inner_.calls.size(), 2u);
  EXPECT_EQ(inner_.calls[0].level, 2);
  EXPECT_EQ(inner_.calls[0].cancel, flag);
  EXPECT_EQ(inner_.calls[1].level, 1);
  EXPECT_EQ(inner_.calls[1].ref.id, 7u);
  EXPECT_EQ(inner_.calls[1].cancel, nullptr) << "a sequence's requests are never withdrawn";
  inner_.Answer(0);
  inner_.Answer(1);
}

TEST_F(SequenceEngineTest, ProtocolErrorsNameTheSequenceAndModel) {
  EXPECT_THAT(engine_->Submit(0, {1}, 0, [](InferenceOutcome) {}).message(),
              HasSubstr("model 'gru' is stateful: each request needs a sequence_id"));
  EXPECT_THAT(Send(7).message(), HasSubstr("sequence 7 of model 'gru' is not in progress: its first request must set "
                                           "sequence_start"));
  ASSERT_TRUE(Send(7, true).ok());
  EXPECT_THAT(Send(7, true).message(), HasSubstr("sequence 7 of model 'gru' is already in progress"));
  ASSERT_TRUE(Send(7, false, true).ok());  // waits behind the first
  EXPECT_THAT(Send(7).message(), HasSubstr("has ended"));
  inner_.Answer(0);
  ASSERT_EQ(inner_.calls.size(), 2u);
  inner_.Answer(1);
  EXPECT_EQ(engine_->live_sequences(), 0);  // ended: forgotten
  EXPECT_THAT(Send(7).message(), HasSubstr("is not in progress"));
  // Stateless models ignore sequences.
  EXPECT_TRUE(engine_->SubmitWith(1, {.sequence = {9, false, false}}, {1}, 0, [](InferenceOutcome) {}).ok());
  EXPECT_EQ(inner_.calls.back().model, 1);
}

TEST_F(SequenceEngineTest, ASequencePassesOneRequestAtATimeInOrderWhileOthersInterleave) {
  ASSERT_TRUE(Send(1, true).ok());
  ASSERT_TRUE(Send(1).ok());
  ASSERT_TRUE(Send(2, true).ok());
  ASSERT_TRUE(Send(1, false, true).ok());
  ASSERT_EQ(inner_.calls.size(), 2u);  // sequence 1's first, sequence 2's first
  EXPECT_TRUE(inner_.calls[0].ref.start);
  EXPECT_EQ(inner_.calls[1].ref.id, 2u);
  EXPECT_EQ(engine_->in_flight(), 2);  // waiting ones count
  inner_.Answer(0);
  ASSERT_EQ(inner_.calls.size(), 3u);
  EXPECT_EQ(inner_.calls[2].ref.id, 1u);
  EXPECT_FALSE(inner_.calls[2].ref.start);
  inner_.Answer(2);
  ASSERT_EQ(inner_.calls.size(), 4u);
  EXPECT_TRUE(inner_.calls[3].ref.end);
}

TEST_F(SequenceEngineTest, IdleSequencesExpireWithAClearErrorAndLeaveNothingBehind) {
  for (uint64_t id = 1; id <= 50; ++id) {
    ASSERT_TRUE(Send(id, true).ok());
    inner_.Answer(id - 1);
  }
  EXPECT_EQ(engine_->live_sequences(), 50);
  clock_.AdvanceBy(2 * kMillisecond);  // the sweep timer forgets them
  EXPECT_EQ(engine_->live_sequences(), 0);
  EXPECT_THAT(Send(3).message(), HasSubstr("sequence 3 of model 'gru' expired: it was idle for more than "
                                           "max_sequence_idle_microseconds (1000)"));
  EXPECT_TRUE(Send(3, true).ok());  // and may start again
}

TEST_F(SequenceEngineTest, AStartThatNeverRanIsCarriedByTheNextRequest) {
  std::vector<absl::Status> answers;
  ASSERT_TRUE(Send(4, true, false, &answers).ok());
  ASSERT_TRUE(Send(4, false, false, &answers).ok());
  inner_.Answer(0, absl::DeadlineExceededError("dropped"));
  ASSERT_EQ(inner_.calls.size(), 2u);
  EXPECT_TRUE(inner_.calls[1].ref.start);  // its state starts from zeros after all
  inner_.refuse = true;
  EXPECT_EQ(Send(5, true).code(), absl::StatusCode::kUnavailable);
  inner_.refuse = false;
  EXPECT_THAT(Send(5).message(), HasSubstr("not in progress"));  // the refused start left nothing
}

}  // namespace
}  // namespace tutti
