#include "tutti/serving/request_table.h"

#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tutti {
namespace {

using ::testing::HasSubstr;

struct Mark {
  int value = 0;
};

class RequestTableTest : public ::testing::Test {
 protected:
  static ClusterSpec OneModel() {
    ClusterSpec spec;
    spec.models = {{"mlp", *LatencyProfile::Linear(Micros(100), Millis(1), 8), Millis(50)}};
    spec.gpus = 1;
    return spec;
  }
  // Adds a request whose answer lands in *out.
  uint64_t Add(InferenceOutcome* out, Time arrival = 0) {
    return table_.Add(0, {1, 2}, [out](InferenceOutcome o) { *out = std::move(o); }, arrival, arrival + Millis(50));
  }

  ClusterSpec spec_ = OneModel();
  std::vector<ModelShape> shapes_{{2, 3}};
  RequestTable<Mark> table_{&spec_, &shapes_};
};

TEST_F(RequestTableTest, AdmitsChecksThenRefusesAfterStopAccepting) {
  EXPECT_EQ(*table_.Admit(0, 2, 0, Millis(1)), Millis(51));  // the model's SLO
  EXPECT_EQ(*table_.Admit(0, 2, Millis(7), Millis(1)), Millis(8));
  EXPECT_EQ(table_.Admit(3, 2, 0, 0).status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(table_.Admit(0, 5, 0, 0).status().message(), HasSubstr("takes 2 input values, got 5"));
  table_.StopAccepting();
  EXPECT_EQ(table_.Admit(0, 2, 0, 0).status().code(), absl::StatusCode::kUnavailable);
}

TEST_F(RequestTableTest, CountsEachAnswerByItsOutcome) {
  InferenceOutcome a, b, c, d, e;
  const std::vector<uint64_t> ids = {Add(&a), Add(&b), Add(&c), Add(&d), Add(&e)};
  Answers answers;
  InferenceOutcome late;
  late.late = true;
  InferenceOutcome rebuilt;
  rebuilt.reconstructed = true;
  table_.Answer(ids[0], {}, &answers);
  table_.Answer(ids[1], late, &answers);
  table_.Answer(ids[2], rebuilt, &answers);
  table_.Answer(ids[3], RequestTable<Mark>::ErrorOutcome(*table_.Find(ids[3]), DroppedError(spec_, 0), Millis(2)),
                &answers);
  table_.Answer(ids[4], RequestTable<Mark>::ErrorOutcome(*table_.Find(ids[4]), absl::InternalError("gpu"), 0),
                &answers);
  const ModelCounters counters = table_.Counters({})[0];
  EXPECT_EQ(counters.good, 2);
  EXPECT_EQ(counters.late, 1);
  EXPECT_EQ(counters.reconstructed, 1);
  EXPECT_EQ(counters.dropped, 1);
  EXPECT_EQ(counters.error, 1);
  EXPECT_FALSE(table_.contains(ids[0]));
  // Answers wait for their owner to run them.
  EXPECT_TRUE(d.status.ok());
  EXPECT_EQ(RunAnswers(std::move(answers)), 5);
  EXPECT_EQ(d.status.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(d.deadline, Millis(50));
  EXPECT_EQ(d.finished, Millis(2));
}

TEST_F(RequestTableTest, InFlightUntilReleasedAndWaitIdleWaitsForIt) {
  InferenceOutcome a, b;
  Add(&a);
  const uint64_t second = Add(&b);
  EXPECT_EQ(table_.Select([](uint64_t, const RequestTable<Mark>::Entry&) { return true; }).size(), 2u);
  Answers answers;
  table_.Answer(second, {}, &answers);
  EXPECT_EQ(table_.in_flight(), 2);  // answered, not yet released
  std::mutex mu;
  std::thread releaser([&] {
    std::lock_guard<std::mutex> lock(mu);
    table_.Release(2);
  });
  std::unique_lock<std::mutex> lock(mu);
  table_.WaitIdle(lock);
  EXPECT_EQ(table_.in_flight(), 0);
  lock.unlock();
  releaser.join();
}

}  // namespace
}  // namespace tutti
