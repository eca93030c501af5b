#include "tutti/models/trainer.h"

#include <torch/torch.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tutti/core/manual_clock.h"
#include "tutti/models/torch_model.h"
#include "tutti/models/architectures.h"
#include "tutti/models/evaluate.h"
#include "tutti/testing/temp_dir.h"

namespace tutti {
namespace {

using ::testing::HasSubstr;
using ::tutti::testing::TempDir;

class TrainerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    train_ = new ImageSet(LoadFashionMnist(kDefaultFashionMnistDir, Split::kTrain)->Slice(0, 3000));
    test_ = new ImageSet(LoadFashionMnist(kDefaultFashionMnistDir, Split::kTest)->Slice(0, 1000));
  }
  static void TearDownTestSuite() {
    delete train_;
    delete test_;
  }
  static ImageSet* train_;
  static ImageSet* test_;
};
ImageSet* TrainerTest::train_ = nullptr;
ImageSet* TrainerTest::test_ = nullptr;

TEST(ArchitecturesTest, EveryBuiltinMapsImagesToTenLogits) {
  for (absl::string_view arch : kBuiltinArchitectures) {
    absl::StatusOr<std::shared_ptr<BuiltinNetImpl>> net = MakeBuiltinNet(std::string(arch));
    ASSERT_TRUE(net.ok()) << arch;
    (*net)->eval();
    torch::Tensor y = (*net)->forward(torch::rand({3, 1, 28, 28}));
    EXPECT_EQ(y.sizes(), (std::vector<int64_t>{3, 10})) << arch;
  }
  EXPECT_EQ(CountParameters(**MakeBuiltinNet("mlp")), 784 * 200 + 200 + 200 * 100 + 100 + 100 * 10 + 10);
  EXPECT_EQ(CountParameters(**MakeBuiltinNet("lenet5")), 61706);
  EXPECT_THAT(MakeBuiltinNet("vgg").status().message(), HasSubstr("unknown architecture 'vgg'"));
}

TEST_F(TrainerTest, ShortMlpRunLearnsAndTheSavedModelServesTheSameAccuracy) {
  TempDir dir;
  ManualClock clock;
  TrainOptions options{.architecture = "mlp", .epochs = 3, .batch_size = 32, .seed = 7};
  int reports = 0, epoch_ends = 0;
  const std::string weights = dir.path() + "/mlp/1/model.pt";
  absl::StatusOr<TrainResult> result =
      TrainBuiltinModel(options, *train_, *test_, weights, clock, [&](const TrainProgress& p) {
        ++reports;
        if (p.epoch_end) {
          ++epoch_ends;
          EXPECT_GE(p.eval_accuracy, 0.0);
        }
        EXPECT_LE(p.step, p.steps_per_epoch);
      });
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(epoch_ends, 3);
  EXPECT_GT(reports, 3);
  ASSERT_EQ(result->epoch_loss.size(), 3u);
  EXPECT_LT(result->epoch_loss[2], result->epoch_loss[0]);  // the loss falls
  EXPECT_GT(result->eval_accuracy, 0.70);                   // chance is 0.10

  // The written artifact, loaded the way the executor serves it.
  ASSERT_TRUE(WriteModelConfig(dir.path() + "/mlp/1", BuiltinModelConfig("mlp", "mlp", 64)).ok());
  absl::StatusOr<ModelVersion> v = LoadModelVersion(dir.path() + "/mlp/1", "mlp", 1);
  ASSERT_TRUE(v.ok()) << v.status();
  std::unique_ptr<TorchModel> model = *TorchModel::Load(*v);
  absl::StatusOr<double> served = EvaluateAccuracy(*model, *test_, 64);
  ASSERT_TRUE(served.ok()) << served.status();
  EXPECT_DOUBLE_EQ(*served, result->eval_accuracy);
}

TEST_F(TrainerTest, SameSeedSameModel) {
  TempDir dir;
  ManualClock clock;
  TrainOptions options{.architecture = "mlp", .epochs = 1, .seed = 3};
  ImageSet small = train_->Slice(0, 500);
  auto a = TrainBuiltinModel(options, small, *test_, dir.path() + "/a.pt", clock, nullptr);
  auto b = TrainBuiltinModel(options, small, *test_, dir.path() + "/b.pt", clock, nullptr);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->epoch_loss, b->epoch_loss);
  EXPECT_EQ(a->eval_accuracy, b->eval_accuracy);
}

TEST_F(TrainerTest, BadOptionsAreRejected) {
  TempDir dir;
  ManualClock clock;
  const std::string w = dir.path() + "/w.pt";
  EXPECT_THAT(TrainBuiltinModel({.architecture = "vgg"}, *train_, *test_, w, clock, nullptr)
                  .status().message(),
              HasSubstr("unknown architecture"));
  EXPECT_THAT(TrainBuiltinModel({.architecture = "mlp", .batch_size = 0}, *train_, *test_, w,
                                clock, nullptr).status().message(),
              HasSubstr("bad training options"));
  EXPECT_THAT(TrainBuiltinModel({.architecture = "mlp"}, ImageSet{}, *test_, w, clock, nullptr)
                  .status().message(),
              HasSubstr("must not be empty"));
}

TEST(EvaluateTest, ArgmaxRows) {
  EXPECT_EQ(ArgmaxRows({0, 3, 1, 9, 2, 2}, 3), (std::vector<int>{1, 0}));
}

}  // namespace
}  // namespace tutti
