#include "tutti/models/torch_model.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tutti/testing/torchscript_fixture.h"
#include "tutti/testing/temp_dir.h"

namespace tutti {
namespace {

using ::testing::HasSubstr;
using ::tutti::testing::FixtureInputs;
using ::tutti::testing::FixtureRepo;
using ::tutti::testing::TempDir;

// A copy of the fixture model in a temp repository, with its config edited.
ModelVersion CopyOfFixture(const TempDir& dir, const std::string& config_suffix) {
  const std::string src = FixtureRepo() + "/linear/1";
  const std::string dst = dir.path() + "/linear/1";
  std::filesystem::create_directories(dst);
  std::filesystem::copy_file(src + "/model.pt", dst + "/model.pt");
  std::ifstream in(src + "/config.yaml");
  std::stringstream text;
  text << in.rdbuf() << config_suffix;
  dir.WriteFile("linear/1/config.yaml", text.str());
  return *LoadModelVersion(dst, "linear", 1);
}

TEST(TorchModelTest, TorchScriptFromPyTorchComputesWhatPyTorchComputed) {
  absl::StatusOr<ModelRepository> repo = ModelRepository::Open(FixtureRepo());
  ASSERT_TRUE(repo.ok()) << repo.status();
  absl::StatusOr<std::unique_ptr<TorchModel>> model = TorchModel::Load(**repo->Find("linear"));
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ((*model)->parameter_count(), 784 * 10 + 10);
  std::vector<float> out;
  ASSERT_TRUE((*model)->Run(FixtureInputs(2), 2, &out).ok());
  std::vector<float> expected = testing::FixtureExpectedOutputs();
  ASSERT_EQ(expected.size(), 20u);
  ASSERT_EQ(out.size(), 20u);
  for (size_t i = 0; i < out.size(); ++i) EXPECT_NEAR(out[i], expected[i], 1e-5) << i;
}

TEST(TorchModelTest, OnnxExportOfTheFixtureComputesWhatPyTorchComputed) {
  absl::StatusOr<ModelRepository> repo = ModelRepository::Open(testing::OnnxFixtureRepo());
  ASSERT_TRUE(repo.ok()) << repo.status();
  absl::StatusOr<std::unique_ptr<TorchModel>> model = TorchModel::Load(**repo->Find("linear"));
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ((*model)->parameter_count(), 784 * 10 + 10);
  std::vector<float> out, single;
  ASSERT_TRUE((*model)->Run(FixtureInputs(2), 2, &out).ok());
  const std::vector<float> expected = testing::FixtureExpectedOutputs();
  ASSERT_EQ(out.size(), expected.size());
  for (size_t i = 0; i < out.size(); ++i) EXPECT_NEAR(out[i], expected[i], 1e-5) << i;
  ASSERT_TRUE((*model)->Run(absl::MakeConstSpan(FixtureInputs(2)).subspan(784), 1, &single).ok());
  for (int k = 0; k < 10; ++k) EXPECT_NEAR(single[k], out[10 + k], 1e-5);
}

// The config's tensors are the graph's, by name.
TEST(TorchModelTest, AnOnnxGraphWhoseNamesDifferFromTheConfigIsRefused) {
  TempDir dir;
  const std::string v = dir.path() + "/linear/1";
  std::filesystem::create_directories(v);
  std::filesystem::copy_file(testing::OnnxFixtureRepo() + "/linear/1/model.onnx", v + "/model.onnx");
  dir.WriteFile("linear/1/config.yaml",
                "name: linear\nplatform: onnx\nmax_batch_size: 8\n"
                "inputs: [{name: pixels, datatype: FP32, shape: [1, 28, 28]}]\n"
                "outputs: [{name: logits, datatype: FP32, shape: [10]}]\n");
  absl::StatusOr<ModelVersion> version = LoadModelVersion(v, "linear", 1);
  ASSERT_TRUE(version.ok()) << version.status();
  absl::StatusOr<std::unique_ptr<TorchModel>> model = TorchModel::Load(*version);
  ASSERT_FALSE(model.ok());
  EXPECT_THAT(model.status().message(), HasSubstr("the graph's inputs are 'image', the config's 'pixels'; name them alike"));
}

// The ONNX fixture's graph checks its input's shape [N, 1, 28, 28]:
// clients may send [N, 784] when the config reshapes it (Triton's reshape).
TEST(TorchModelTest, AReshapedInputReachesTheModelInItsShape) {
  TempDir dir;
  const std::string v = dir.path() + "/linear/1";
  std::filesystem::create_directories(v);
  std::filesystem::copy_file(testing::OnnxFixtureRepo() + "/linear/1/model.onnx", v + "/model.onnx");
  const std::string flat = "name: linear\nplatform: onnx\nmax_batch_size: 8\n"
                           "inputs: [{name: image, datatype: FP32, shape: [784]";
  const std::string outputs = "}]\noutputs: [{name: logits, datatype: FP32, shape: [10]}]\n";
  dir.WriteFile("linear/1/config.yaml", flat + outputs);
  EXPECT_FALSE(TorchModel::Load(*LoadModelVersion(v, "linear", 1)).ok());  // [N, 784] is not the graph's shape
  dir.WriteFile("linear/1/config.yaml", flat + ", reshape: {shape: [1, 28, 28]}" + outputs);
  absl::StatusOr<std::unique_ptr<TorchModel>> model = TorchModel::Load(*LoadModelVersion(v, "linear", 1));
  ASSERT_TRUE(model.ok()) << model.status();
  std::vector<float> out;
  ASSERT_TRUE((*model)->Run(FixtureInputs(2), 2, &out).ok());
  const std::vector<float> expected = testing::FixtureExpectedOutputs();
  ASSERT_EQ(out.size(), expected.size());
  for (size_t i = 0; i < out.size(); ++i) EXPECT_NEAR(out[i], expected[i], 1e-5) << i;
}

TEST(TorchModelTest, BatchedRunEqualsItemByItemRuns) {
  ModelRepository repo = *ModelRepository::Open(FixtureRepo());
  std::unique_ptr<TorchModel> model = *TorchModel::Load(**repo.Find("linear"));
  std::vector<float> in = FixtureInputs(5), batched, single;
  ASSERT_TRUE(model->Run(in, 5, &batched).ok());
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(model->Run(absl::MakeConstSpan(in.data() + i * 784, 784), 1, &single).ok());
    for (int k = 0; k < 10; ++k) EXPECT_NEAR(batched[i * 10 + k], single[k], 1e-5);
  }
}

TEST(TorchModelTest, RejectsWrongInputSize) {
  ModelRepository repo = *ModelRepository::Open(FixtureRepo());
  std::unique_ptr<TorchModel> model = *TorchModel::Load(**repo.Find("linear"));
  std::vector<float> out;
  EXPECT_THAT(model->Run(FixtureInputs(1), 2, &out).message(),
              HasSubstr("batch of 2 needs 1568 input values, got 784"));
}

TEST(TorchModelTest, ConfigThatDisagreesWithTheNetworkIsCaughtAtLoad) {
  TempDir dir;
  ModelVersion v = CopyOfFixture(dir, "");
  v.config.outputs[0].shape = {5};
  absl::StatusOr<std::unique_ptr<TorchModel>> model = TorchModel::Load(v);
  EXPECT_EQ(model.status().code(), absl::StatusCode::kInternal);
  EXPECT_THAT(model.status().message(), HasSubstr("returned shape [1, 10]"));
  v.config.outputs[0].shape = {10};
  v.config.inputs[0].shape = {1, 20, 20};
  EXPECT_THAT(TorchModel::Load(v).status().message(), HasSubstr("failed"));
}

// The ONNX fixture `variable` (ids INT64 [-1] and a BOOL mask in; `total`,
// the ids the mask keeps summed, and `echo`, the ids, out), loaded at
// bucket 4 and run at bucket 8 on the same network.
TEST(TorchModelTest, AnotherShapeBucketRunsOnTheSameNetwork) {
  absl::StatusOr<ModelRepository> repo = ModelRepository::Open(testing::OnnxFixtureRepo());
  ASSERT_TRUE(repo.ok()) << repo.status();
  ModelVersion at4 = **repo->Find("variable");
  const ModelConfig variable = at4.config;
  at4.config = AtBucket(variable, 4);
  absl::StatusOr<std::unique_ptr<TorchModel>> four = TorchModel::Load(at4);
  ASSERT_TRUE(four.ok()) << four.status();
  absl::StatusOr<std::unique_ptr<TorchModel>> eight = (*four)->AtOtherBucket(AtBucket(variable, 8));
  ASSERT_TRUE(eight.ok()) << eight.status();
  EXPECT_EQ((*eight)->config().inputs[0].shape, (std::vector<int64_t>{8}));
  std::vector<int64_t> ids = {1, 2, 3, 4, 5, 6, 7, 8};
  std::string mask = {1, 1, 1, 1, 1, 1, 1, 0};
  std::vector<float> in, out;
  PackRecords((*eight)->config().inputs, {std::string(reinterpret_cast<const char*>(ids.data()), 64), mask}, 1, &in);
  ASSERT_TRUE((*eight)->Run(in, 1, &out).ok());
  const std::vector<std::string> answer = UnpackRecords((*eight)->config().outputs, out, 1);
  int64_t total;
  std::memcpy(&total, answer[0].data(), 8);
  EXPECT_EQ(total, 28);
  EXPECT_EQ(answer[1], std::string(reinterpret_cast<const char*>(ids.data()), 64));
}

TEST(TorchModelTest, CorruptWeightsAreDataLoss) {
  TempDir dir;
  ModelVersion v = CopyOfFixture(dir, "");
  dir.WriteFile("linear/1/model.pt", "not a zip archive");
  absl::StatusOr<std::unique_ptr<TorchModel>> model = TorchModel::Load(v);
  EXPECT_EQ(model.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(model.status().message(), HasSubstr("cannot load as a torchscript model"));
  v.config.platform = Platform::kBuiltin;
  v.config.architecture = "mlp";
  EXPECT_THAT(TorchModel::Load(v).status().message(), HasSubstr("cannot load as a builtin model"));
}

TEST(TorchModelTest, BytesOutsideTorchScriptIsRefusedAndADatatypeTheNetworkCannotTakeFailsTheTrialRun) {
  TempDir dir;
  ModelVersion v = CopyOfFixture(dir, "");
  v.config.inputs[0].datatype = DataType::kBytes;
  v.config.platform = Platform::kOnnx;
  EXPECT_THAT(TorchModel::Load(v).status().message(),
              HasSubstr("tensor 'image' is BYTES, which only TorchScript models take (as List[str]), not "
                        "platform onnx"));
  v.config.platform = Platform::kTorchScript;
  v.config.inputs[0].datatype = DataType::kUint32;  // given as int64: the linear layer computes on floats
  const absl::Status s = TorchModel::Load(v).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(s.message(), HasSubstr("model 'linear' failed"));
}

}  // namespace
}  // namespace tutti
