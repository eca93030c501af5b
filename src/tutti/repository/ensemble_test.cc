#include "tutti/repository/ensemble.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tutti/repository/model_repository.h"

namespace tutti {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

ModelVersion Model(const std::string& name, std::vector<TensorSpec> inputs, std::vector<TensorSpec> outputs,
                   int64_t version = 1) {
  ModelConfig c;
  c.name = name;
  c.platform = Platform::kEmulated;
  c.max_batch_size = 8;
  c.inputs = std::move(inputs);
  c.outputs = std::move(outputs);
  return {c, version, "/repo/" + name, ""};
}

const TensorSpec kImage{"image", DataType::kFp32, {1, 28, 28}};
const TensorSpec kLogits{"logits", DataType::kFp32, {10}};
const TensorSpec kGroup{"group", DataType::kFp32, {4}};

// coarse: image → group logits; shoes and tops: image (+ group) → logits.
class EnsembleTest : public ::testing::Test {
 protected:
  EnsembleTest() {
    versions_ = {Model("coarse", {kImage}, {{"logits", DataType::kFp32, {4}}}),
                 Model("shoes", {kImage, kGroup}, {kLogits}), Model("shoes", {kImage, kGroup}, {kLogits}, 2),
                 Model("tops", {kImage}, {kLogits})};
    graph_.name = "router";
    graph_.platform = Platform::kEnsemble;
    graph_.max_batch_size = 8;
    graph_.inputs = {kImage};
    graph_.outputs = {{"shoe_logits", DataType::kFp32, {10}}, {"top_logits", DataType::kFp32, {10}}};
    // Listed consumers first: the plan must order them after the producer.
    graph_.steps = {{"shoes", -1, {{"image", "image"}, {"group", "coarse_logits"}}, {{"logits", "shoe_logits"}}},
                    {"tops", 1, {{"image", "image"}}, {{"logits", "top_logits"}}},
                    {"coarse", -1, {{"image", "image"}}, {{"logits", "coarse_logits"}}}};
  }
  std::string Error() {
    absl::StatusOr<EnsemblePlan> plan = PlanEnsemble(graph_, versions_);
    EXPECT_FALSE(plan.ok());
    return plan.ok() ? "" : std::string(plan.status().message());
  }

  std::vector<ModelVersion> versions_;
  ModelConfig graph_;
};

TEST_F(EnsembleTest, OrdersProducersFirstAndPicksTheVersions) {
  absl::StatusOr<EnsemblePlan> plan = PlanEnsemble(graph_, versions_);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_THAT(plan->order, ElementsAre(1, 2, 0));
  EXPECT_EQ(plan->models[0]->version, 2);  // -1: the latest
  EXPECT_EQ(plan->models[1]->config.name, "tops");
}

TEST_F(EnsembleTest, UnknownModelsAndVersions) {
  graph_.steps[1].model_name = "bags";
  EXPECT_THAT(Error(), HasSubstr("ensemble_scheduling.step[1]: unknown model 'bags'"));
  graph_.steps[1] = {"shoes", 7, {{"image", "image"}}, {{"logits", "top_logits"}}};
  EXPECT_THAT(Error(), HasSubstr("model 'shoes' has no version 7"));
}

TEST_F(EnsembleTest, MissingAndUnknownMappings) {
  graph_.steps[0].input_map.erase("group");
  EXPECT_THAT(Error(), HasSubstr("step[0]: input 'group' of model 'shoes' is not mapped"));
  graph_.steps[0].input_map["group"] = "coarse_logits";
  graph_.steps[0].input_map["mask"] = "image";
  EXPECT_THAT(Error(), HasSubstr("model 'shoes' has no input 'mask' (it has: image, group)"));
  graph_.steps[0].input_map.erase("mask");
  graph_.steps[2].output_map = {{"probs", "coarse_logits"}};
  EXPECT_THAT(Error(), HasSubstr("model 'coarse' has no output 'probs' (it has: logits)"));
}

TEST_F(EnsembleTest, TensorsNeedExactlyOneProducer) {
  graph_.steps[2].output_map = {{"logits", "other"}};
  EXPECT_THAT(Error(), HasSubstr("tensor 'coarse_logits' comes from no step and is no input of the graph"));
  graph_.steps[2].output_map = {{"logits", "top_logits"}};
  EXPECT_THAT(Error(), HasSubstr("tensor 'top_logits' is produced twice"));
  graph_.steps[2].output_map = {{"logits", "image"}};
  EXPECT_THAT(Error(), HasSubstr("tensor 'image' is produced twice: by the graph's input"));
}

TEST_F(EnsembleTest, ShapeAndTypeMismatches) {
  versions_[0].config.outputs[0].shape = {5};
  EXPECT_THAT(Error(), HasSubstr("tensor 'coarse_logits' is FP32 [5] (from ensemble_scheduling.step[2]) but input "
                                 "'group' of model 'shoes' takes FP32 [4]"));
  versions_[0].config.outputs[0].shape = {4};
  graph_.outputs[1].datatype = DataType::kInt64;
  EXPECT_THAT(Error(), HasSubstr("graph output 'top_logits' is declared INT64 [10] but ensemble_scheduling.step[1] "
                                 "makes it FP32 [10]"));
  graph_.outputs[1] = {"nothing", DataType::kFp32, {10}};
  EXPECT_THAT(Error(), HasSubstr("graph output 'nothing' comes from no step"));
}

TEST_F(EnsembleTest, CyclesAndGraphsOfGraphs) {
  // coarse reads what shoes makes, shoes what coarse makes.
  versions_.push_back(Model("loop", {kLogits}, {{"logits", DataType::kFp32, {4}}}));
  graph_.steps[2] = {"loop", -1, {{"image", "shoe_logits"}}, {{"logits", "coarse_logits"}}};
  versions_.back().config.inputs[0].name = "image";
  EXPECT_THAT(Error(), HasSubstr("steps 0 (shoes), 2 (loop) form a cycle"));
  ModelVersion nested = Model("inner", {kImage}, {kLogits});
  nested.config.platform = Platform::kEnsemble;
  versions_.push_back(nested);
  graph_.steps[1].model_name = "inner";
  graph_.steps[1].model_version = -1;
  EXPECT_THAT(Error(), HasSubstr("'inner' is a graph itself"));
}

// A routed graph: tops for group 0, shoes2 for groups 1 and 2, both making
// "logits"; group 3 exits with the coarse output.
TEST_F(EnsembleTest, RoutedStepsMayMakeOneTensorWhenTheirClassesDiffer) {
  versions_.push_back(Model("shoes2", {kImage}, {kLogits}));
  versions_.push_back(Model("coarse10", {kImage}, {kLogits}));
  graph_.outputs = {kLogits};
  graph_.steps = {{"coarse", -1, {{"image", "image"}}, {{"logits", "coarse_logits"}}},
                  {"tops", -1, {{"image", "image"}}, {{"logits", "logits"}}, EnsembleRoute{"coarse_logits", {0}}},
                  {"shoes2", -1, {{"image", "image"}}, {{"logits", "logits"}}, EnsembleRoute{"coarse_logits", {1, 2}}}};
  absl::StatusOr<EnsemblePlan> plan = PlanEnsemble(graph_, versions_);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_THAT(plan->order, ElementsAre(0, 1, 2));
  // Overlapping classes: both could run.
  graph_.steps[2].route->argmax_in = {0, 1};
  EXPECT_THAT(Error(), HasSubstr("step[2]: tensor 'logits' is produced twice: by ensemble_scheduling.step[1] and by "
                                 "this step, and both can run"));
  graph_.steps[2].route->argmax_in = {4};
  EXPECT_THAT(Error(), HasSubstr("step[2].route: class 4 is out of range: tensor 'coarse_logits' has 4 values"));
  graph_.steps[1].route = EnsembleRoute{"image", {0}};
  graph_.steps[2].route = EnsembleRoute{"image", {1}};
  EXPECT_THAT(Error(), HasSubstr("step[1].route: routes on tensor 'image', which no step makes"));
  graph_.steps[1].route = EnsembleRoute{"coarse_logits", {0}};
  graph_.steps[2].route = EnsembleRoute{"coarse_logits", {1, 2}};
  // An early exit must be able to stand for the graph's output.
  graph_.early_exit = EnsembleRoute{"coarse_logits", {3}};
  EXPECT_THAT(Error(), HasSubstr("early_exit: tensor 'coarse_logits' (FP32 [4], from ensemble_scheduling.step[0]) "
                                 "cannot be the graph's one output"));
  graph_.steps[0] = {"coarse10", -1, {{"image", "image"}}, {{"logits", "coarse_logits"}}};
  EXPECT_TRUE(PlanEnsemble(graph_, versions_).ok());
}

TEST_F(EnsembleTest, UnderAMergeSeveralStepsMayMakeTheOutput) {
  versions_.push_back(Model("shoes2", {kImage}, {kLogits}));
  graph_.outputs = {kLogits};
  graph_.steps = {{"tops", -1, {{"image", "image"}}, {{"logits", "logits"}}},
                  {"shoes2", -1, {{"image", "image"}}, {{"logits", "logits"}}}};
  EXPECT_THAT(Error(), HasSubstr("tensor 'logits' is produced twice"));
  graph_.merge = "mean";
  absl::StatusOr<EnsemblePlan> plan = PlanEnsemble(graph_, versions_);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_THAT(plan->order, ElementsAre(0, 1));
}

}  // namespace
}  // namespace tutti
