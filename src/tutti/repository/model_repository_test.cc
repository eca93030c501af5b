#include "tutti/repository/model_repository.h"

#include <filesystem>
#include <string>

#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tutti/testing/temp_dir.h"

namespace tutti {
namespace {

using ::testing::HasSubstr;
using ::tutti::testing::TempDir;

std::string Config(const std::string& name) {
  return "name: " + name + R"(
platform: builtin
architecture: mlp
max_batch_size: 16
inputs: [{name: image, datatype: FP32, shape: [1, 28, 28]}]
outputs: [{name: logits, datatype: FP32, shape: [10]}]
)";
}

// Writes a complete, valid version directory.
void AddModel(const TempDir& dir, const std::string& name, int version) {
  const std::string v = name + "/" + std::to_string(version) + "/";
  dir.WriteFile(v + kConfigFileName, Config(name));
  dir.WriteFile(v + kWeightsFileName, "weights");
}

std::string OpenError(const TempDir& dir) {
  absl::StatusOr<ModelRepository> repo = ModelRepository::Open(dir.path());
  EXPECT_FALSE(repo.ok());
  return repo.ok() ? "" : std::string(repo.status().message());
}

TEST(ModelRepositoryTest, FindsModelsAndVersions) {
  TempDir dir;
  AddModel(dir, "mlp", 1);
  AddModel(dir, "mlp", 2);
  AddModel(dir, "lenet", 3);
  dir.WriteFile("README.md", "ignored");
  absl::StatusOr<ModelRepository> repo = ModelRepository::Open(dir.path());
  ASSERT_TRUE(repo.ok()) << repo.status();
  EXPECT_EQ(repo->ModelNames(), (std::vector<std::string>{"lenet", "mlp"}));
  EXPECT_EQ(repo->versions().size(), 3u);
  EXPECT_EQ((*repo->Find("mlp"))->version, 2);
  EXPECT_EQ((*repo->Find("mlp", 1))->version, 1);
  EXPECT_EQ((*repo->Find("mlp", 1))->weights_path, VersionDir(dir.path(), "mlp", 1) + "/model.pt");
}

TEST(ModelRepositoryTest, EmptyRepositoryIsValid) {
  TempDir dir;
  absl::StatusOr<ModelRepository> repo = ModelRepository::Open(dir.path());
  ASSERT_TRUE(repo.ok());
  EXPECT_TRUE(repo->versions().empty());
}

TEST(ModelRepositoryTest, UnknownModelOrVersion) {
  TempDir dir;
  AddModel(dir, "mlp", 1);
  ModelRepository repo = *ModelRepository::Open(dir.path());
  EXPECT_THAT(repo.Find("vgg").status().message(), HasSubstr("unknown model 'vgg'"));
  EXPECT_THAT(repo.Find("mlp", 7).status().message(),
              HasSubstr("model 'mlp' has no version 7 (available: 1)"));
}

TEST(ModelRepositoryErrorTest, MissingRoot) {
  absl::StatusOr<ModelRepository> repo = ModelRepository::Open("/nonexistent/tutti-repo");
  EXPECT_EQ(repo.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(repo.status().message(), HasSubstr("model repository not found"));
}

TEST(ModelRepositoryErrorTest, ModelWithoutVersions) {
  TempDir dir;
  dir.WriteFile("mlp/notes.txt", "x");
  EXPECT_THAT(OpenError(dir), HasSubstr("model 'mlp' has no version directories"));
}

TEST(ModelRepositoryErrorTest, VersionNotAnInteger) {
  TempDir dir;
  AddModel(dir, "mlp", 1);
  std::filesystem::create_directories(dir.path() + "/mlp/latest");
  EXPECT_THAT(OpenError(dir), HasSubstr("version directory 'latest' is not a positive integer"));
}

TEST(ModelRepositoryErrorTest, MissingConfigFile) {
  TempDir dir;
  dir.WriteFile("mlp/1/model.pt", "w");
  EXPECT_THAT(OpenError(dir), HasSubstr("file not found: " + dir.path() + "/mlp/1/config.yaml"));
}

TEST(ModelRepositoryErrorTest, MissingWeightsFile) {
  TempDir dir;
  dir.WriteFile("mlp/1/config.yaml", Config("mlp"));
  EXPECT_THAT(OpenError(dir), HasSubstr("mlp/1: weights file model.pt not found"));
}

TEST(ModelRepositoryTest, EmulatedModelsHaveNoWeights) {
  TempDir dir;
  dir.WriteFile("resnet50/1/config.yaml", R"(name: resnet50
platform: emulated
max_batch_size: 4
inputs: [{name: image, datatype: FP32, shape: [3, 224, 224]}]
outputs: [{name: logits, datatype: FP32, shape: [1000]}]
profiles: {a100: {batch: [1, 4], latency_us: [1000, 2500]}}
)");
  absl::StatusOr<ModelRepository> repo = ModelRepository::Open(dir.path());
  ASSERT_TRUE(repo.ok()) << repo.status();
  EXPECT_EQ((*repo->Find("resnet50"))->weights_path, "");
}

TEST(ModelRepositoryErrorTest, NameDoesNotMatchDirectory) {
  TempDir dir;
  dir.WriteFile("mlp/1/config.yaml", Config("lenet"));
  dir.WriteFile("mlp/1/model.pt", "w");
  EXPECT_THAT(OpenError(dir), HasSubstr("name 'lenet' does not match its directory 'mlp'"));
}

TEST(ModelRepositoryErrorTest, InvalidConfigIsPrefixedWithItsPath) {
  TempDir dir;
  dir.WriteFile("mlp/1/config.yaml", Config("mlp") + "colour: blue\n");
  dir.WriteFile("mlp/1/model.pt", "w");
  EXPECT_THAT(OpenError(dir), HasSubstr("mlp/1/config.yaml: unknown field 'colour'"));
}

TEST(ModelRepositoryErrorTest, ReportsEveryBadModelAtOnce) {
  TempDir dir;
  AddModel(dir, "good", 1);
  dir.WriteFile("bad1/1/config.yaml", Config("bad1"));
  dir.WriteFile("bad2/x/y", "");
  std::string error = OpenError(dir);
  EXPECT_THAT(error, HasSubstr("has 2 error(s)"));
  EXPECT_THAT(error, HasSubstr("bad1/1: weights file"));
  EXPECT_THAT(error, HasSubstr("version directory 'x'"));
}

TEST(ModelRepositoryErrorTest, ParityModelNeedsItsDeployedModelWithTheSameTensors) {
  TempDir dir;
  AddModel(dir, "mlp", 1);
  const std::string parity = "\nparity: {deployed: mlp, k: 2, encoder: sum}\n";
  dir.WriteFile("mlp-parity/1/config.yaml", Config("mlp-parity") + parity);
  dir.WriteFile("mlp-parity/1/model.pt", "w");
  EXPECT_TRUE(ModelRepository::Open(dir.path()).ok());

  dir.WriteFile("orphan/1/config.yaml", Config("orphan") + "\nparity: {deployed: gone, k: 2, encoder: sum}\n");
  dir.WriteFile("orphan/1/model.pt", "w");
  std::string wide = Config("wide") + parity;
  wide.replace(wide.find("[10]"), 4, "[12]");
  dir.WriteFile("wide/1/config.yaml", wide);
  dir.WriteFile("wide/1/model.pt", "w");
  const std::string error = OpenError(dir);
  EXPECT_THAT(error, HasSubstr("orphan/1/config.yaml: parity.deployed names 'gone', which is not in the repository"));
  EXPECT_THAT(error, HasSubstr("wide/1/config.yaml: a parity model must take and return the tensor shapes"));
}

TEST(ModelRepositoryTest, WriteThenLoadRoundTrips) {
  TempDir dir;
  ModelConfig c = *ParseModelConfig(Config("mlp"));
  c.accuracy = 0.88;
  const std::string vdir = VersionDir(dir.path(), "mlp", 1);
  ASSERT_TRUE(WriteModelConfig(vdir, c).ok());
  dir.WriteFile("mlp/1/model.pt", "w");
  absl::StatusOr<ModelVersion> v = LoadModelVersion(vdir, "mlp", 1);
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_DOUBLE_EQ(*v->config.accuracy, 0.88);
}

TEST(ModelRepositoryTest, WriteRefusesInvalidConfig) {
  TempDir dir;
  ModelConfig c = *ParseModelConfig(Config("mlp"));
  c.max_batch_size = 0;
  EXPECT_FALSE(WriteModelConfig(dir.path(), c).ok());
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/config.yaml"));
}

constexpr char kGraph[] = R"(name: twice
platform: ensemble
max_batch_size: 16
inputs: [{name: image, datatype: FP32, shape: [1, 28, 28]}]
outputs: [{name: scores, datatype: FP32, shape: [10]}]
ensemble_scheduling:
  step:
    - {model_name: mlp, model_version: -1, input_map: {image: image}, output_map: {logits: scores}}
)";

// A graph needs no weights; it is checked against the models beside it
// when the repository opens (`tutti models` reports what is wrong).
TEST(ModelRepositoryTest, GraphsAreCheckedAgainstTheirStepsModels) {
  TempDir dir;
  AddModel(dir, "mlp", 1);
  dir.WriteFile("twice/1/config.yaml", kGraph);
  absl::StatusOr<ModelRepository> repo = ModelRepository::Open(dir.path());
  ASSERT_TRUE(repo.ok()) << repo.status();
  EXPECT_EQ((*repo->Find("twice"))->config.platform, Platform::kEnsemble);
  EXPECT_EQ((*repo->Find("twice"))->weights_path, "");
  dir.WriteFile("twice/1/config.yaml", absl::StrReplaceAll(kGraph, {{"shape: [10]", "shape: [9]"}}));
  EXPECT_THAT(OpenError(dir), ::testing::HasSubstr("twice/1/config.yaml: outputs: graph output 'scores' is declared "
                                                   "FP32 [9] but ensemble_scheduling.step[0] makes it FP32 [10]"));
}


}  // namespace
}  // namespace tutti
