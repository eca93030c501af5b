#include "tutti/models/trainer.h"

#include <torch/torch.h>

#include "absl/strings/str_cat.h"
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
    torch::Tensor y = ClassifyImages(**net, std::string(arch), torch::rand({3, 1, 28, 28}));
    EXPECT_EQ(y.sizes(), (std::vector<int64_t>{3, 10})) << arch;
  }
  EXPECT_EQ(CountParameters(**MakeBuiltinNet("mlp")), 784 * 200 + 200 + 200 * 100 + 100 + 100 * 10 + 10);
  EXPECT_EQ(CountParameters(**MakeBuiltinNet("lenet5")), 61706);
  EXPECT_THAT(MakeBuiltinNet("vgg").status().message(), HasSubstr("unknown architecture 'vgg'"));
}

TEST(ArchitecturesTest, InjectedNondeterminismChangesTheStatesBitsOnly) {
  torch::manual_seed(3);
  std::shared_ptr<BuiltinNetImpl> net = *MakeBuiltinNet("gru_rows");
  net->eval();
  torch::NoGradGuard no_grad;
  const torch::Tensor x = torch::rand({32, kGruRowsPerStep * 28 + kGruHidden});
  EXPECT_TRUE(torch::equal(net->forward(x), net->forward(x)));  // deterministic by default
  SetInjectedNondeterminism(true);
  int differed = 0;  // rows whose bits differ between two runs
  for (int i = 0; i < 10; ++i) {
    const torch::Tensor a = net->forward(x), b = net->forward(x);
    for (int r = 0; r < 32; ++r) differed += !torch::equal(a[r], b[r]);
    EXPECT_LT((a - b).abs().max().item<float>(), 1e-4);
  }
  SetInjectedNondeterminism(false);
  EXPECT_GT(differed, 320 / 4) << differed << " of 320 rows";
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

// online_linear served as a compute-then-update model: each batch answers
// with the weights it is given and returns the weights after one step on
// its labels; from fresh weights its prequential accuracy (answers before
// their labels are learnt from) rises well above chance.
TEST_F(TrainerTest, OnlineLinearLearnsBatchByBatchFromItsState) {
  TempDir dir;
  torch::manual_seed(2);
  std::shared_ptr<torch::nn::Module> net = *MakeBuiltinNet("online_linear");
  ModelVersion v;
  v.config = BuiltinModelConfig("online", "online_linear", 50);
  v.dir = dir.path();
  v.weights_path = dir.path() + "/model.pt";
  torch::save(net, v.weights_path);
  ASSERT_EQ(v.config.ModelStateElements(), 7850);
  absl::StatusOr<std::unique_ptr<TorchModel>> model = TorchModel::Load(v);
  ASSERT_TRUE(model.ok()) << model.status();
  std::vector<float> state, next, out;
  int first = 0, last = 0;
  for (int b = 0; b < 60; ++b) {  // 3,000 training images, 50 per batch
    std::vector<float> pixels = train_->ToFloat(b * 50, 50), in;
    for (int i = 0; i < 50; ++i) {
      in.insert(in.end(), pixels.begin() + i * 784, pixels.begin() + (i + 1) * 784);
      in.push_back(train_->labels[b * 50 + i]);
    }
    ASSERT_TRUE((*model)->RunAndUpdate(in, 50, state, &out, &next).ok());
    ASSERT_EQ(next.size(), 7850u);
    EXPECT_NE(next, state);  // every labelled batch moves the weights
    state = next;
    const std::vector<int> pred = ArgmaxRows(out, 10);
    for (int i = 0; i < 50; ++i) {
      const bool right = pred[i] == train_->labels[b * 50 + i];
      if (b < 10) first += right;
      if (b >= 50) last += right;
    }
  }
  EXPECT_GT(last, 300);  // of the last 500: > 60% (chance 10%)
  EXPECT_GT(last, first);
  // Unlabelled items (-1) leave the weights as they are.
  std::vector<float> unlabelled(784 + 1, -1.0f);
  ASSERT_TRUE((*model)->RunAndUpdate(unlabelled, 1, state, &out, &next).ok());
  EXPECT_EQ(next, state);
  EXPECT_THAT((*model)->RunAndUpdate(unlabelled, 1, std::vector<float>(3), &out, &next).message(),
              HasSubstr("7850 state values"));
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

// Two specialists fine-tuned in their last layer from one LeNet-5 trunk
// share its first four stages (their hashes say so), and their prefix
// group computes, row by row, what each computes alone.
TEST_F(TrainerTest, FineTunedSpecialistsShareTheirTrunkAndTheirPrefixGroupComputesEach) {
  TempDir dir;
  ManualClock clock;
  const std::string base = dir.path() + "/base.pt";
  TrainOptions options{.architecture = "lenet5", .epochs = 1, .batch_size = 64, .seed = 3};
  absl::StatusOr<TrainResult> trunk = TrainBuiltinModel(options, *train_, *test_, base, clock, nullptr);
  ASSERT_TRUE(trunk.ok()) << trunk.status();
  ASSERT_EQ(trunk->stage_hashes.size(), 5u);
  options.init_weights = base;
  options.last_stage_only = true;
  std::vector<ModelVersion> members;
  for (const std::vector<int>& classes : {std::vector<int>{0, 2, 4, 6}, std::vector<int>{5, 7, 9}}) {
    const std::string name = absl::StrCat("s", members.size());
    const std::string weights = dir.path() + "/" + name + ".pt";
    absl::StatusOr<TrainResult> r =
        TrainBuiltinModel(options, train_->OfClasses(classes), test_->OfClasses(classes), weights, clock, nullptr);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(std::vector<std::string>(r->stage_hashes.begin(), r->stage_hashes.begin() + 4),
              std::vector<std::string>(trunk->stage_hashes.begin(), trunk->stage_hashes.begin() + 4));
    EXPECT_NE(r->stage_hashes[4], trunk->stage_hashes[4]);
    ModelConfig config = BuiltinModelConfig(name, "lenet5", 16);
    config.stage_hashes = r->stage_hashes;
    members.push_back({config, 1, dir.path(), weights});
  }
  ModelConfig group = members[0].config;
  group.name = "prefix[s0,s1]";
  group.inputs[0] = {"head_and_image", DataType::kFp32, {785}};
  absl::StatusOr<std::unique_ptr<TorchModel>> model =
      TorchModel::LoadPrefixGroup(group, {&members[0], &members[1]}, 4);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ((*model)->parameter_count(), 61706 + 84 * 10 + 10);  // the trunk once, two last layers
  const std::vector<int> heads = {0, 1, 1, 0, 1};
  const std::vector<float> images = test_->ToFloat(0, 5);
  std::vector<float> input, out, alone;
  for (size_t i = 0; i < heads.size(); ++i) {
    input.push_back(static_cast<float>(heads[i]));
    input.insert(input.end(), images.begin() + i * 784, images.begin() + (i + 1) * 784);
  }
  ASSERT_TRUE((*model)->Run(input, 5, &out).ok());
  for (size_t i = 0; i < heads.size(); ++i) {
    std::unique_ptr<TorchModel> member = *TorchModel::Load(members[heads[i]]);
    ASSERT_TRUE(member->Run(absl::MakeConstSpan(images.data() + i * 784, 784), 1, &alone).ok());
    for (int k = 0; k < 10; ++k) EXPECT_NEAR(out[i * 10 + k], alone[k], 1e-4) << "row " << i;
  }
  input[0] = 2;  // no such head
  EXPECT_THAT((*model)->Run(input, 5, &out).message(), HasSubstr("head 2 is not one of the 2 members'"));
  // Weights that differ from the hashes their config records; a trunk that differs.
  members[1].config.stage_hashes[0] = "0000000000000000";
  EXPECT_THAT(TorchModel::LoadPrefixGroup(group, {&members[0], &members[1]}, 4).status().message(),
              HasSubstr("differ from those its config records"));
  members[1].config.stage_hashes.clear();
  members[1].weights_path = base;  // the trunk's own last layer: shares 4 stages, so fine
  EXPECT_TRUE(TorchModel::LoadPrefixGroup(group, {&members[0], &members[1]}, 4).ok());
  ASSERT_TRUE(TrainBuiltinModel(TrainOptions{.architecture = "lenet5", .epochs = 1, .seed = 9}, train_->Slice(0, 200),
                                *test_, dir.path() + "/other.pt", clock, nullptr)
                  .ok());
  members[1].weights_path = dir.path() + "/other.pt";
  EXPECT_THAT(TorchModel::LoadPrefixGroup(group, {&members[0], &members[1]}, 4).status().message(),
              HasSubstr("its layer stage 0 differs from model 's0''s"));
}

TEST(EvaluateTest, ArgmaxRows) {
  EXPECT_EQ(ArgmaxRows({0, 3, 1, 9, 2, 2}, 3), (std::vector<int>{1, 0}));
}

}  // namespace
}  // namespace tutti

namespace tutti {
namespace {

// calibrated_lenet5: trained on FP32 images, served on their raw bytes with
// two outputs; its fitted temperature lowers the held-out NLL, and the
// served confidence is max softmax(logits / T).
TEST_F(TrainerTest, CalibratedLeNet5ServesRawPixelsWithLogitsAndACalibratedConfidence) {
  TempDir dir;
  ManualClock clock;
  const std::string weights = dir.path() + "/calibrated_lenet5/1/model.pt";
  TrainOptions options{.architecture = "calibrated_lenet5", .epochs = 2, .batch_size = 32, .seed = 7};
  ASSERT_TRUE(TrainBuiltinModel(options, train_->Slice(0, 2500), *test_, weights, clock, [](const TrainProgress&) {})
                  .ok());
  absl::StatusOr<Calibration> c = CalibrateBuiltinModel("calibrated_lenet5", weights, train_->Slice(2500, 500));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_NE(c->temperature, 1.0);
  EXPECT_LE(c->nll_after, c->nll_before);
  EXPECT_THAT(CalibrateBuiltinModel("lenet5", weights, *test_).status().message(),
              HasSubstr("has no confidence output"));

  const ModelConfig config = BuiltinModelConfig("calibrated_lenet5", "calibrated_lenet5", 16);
  absl::StatusOr<std::unique_ptr<TorchModel>> model =
      TorchModel::Load(ModelVersion{config, 1, dir.path() + "/calibrated_lenet5/1", weights});
  ASSERT_TRUE(model.ok()) << model.status();
  // Two images' bytes are one record each (784 bytes: 196 words); the
  // answer's record is 10 logits and the confidence.
  const std::string pixels(reinterpret_cast<const char*>(test_->image(0)), 2 * 784);
  std::vector<float> in, out;
  PackRecords(config.inputs, {pixels}, 2, &in);
  ASSERT_EQ(in.size(), 2u * 196);
  ASSERT_TRUE((*model)->Run(in, 2, &out).ok());
  ASSERT_EQ(out.size(), 2u * 11);
  // The same network on the FP32 images (pixels / 255), as training saw them.
  std::shared_ptr<BuiltinNetImpl> net = *MakeBuiltinNet("calibrated_lenet5");
  std::shared_ptr<torch::nn::Module> module = net;
  torch::load(module, weights);
  net->eval();
  torch::NoGradGuard no_grad;
  const std::vector<float> images = test_->ToFloat(0, 2);
  const torch::Tensor logits = net->forward(torch::from_blob(const_cast<float*>(images.data()), {2, 1, 28, 28}));
  const torch::Tensor confidence = torch::softmax(logits / c->temperature, 1).amax(1);
  for (int i = 0; i < 2; ++i) {
    for (int k = 0; k < 10; ++k) EXPECT_NEAR(out[i * 11 + k], logits[i][k].item<float>(), 1e-5);
    EXPECT_NEAR(out[i * 11 + 10], confidence[i].item<float>(), 1e-6);
  }
  // Offline accuracy through the executor: the pixels' bytes, the first output.
  absl::StatusOr<double> accuracy = EvaluateAccuracy(**model, *test_, 100);
  ASSERT_TRUE(accuracy.ok()) << accuracy.status();
  EXPECT_GT(*accuracy, 0.5);
}

}  // namespace
}  // namespace tutti
