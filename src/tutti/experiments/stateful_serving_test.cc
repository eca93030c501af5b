#include "tutti/experiments/stateful_serving.h"

#include <optional>
#include <random>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "tutti/models/trainer.h"
#include "tutti/repository/model_repository.h"
#include "tutti/testing/builtin_fixture.h"
#include "tutti/testing/temp_dir.h"

namespace tutti {
namespace {

// gru_rows with seeded random weights (a real stateful model, untrained)
// in `dir`, and 8 random images.
absl::StatusOr<ModelRepository> SeededGruRepository(const testing::TempDir& dir, ImageSet* images) {
  ModelConfig c = BuiltinModelConfig("gru", "gru_rows", 8);
  c.profiles["cpu"] = *LatencyProfile::Linear(30 * kMicrosecond, 200 * kMicrosecond, 8);
  if (absl::Status s = testing::WriteSeededBuiltinModel(dir.path() + "/gru/1", c); !s.ok()) return s;
  images->rows = images->cols = 28;
  std::mt19937 rng(3);
  for (int i = 0; i < 8 * 28 * 28; ++i) images->pixels.push_back(static_cast<uint8_t>(rng() % 256));
  for (int i = 0; i < 8; ++i) images->labels.push_back(static_cast<uint8_t>(i));
  return ModelRepository::Open(dir.path());
}

// A short run of 4 clients on the seeded gru.
class StatefulServingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<ModelRepository> repo = SeededGruRepository(dir_, &images_);
    ASSERT_TRUE(repo.ok()) << repo.status();
    repo_.emplace(std::move(*repo));
    setup_.model = "gru";
    setup_.policy = "eager";
    setup_.sequences = 4;
    setup_.duration = 300 * kMillisecond;
    setup_.think = 200 * kMicrosecond;
  }
  absl::StatusOr<std::vector<StatefulServingResult>> Measure(std::vector<ReplicationMode> modes) {
    return MeasureStatefulServing(*repo_, setup_, modes, images_);
  }
  // Each stack sent something and answered every request exactly once.
  static void ExpectEachRequestAnsweredOnce(const std::vector<StatefulServingResult>& results) {
    for (const StatefulServingResult& s : results) {
      EXPECT_GT(s.requests, 0);
      EXPECT_EQ(s.answers, s.requests);
      EXPECT_EQ(s.duplicates, 0);
      EXPECT_EQ(s.errors, 0) << s.first_error;
    }
  }

  testing::TempDir dir_;
  ImageSet images_;
  std::optional<ModelRepository> repo_;
  StatefulServingSetup setup_;
};

// Stacks side by side with the plan fixed (StatefulServingSetup::
// planned_dispatch): each plans with that delay all along, and each answers
// every request of its clients exactly once.
TEST_F(StatefulServingTest, SideBySideStacksPlanWithTheFixedDelayAndAnswerEveryRequestOnce) {
  setup_.planned_dispatch = 250 * kMicrosecond;
  absl::StatusOr<std::vector<StatefulServingResult>> r = Measure({ReplicationMode::kNone, ReplicationMode::kNspb});
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->size(), 2u);
  ExpectEachRequestAnsweredOnce(*r);
  for (const StatefulServingResult& s : *r) {
    EXPECT_DOUBLE_EQ(s.planned_dispatch_us, 250);
    // Every batch's hand-off is counted, with the plan fixed too: at least
    // one, at most one per request.
    EXPECT_GT(s.dispatch.count(), 0);
    EXPECT_LE(s.dispatch.count(), s.requests);
  }
  EXPECT_EQ((*r)[0].replication.messages, 0);  // none
  EXPECT_GT((*r)[1].replication.messages, 0);  // nspb: logs and states to its backup
}

// Stacks taking turns (StatefulServingSetup::turn): a stack's clients start
// images only in its turns — one whose turn never comes within the run
// sends nothing — and with turns inside the run each stack serves, every
// request answered once.
TEST_F(StatefulServingTest, StacksTakingTurnsStartImagesOnlyInTheirTurns) {
  setup_.turn = 10 * kSecond;  // the first stack's turn outlasts the run
  absl::StatusOr<std::vector<StatefulServingResult>> r = Measure({ReplicationMode::kNone, ReplicationMode::kNone});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_GT((*r)[0].requests, 0);
  EXPECT_EQ((*r)[1].requests, 0);

  setup_.turn = 50 * kMillisecond;  // three turns each
  r = Measure({ReplicationMode::kNone, ReplicationMode::kNspb});
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectEachRequestAnsweredOnce(*r);
}

// StatefulServingSetup::accelerator: the stateful model's batches take at
// least that long (the seeded gru's own take well under 1 ms here), and
// every request is still answered once, its states replicated.
TEST_F(StatefulServingTest, AStatefulStepPacedAsAnAcceleratorAnswersNoSoonerThanItsPace) {
  setup_.accelerator = 4 * kMillisecond;
  absl::StatusOr<std::vector<StatefulServingResult>> r = Measure({ReplicationMode::kNspb});
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectEachRequestAnsweredOnce(*r);
  EXPECT_GE((*r)[0].p50_ms, 4.0);
  EXPECT_GT((*r)[0].replication.messages, 0);
}

}  // namespace
}  // namespace tutti
