#include "tutti/models/parity_trainer.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tutti/core/manual_clock.h"
#include "tutti/models/evaluate.h"
#include "tutti/testing/temp_dir.h"

namespace tutti {
namespace {

using ::testing::HasSubstr;
using ::tutti::testing::TempDir;

// One deployed MLP, trained briefly, shared by the tests.
class ParityTrainerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    train_ = new ImageSet(LoadFashionMnist(kDefaultFashionMnistDir, Split::kTrain)->Slice(0, 4000));
    test_ = new ImageSet(LoadFashionMnist(kDefaultFashionMnistDir, Split::kTest)->Slice(0, 1200));
    ManualClock clock;
    const std::string vdir = dir_->path() + "/mlp/1";
    ASSERT_TRUE(TrainBuiltinModel({.architecture = "mlp", .epochs = 2, .seed = 5}, *train_, *test_,
                                  vdir + "/model.pt", clock, nullptr).ok());
    ASSERT_TRUE(WriteModelConfig(vdir, BuiltinModelConfig("mlp", "mlp", 256)).ok());
    deployed_ = TorchModel::Load(*LoadModelVersion(vdir, "mlp", 1))->release();
  }
  static void TearDownTestSuite() {
    delete deployed_;
    delete train_;
    delete test_;
    delete dir_;
  }

  // Trains a parity model for the MLP, writes it as a repository version and
  // loads it back as the executors would.
  static std::unique_ptr<TorchModel> TrainParity(int k, ParityEncoder encoder, TrainResult* result) {
    ManualClock clock;
    const std::string name = absl::StrCat("mlp-parity-", k, ParityEncoderName(encoder));
    const std::string vdir = dir_->path() + "/" + name + "/1";
    int epoch_ends = 0;
    absl::StatusOr<TrainResult> r = TrainParityModel(
        {.k = k, .encoder = encoder, .epochs = 2, .seed = 9}, *deployed_, *train_, *test_, vdir + "/model.pt",
        clock, [&](const TrainProgress& p) { epoch_ends += p.epoch_end; });
    EXPECT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(epoch_ends, 2);
    if (!r.ok()) return nullptr;
    *result = *r;
    const ModelConfig config = ParityModelConfig(deployed_->config(), name, {"mlp", k, encoder});
    EXPECT_TRUE(WriteModelConfig(vdir, config).ok());
    return *TorchModel::Load(*LoadModelVersion(vdir, name, 1));
  }

  static TempDir* dir_;
  static ImageSet* train_;
  static ImageSet* test_;
  static TorchModel* deployed_;
};
TempDir* ParityTrainerTest::dir_ = nullptr;
ImageSet* ParityTrainerTest::train_ = nullptr;
ImageSet* ParityTrainerTest::test_ = nullptr;
TorchModel* ParityTrainerTest::deployed_ = nullptr;

TEST_F(ParityTrainerTest, SumParityModelRebuildsPredictionsFarAboveTheDefaultBound) {
  TrainResult trained;
  std::unique_ptr<TorchModel> parity = TrainParity(2, ParityEncoder::kSum, &trained);
  ASSERT_NE(parity, nullptr);
  EXPECT_LT(trained.epoch_loss[1], trained.epoch_loss[0]);
  EXPECT_EQ(parity->config().parity->deployed, "mlp");

  ParityCodec codec = *ParityCodec::Create(ParityEncoder::kSum, 2, {1, 28, 28});
  absl::StatusOr<ParityAccuracy> acc = EvaluateParity(*deployed_, *parity, codec, *test_);
  ASSERT_TRUE(acc.ok()) << acc.status();
  EXPECT_EQ(acc->groups, 600);
  EXPECT_EQ(acc->queries, 1200);
  // A_a is the deployed model's plain accuracy on the same images.
  EXPECT_DOUBLE_EQ(acc->available, *EvaluateAccuracy(*deployed_, *test_, 100));
  // The served artifact scores what training measured at its last epoch end.
  EXPECT_DOUBLE_EQ(acc->degraded, trained.eval_accuracy);
  // Default predictions would score 0.1 on ten classes.
  EXPECT_GT(acc->degraded, 0.4);
  EXPECT_LE(acc->degraded, acc->available + 0.05);
  EXPECT_DOUBLE_EQ(acc->Overall(0), acc->available);
  EXPECT_DOUBLE_EQ(acc->Overall(1), acc->degraded);
  EXPECT_NEAR(acc->Overall(0.1), 0.9 * acc->available + 0.1 * acc->degraded, 1e-12);
}

TEST_F(ParityTrainerTest, ConcatEncoderTrainsForKFour) {
  TrainResult trained;
  std::unique_ptr<TorchModel> parity = TrainParity(4, ParityEncoder::kConcat, &trained);
  ASSERT_NE(parity, nullptr);
  ParityCodec codec = *ParityCodec::Create(ParityEncoder::kConcat, 4, {1, 28, 28});
  absl::StatusOr<ParityAccuracy> acc = EvaluateParity(*deployed_, *parity, codec, *test_);
  ASSERT_TRUE(acc.ok()) << acc.status();
  EXPECT_EQ(acc->groups, 300);
  EXPECT_GT(acc->degraded, 0.2);
}

TEST_F(ParityTrainerTest, RejectsBadInput) {
  ManualClock clock;
  const std::string w = dir_->path() + "/bad.pt";
  EXPECT_THAT(TrainParityModel({.k = 5}, *deployed_, *train_, *test_, w, clock, nullptr).status().message(),
              HasSubstr("k must be in [2, 4]"));
  EXPECT_THAT(TrainParityModel({.k = 2, .batch_size = 0}, *deployed_, *train_, *test_, w, clock, nullptr)
                  .status().message(),
              HasSubstr("bad training options"));
  EXPECT_THAT(TrainParityModel({.k = 3}, *deployed_, train_->Slice(0, 2), *test_, w, clock, nullptr)
                  .status().message(),
              HasSubstr("at least k = 3"));
  ParityCodec codec = *ParityCodec::Create(ParityEncoder::kSum, 3, {1, 28, 28});
  EXPECT_THAT(EvaluateParity(*deployed_, *deployed_, codec, test_->Slice(0, 2)).status().message(),
              HasSubstr("at least k = 3"));
}

}  // namespace
}  // namespace tutti
