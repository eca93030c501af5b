#include "tutti/experiments/stateful_serving.h"

#include <random>

#include "gtest/gtest.h"
#include "tutti/models/trainer.h"
#include "tutti/repository/model_repository.h"
#include "tutti/testing/builtin_fixture.h"
#include "tutti/testing/temp_dir.h"

namespace tutti {
namespace {

// Stacks side by side with the plan fixed (StatefulServingSetup::
// planned_dispatch): each plans with that delay all along, and each answers
// every request of its clients exactly once.
TEST(StatefulServingTest, SideBySideStacksPlanWithTheFixedDelayAndAnswerEveryRequestOnce) {
  testing::TempDir dir;
  // gru_rows with seeded random weights: a real stateful model, untrained.
  ModelConfig c = BuiltinModelConfig("gru", "gru_rows", 8);
  c.profiles["cpu"] = *LatencyProfile::Linear(30 * kMicrosecond, 200 * kMicrosecond, 8);
  ASSERT_TRUE(testing::WriteSeededBuiltinModel(dir.path() + "/gru/1", c).ok());
  absl::StatusOr<ModelRepository> repo = ModelRepository::Open(dir.path());
  ASSERT_TRUE(repo.ok()) << repo.status();

  ImageSet images;
  images.rows = images.cols = 28;
  std::mt19937 rng(3);
  for (int i = 0; i < 8 * 28 * 28; ++i) images.pixels.push_back(static_cast<uint8_t>(rng() % 256));
  for (int i = 0; i < 8; ++i) images.labels.push_back(static_cast<uint8_t>(i));

  StatefulServingSetup setup;
  setup.model = "gru";
  setup.policy = "eager";
  setup.sequences = 4;
  setup.duration = 300 * kMillisecond;
  setup.think = 200 * kMicrosecond;
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

}  // namespace
}  // namespace tutti
