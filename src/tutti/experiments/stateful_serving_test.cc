#include "tutti/experiments/stateful_serving.h"

#include <random>

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

StatefulServingSetup ShortSetup() {
  StatefulServingSetup setup;
  setup.model = "gru";
  setup.policy = "eager";
  setup.sequences = 4;
  setup.duration = 300 * kMillisecond;
  setup.think = 200 * kMicrosecond;
  return setup;
}

// Stacks side by side with the plan fixed (StatefulServingSetup::
// planned_dispatch): each plans with that delay all along, and each answers
// every request of its clients exactly once.
TEST(StatefulServingTest, SideBySideStacksPlanWithTheFixedDelayAndAnswerEveryRequestOnce) {
  testing::TempDir dir;
  ImageSet images;
  absl::StatusOr<ModelRepository> repo = SeededGruRepository(dir, &images);
  ASSERT_TRUE(repo.ok()) << repo.status();
  StatefulServingSetup setup = ShortSetup();
  setup.planned_dispatch = 250 * kMicrosecond;
  absl::StatusOr<std::vector<StatefulServingResult>> r =
      MeasureStatefulServing(*repo, setup, {ReplicationMode::kNone, ReplicationMode::kNspb}, images);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->size(), 2u);
  for (const StatefulServingResult& s : *r) {
    EXPECT_GT(s.answers, 0);
    EXPECT_EQ(s.answers, s.requests);
    EXPECT_EQ(s.duplicates, 0);
    EXPECT_EQ(s.errors, 0) << s.first_error;
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
TEST(StatefulServingTest, StacksTakingTurnsStartImagesOnlyInTheirTurns) {
  testing::TempDir dir;
  ImageSet images;
  absl::StatusOr<ModelRepository> repo = SeededGruRepository(dir, &images);
  ASSERT_TRUE(repo.ok()) << repo.status();
  StatefulServingSetup setup = ShortSetup();
  setup.turn = 10 * kSecond;  // the first stack's turn outlasts the run
  absl::StatusOr<std::vector<StatefulServingResult>> r =
      MeasureStatefulServing(*repo, setup, {ReplicationMode::kNone, ReplicationMode::kNone}, images);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_GT((*r)[0].requests, 0);
  EXPECT_EQ((*r)[1].requests, 0);

  setup.turn = 50 * kMillisecond;  // three turns each
  r = MeasureStatefulServing(*repo, setup, {ReplicationMode::kNone, ReplicationMode::kNspb}, images);
  ASSERT_TRUE(r.ok()) << r.status();
  for (const StatefulServingResult& s : *r) {
    EXPECT_GT(s.requests, 0);
    EXPECT_EQ(s.answers, s.requests);
    EXPECT_EQ(s.duplicates, 0);
    EXPECT_EQ(s.errors, 0) << s.first_error;
  }
}

}  // namespace
}  // namespace tutti
