#include "tutti/repository/model_config.h"

#include <string>

#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tutti {
namespace {

using ::testing::HasSubstr;

constexpr char kValid[] = R"(
name: lenet5
platform: builtin
architecture: lenet5
task: fashion-mnist
max_batch_size: 64
inputs:
  - {name: image, datatype: FP32, shape: [1, 28, 28]}
outputs:
  - {name: logits, datatype: FP32, shape: [10]}
accuracy: 0.9
parameters: 61706
latency_objective_ms: 50
dynamic_batching: {max_queue_delay_microseconds: 500}
profiles:
  cpu: {batch: [1, 2, 4], latency_us: [100, 150, 260], alpha_us: 1, beta_us: 2}
load_ms: 12.5
)";

// kValid with `from` replaced by `to`; the test fails if `from` is absent.
std::string Edit(const std::string& from, const std::string& to) {
  std::string text = kValid;
  EXPECT_NE(text.find(from), std::string::npos) << from;
  return absl::StrReplaceAll(text, {{from, to}});
}

std::string ErrorOf(const std::string& yaml) {
  absl::StatusOr<ModelConfig> c = ParseModelConfig(yaml);
  EXPECT_FALSE(c.ok()) << yaml;
  if (c.ok()) return "";
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(c.status().message());
}

TEST(ModelConfigTest, ParsesEveryField) {
  absl::StatusOr<ModelConfig> c = ParseModelConfig(kValid);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->name, "lenet5");
  EXPECT_EQ(c->platform, Platform::kBuiltin);
  EXPECT_EQ(c->architecture, "lenet5");
  EXPECT_EQ(c->task, "fashion-mnist");
  EXPECT_EQ(c->max_batch_size, 64);
  ASSERT_EQ(c->inputs.size(), 1u);
  EXPECT_EQ(c->inputs[0].name, "image");
  EXPECT_EQ(c->inputs[0].datatype, DataType::kFp32);
  EXPECT_EQ(c->inputs[0].shape, (std::vector<int64_t>{1, 28, 28}));
  EXPECT_EQ(c->inputs[0].ElementCount(), 784);
  EXPECT_EQ(c->outputs[0].shape, (std::vector<int64_t>{10}));
  EXPECT_DOUBLE_EQ(*c->accuracy, 0.9);
  EXPECT_EQ(*c->parameters, 61706);
  EXPECT_DOUBLE_EQ(*c->latency_objective_ms, 50);
  EXPECT_EQ(*c->max_queue_delay_us, 500);
  EXPECT_DOUBLE_EQ(*c->load_ms, 12.5);
  const LatencyProfile& p = c->profiles.at("cpu");
  EXPECT_EQ(p.max_batch(), 4);
  EXPECT_EQ(p.Latency(3), Micros(205));
}

TEST(ModelConfigTest, RoundTripsThroughYaml) {
  ModelConfig c = *ParseModelConfig(kValid);
  absl::StatusOr<ModelConfig> again = ParseModelConfig(ModelConfigToYaml(c));
  ASSERT_TRUE(again.ok()) << again.status() << "\n" << ModelConfigToYaml(c);
  EXPECT_EQ(ModelConfigToYaml(*again), ModelConfigToYaml(c));
  EXPECT_EQ(again->profiles.at("cpu").points(), c.profiles.at("cpu").points());
  EXPECT_DOUBLE_EQ(*again->load_ms, 12.5);
  EXPECT_THAT(ErrorOf(Edit("load_ms: 12.5", "load_ms: -1")), HasSubstr("field 'load_ms'"));
}

TEST(ModelConfigTest, OptionalFieldsMayBeAbsent) {
  absl::StatusOr<ModelConfig> c = ParseModelConfig(R"(
name: tiny
platform: torchscript
max_batch_size: 8
inputs: [{name: x, datatype: FP32, shape: [4]}]
outputs: [{name: y, datatype: FP32, shape: [2]}]
)");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_FALSE(c->accuracy.has_value());
  EXPECT_TRUE(c->profiles.empty());
}

TEST(ModelConfigTest, ParityModelsNameTheirDeployedModelKAndEncoder) {
  absl::StatusOr<ModelConfig> c = ParseModelConfig(
      Edit("name: lenet5\n", "name: lenet5-parity\nparity: {deployed: lenet5, k: 3, encoder: concat}\n"));
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_TRUE(c->parity.has_value());
  EXPECT_EQ(*c->parity, (ParitySpec{"lenet5", 3, ParityEncoder::kConcat}));
  absl::StatusOr<ModelConfig> again = ParseModelConfig(ModelConfigToYaml(*c));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->parity, c->parity);
  EXPECT_FALSE(ParseModelConfig(kValid)->parity.has_value());
}

TEST(ModelConfigTest, EnsemblesListTheirStepsAndRoundTrip) {
  absl::StatusOr<ModelConfig> c = ParseModelConfig(R"(name: router
platform: ensemble
max_batch_size: 8
inputs: [{name: image, datatype: FP32, shape: [1, 28, 28]}]
outputs: [{name: scores, datatype: FP32, shape: [10]}]
ensemble_scheduling:
  step:
    - {model_name: coarse, input_map: {image: image}, output_map: {logits: group}}
    - {model_name: shoes, model_version: 2, input_map: {image: image, group: group}, output_map: {logits: scores}}
)");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->platform, Platform::kEnsemble);
  ASSERT_EQ(c->steps.size(), 2u);
  EXPECT_EQ(c->steps[0].model_version, -1);
  EXPECT_EQ(c->steps[1].model_version, 2);
  EXPECT_EQ(c->steps[1].input_map.at("group"), "group");
  absl::StatusOr<ModelConfig> again = ParseModelConfig(ModelConfigToYaml(*c));
  ASSERT_TRUE(again.ok()) << again.status() << "\n" << ModelConfigToYaml(*c);
  EXPECT_EQ(again->steps, c->steps);
  EXPECT_THAT(ErrorOf(Edit("max_batch_size: 64", "max_batch_size: 64\nensemble_scheduling: {step: []}")),
              HasSubstr("field 'ensemble_scheduling': only allowed for platform ensemble"));
  EXPECT_THAT(ErrorOf(absl::StrReplaceAll(ModelConfigToYaml(*c), {{"model_version: 2", "model_version: 0"}})),
              HasSubstr("ensemble_scheduling.step[1].model_version"));
}

TEST(ModelConfigTest, RoutesEarlyExitsAndStageHashesRoundTrip) {
  absl::StatusOr<ModelConfig> c = ParseModelConfig(R"(name: router
platform: ensemble
max_batch_size: 8
inputs: [{name: image, datatype: FP32, shape: [1, 28, 28]}]
outputs: [{name: logits, datatype: FP32, shape: [10]}]
ensemble_scheduling:
  step:
    - {model_name: coarse, input_map: {image: image}, output_map: {logits: coarse}}
    - {model_name: shoes, input_map: {image: image}, output_map: {logits: logits},
       route: {tensor: coarse, argmax_in: [5, 7, 9]}}
  early_exit: {tensor: coarse, argmax_in: [8]}
)");
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_TRUE(c->steps[1].route.has_value());
  EXPECT_EQ(*c->steps[1].route, (EnsembleRoute{"coarse", {5, 7, 9}}));
  EXPECT_EQ(*c->early_exit, (EnsembleRoute{"coarse", {8}}));
  absl::StatusOr<ModelConfig> again = ParseModelConfig(ModelConfigToYaml(*c));
  ASSERT_TRUE(again.ok()) << again.status() << "\n" << ModelConfigToYaml(*c);
  EXPECT_EQ(again->steps, c->steps);
  EXPECT_EQ(again->early_exit, c->early_exit);
  absl::StatusOr<ModelConfig> merged =
      ParseModelConfig(absl::StrReplaceAll(ModelConfigToYaml(*c), {{"early_exit:", "merge: mean\n  early_exit:"}}));
  ASSERT_TRUE(merged.ok()) << merged.status();
  EXPECT_EQ(merged->merge, "mean");
  EXPECT_EQ(ParseModelConfig(ModelConfigToYaml(*merged))->merge, "mean");
  EXPECT_THAT(ErrorOf(absl::StrReplaceAll(ModelConfigToYaml(*c), {{"early_exit:", "merge: vote\n  early_exit:"}})),
              HasSubstr("unknown merge 'vote' (expected mean or sum)"));
  EXPECT_THAT(ErrorOf(absl::StrReplaceAll(ModelConfigToYaml(*c), {{"[5, 7, 9]", "[-1]"}})),
              HasSubstr("class indices are not negative"));
  absl::StatusOr<ModelConfig> hashed = ParseModelConfig(Edit("max_batch_size: 64", "max_batch_size: 64\nstage_hashes: [a1, b2]"));
  ASSERT_TRUE(hashed.ok()) << hashed.status();
  EXPECT_THAT(hashed->stage_hashes, ::testing::ElementsAre("a1", "b2"));
  EXPECT_EQ(ParseModelConfig(ModelConfigToYaml(*hashed))->stage_hashes, hashed->stage_hashes);
  EXPECT_THAT(ErrorOf(absl::StrReplaceAll(ModelConfigToYaml(*c), {{"platform: ensemble", "platform: ensemble\nstage_hashes: [a]"}})),
              HasSubstr("stage_hashes"));
}

TEST(ModelConfigErrorTest, BadParitySpec) {
  EXPECT_THAT(ErrorOf(Edit("name: lenet5\n", "name: p\nparity: {deployed: lenet5, k: 5, encoder: sum}\n")),
              HasSubstr("field 'parity': parity k must be in [2, 4]"));
  EXPECT_THAT(ErrorOf(Edit("name: lenet5\n", "name: p\nparity: {deployed: lenet5, k: 2, encoder: xor}\n")),
              HasSubstr("field 'parity.encoder': unknown parity encoder 'xor'"));
  EXPECT_THAT(ErrorOf(Edit("name: lenet5\n", "name: p\nparity: {k: 2, encoder: sum}\n")),
              HasSubstr("missing required field 'parity.deployed'"));
  EXPECT_THAT(ErrorOf(Edit("name: lenet5\n", "name: lenet5\nparity: {deployed: lenet5, k: 2, encoder: sum}\n")),
              HasSubstr("cannot protect itself"));
  EXPECT_THAT(ErrorOf(Edit("name: lenet5\n", "name: p\nparity: {deployed: x, k: 2, encoder: sum, m: 1}\n")),
              HasSubstr("parity.m"));
}

TEST(ModelConfigErrorTest, YamlSyntaxErrorGivesLineAndColumn) {
  EXPECT_THAT(ErrorOf("name: a\ninputs: [1, 2\n"), HasSubstr("YAML syntax error at line"));
}

TEST(ModelConfigErrorTest, NotAMapping) {
  EXPECT_THAT(ErrorOf("- a\n- b\n"), HasSubstr("config must be a YAML mapping"));
}

TEST(ModelConfigErrorTest, MissingRequiredField) {
  EXPECT_THAT(ErrorOf(Edit("max_batch_size: 64\n", "")),
              HasSubstr("missing required field 'max_batch_size'"));
  EXPECT_THAT(ErrorOf(Edit("datatype: FP32, shape: [10]", "datatype: FP32")),
              HasSubstr("missing required field 'outputs[0].shape'"));
}

TEST(ModelConfigErrorTest, UnknownFieldIsATypo) {
  EXPECT_THAT(ErrorOf(Edit("max_batch_size: 64", "max_batch_size: 64\nmax_batch: 8")),
              HasSubstr("unknown field 'max_batch'"));
}

TEST(ModelConfigErrorTest, BadDynamicBatching) {
  EXPECT_THAT(ErrorOf(Edit("max_queue_delay_microseconds: 500", "max_queue_delay_microseconds: -1")),
              HasSubstr("dynamic_batching.max_queue_delay_microseconds"));
  EXPECT_THAT(ErrorOf(Edit("max_queue_delay_microseconds: 500", "preferred_batch_size: [4]")),
              HasSubstr("unknown field 'dynamic_batching.preferred_batch_size'"));
  EXPECT_THAT(ErrorOf(Edit("max_queue_delay_microseconds: 500", "priority_levels: 2, default_priority_level: 3")),
              HasSubstr("dynamic_batching.default_priority_level': must be from 1 to priority_levels (2), got 3"));
  EXPECT_THAT(ErrorOf(Edit("max_queue_delay_microseconds: 500", "priority_levels: 2")),
              HasSubstr("dynamic_batching.default_priority_level"));
  EXPECT_THAT(ErrorOf(Edit("max_queue_delay_microseconds: 500", "priority_levels: 17, default_priority_level: 1")),
              HasSubstr("dynamic_batching.priority_levels': must be from 0 to 16"));
  EXPECT_THAT(ErrorOf(Edit("max_queue_delay_microseconds: 500", "default_priority_level: 1")),
              HasSubstr("needs priority_levels"));
}

TEST(ModelConfigTest, PriorityLevelsAreTritonsAndRoundTrip) {
  absl::StatusOr<ModelConfig> c =
      ParseModelConfig(Edit("max_queue_delay_microseconds: 500", "priority_levels: 3, default_priority_level: 2"));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->priority_levels, 3);
  EXPECT_EQ(c->default_priority_level, 2);
  absl::StatusOr<ModelConfig> again = ParseModelConfig(ModelConfigToYaml(*c));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->priority_levels, 3);
  EXPECT_EQ(again->default_priority_level, 2);
}

TEST(ModelConfigTest, QueuePoliciesAreTritonsAndRoundTrip) {
  absl::StatusOr<ModelConfig> c = ParseModelConfig(Edit(
      "max_queue_delay_microseconds: 500",
      "priority_levels: 2, default_priority_level: 2, "
      "default_queue_policy: {default_timeout_microseconds: 5000, allow_timeout_override: true}, "
      "priority_queue_policy: {1: {max_queue_size: 8}, 2: {timeout_action: DELAY, max_queue_size: 64}}"));
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_TRUE(c->default_queue_policy.has_value());
  EXPECT_EQ(c->default_queue_policy->default_timeout_us, 5000);
  EXPECT_TRUE(c->default_queue_policy->allow_timeout_override);
  EXPECT_EQ(c->QueuePolicyOf(1)->max_queue_size, 8);
  EXPECT_EQ(c->QueuePolicyOf(1)->default_timeout_us, 0) << "a level's own policy replaces the default whole";
  EXPECT_EQ(c->QueuePolicyOf(2)->max_queue_size, 64);
  EXPECT_TRUE(c->QueuePolicyOf(2)->delay);
  EXPECT_FALSE(c->QueuePolicyOf(1)->delay);
  absl::StatusOr<ModelConfig> again = ParseModelConfig(ModelConfigToYaml(*c));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->default_queue_policy, c->default_queue_policy);
  EXPECT_EQ(again->priority_queue_policy, c->priority_queue_policy);
  // Without levels, the default policy is every request's.
  absl::StatusOr<ModelConfig> one = ParseModelConfig(
      Edit("max_queue_delay_microseconds: 500", "default_queue_policy: {max_queue_size: 4}"));
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_EQ(one->QueuePolicyOf(1)->max_queue_size, 4);
  EXPECT_EQ(ParseModelConfig(Edit("max_queue_delay_microseconds: 500", "priority_levels: 0"))->QueuePolicyOf(1),
            nullptr);
}

TEST(ModelConfigErrorTest, QueuePoliciesAreChecked) {
  const auto policy = [](const std::string& fields) {
    return ErrorOf(Edit("max_queue_delay_microseconds: 500", "priority_levels: 2, default_priority_level: 1, " + fields));
  };
  EXPECT_THAT(policy("default_queue_policy: {timeout_action: DROP}"),
              HasSubstr("default_queue_policy.timeout_action': expected REJECT or DELAY"));
  EXPECT_THAT(policy("priority_queue_policy: {3: {max_queue_size: 1}}"),
              HasSubstr("priority_queue_policy.3': no such priority level (the model has 2)"));
  EXPECT_THAT(policy("priority_queue_policy: {first: {max_queue_size: 1}}"),
              HasSubstr("a priority level must be an integer"));
  EXPECT_THAT(policy("default_queue_policy: {max_queue_size: -1}"), HasSubstr("must not be negative"));
  EXPECT_THAT(policy("default_queue_policy: {default_timeout_microseconds: -5}"), HasSubstr("must not be negative"));
  EXPECT_THAT(policy("default_queue_policy: {max_size: 5}"), HasSubstr("max_size"));
}

TEST(ModelConfigErrorTest, WrongType) {
  EXPECT_THAT(ErrorOf(Edit("max_batch_size: 64", "max_batch_size: lots")),
              HasSubstr("field 'max_batch_size': expected an integer, got 'lots'"));
}

TEST(ModelConfigErrorTest, UnknownPlatform) {
  EXPECT_THAT(ErrorOf(Edit("platform: builtin", "platform: tensorrt_plan")),
              HasSubstr("unknown platform 'tensorrt_plan' (expected builtin, torchscript, onnx, emulated or ensemble)"));
}

// Triton's name for an ONNX model is accepted beside Tutti's.
TEST(ModelConfigTest, OnnxruntimeOnnxIsPlatformOnnx) {
  const std::string base = Edit("platform: builtin\narchitecture: lenet5", "platform: onnxruntime_onnx");
  absl::StatusOr<ModelConfig> c = ParseModelConfig(base);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->platform, Platform::kOnnx);
  EXPECT_EQ(PlatformName(c->platform), "onnx");
}

TEST(ModelConfigTest, EmulatedPlatformNeedsAProfile) {
  const std::string emulated = Edit("platform: builtin\narchitecture: lenet5", "platform: emulated");
  absl::StatusOr<ModelConfig> c = ParseModelConfig(emulated);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->platform, Platform::kEmulated);
  EXPECT_EQ(ParseModelConfig(ModelConfigToYaml(*c))->platform, Platform::kEmulated);
  const size_t profiles = emulated.find("profiles:");
  EXPECT_THAT(ErrorOf(emulated.substr(0, profiles)),
              HasSubstr("platform emulated needs at least one latency profile"));
}

TEST(ModelConfigTest, SequenceBatchingRoundTripsAndGivesTheStatelessForm) {
  const std::string text = kValid + std::string(R"(sequence_batching:
  max_sequence_idle_microseconds: 5000
  state: [{input_name: h_in, output_name: h_out, data_type: TYPE_FP32, dims: [2, 8]}]
)");
  absl::StatusOr<ModelConfig> c = ParseModelConfig(text);
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_TRUE(c->sequence_batching.has_value());
  EXPECT_EQ(c->sequence_batching->max_sequence_idle_us, 5000);
  EXPECT_EQ(c->sequence_batching->StateElements(), 16);
  absl::StatusOr<ModelConfig> again = ParseModelConfig(ModelConfigToYaml(*c));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->sequence_batching, c->sequence_batching);
  const ModelConfig form = StatelessForm(*c);
  EXPECT_EQ(form.inputs[0].shape, (std::vector<int64_t>{784 + 16}));
  EXPECT_EQ(form.outputs[0].shape, (std::vector<int64_t>{10 + 16}));
  EXPECT_EQ(StatelessForm(*ParseModelConfig(kValid)).inputs[0].shape,
            (std::vector<int64_t>{1, 28, 28}));  // a stateless model is its own form
}

TEST(ModelConfigTest, ModelStateRoundTrips) {
  absl::StatusOr<ModelConfig> c = ParseModelConfig(kValid + std::string("model_state: {dims: [10, 785]}\n"));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->ModelStateElements(), 7850);
  absl::StatusOr<ModelConfig> again = ParseModelConfig(ModelConfigToYaml(*c));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->model_state_shape, c->model_state_shape);
  EXPECT_THAT(ErrorOf(kValid + std::string("model_state: {dims: [0]}\n")), HasSubstr("dimensions must be positive"));
  EXPECT_THAT(ErrorOf(kValid + std::string("model_state: {dims: [4]}\nsequence_batching: {state: [{input_name: a, "
                                           "output_name: b, dims: [4]}]}\n")),
              HasSubstr("either sequences' states (sequence_batching) or its own"));
}

TEST(ModelConfigErrorTest, SequenceBatchingErrorsNameTheField) {
  auto with = [](const std::string& seq) { return ErrorOf(kValid + std::string("sequence_batching: ") + seq + "\n"); };
  EXPECT_THAT(with("{state: []}"), HasSubstr("sequence_batching.state"));
  EXPECT_THAT(with("{state: [{input_name: a, output_name: b, dims: [0]}]}"), HasSubstr("dimensions must be positive"));
  EXPECT_THAT(with("{state: [{input_name: a, output_name: b, data_type: TYPE_INT8, dims: [4]}]}"),
              HasSubstr("only TYPE_FP32"));
  EXPECT_THAT(with("{max_sequence_idle_microseconds: 0, state: [{input_name: a, output_name: b, dims: [4]}]}"),
              HasSubstr("must be positive"));
  EXPECT_THAT(with("{state: [{input_name: image, output_name: b, dims: [4]}]}"),
              HasSubstr("'image' is also a tensor of the model: the state is implicit"));
}

TEST(ModelConfigErrorTest, UnknownArchitecture) {
  EXPECT_THAT(ErrorOf(Edit("architecture: lenet5", "architecture: vgg")),
              HasSubstr("unknown architecture 'vgg' (expected one of mlp, lenet5, resnet_small, gru_rows, online_linear, "
                        "calibrated_lenet5)"));
}

TEST(ModelConfigErrorTest, AVariableDimensionNeedsShapeBucketsAndOnlyItDoes) {
  const std::string variable = Edit("shape: [1, 28, 28]", "shape: [1, -1, 28]");
  EXPECT_THAT(ErrorOf(variable), HasSubstr("field 'shape_buckets': a tensor has a variable (-1) dimension"));
  absl::StatusOr<ModelConfig> c = ParseModelConfig(variable + "shape_buckets: [14, 28]\n");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->shape_buckets, (std::vector<int64_t>{14, 28}));
  EXPECT_EQ(AtBucket(*c, 14).inputs[0].shape, (std::vector<int64_t>{1, 14, 28}));
  absl::StatusOr<ModelConfig> again = ParseModelConfig(ModelConfigToYaml(*c));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->shape_buckets, c->shape_buckets);
  EXPECT_EQ(again->inputs, c->inputs);
  EXPECT_THAT(ErrorOf(variable + "shape_buckets: [28, 14]\n"), HasSubstr("sizes must be positive and ascending"));
  EXPECT_THAT(ErrorOf(kValid + std::string("shape_buckets: [4]\n")),
              HasSubstr("only for a model with variable (-1) dimensions"));
  EXPECT_THAT(ErrorOf(Edit("shape: [1, 28, 28]", "shape: [1, -2, 28]")), HasSubstr("or -1 (variable)"));
}

TEST(ModelConfigErrorTest, AReshapeHoldsTheSameElements) {
  const std::string flat = Edit("{name: image, datatype: FP32, shape: [1, 28, 28]}",
                                "{name: image, datatype: FP32, shape: [784], reshape: {shape: [1, 28, 28]}}");
  absl::StatusOr<ModelConfig> c = ParseModelConfig(flat);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->inputs[0].ModelShape(), (std::vector<int64_t>{1, 28, 28}));
  EXPECT_EQ(ParseModelConfig(ModelConfigToYaml(*c))->inputs, c->inputs);
  EXPECT_THAT(ErrorOf(Edit("shape: [1, 28, 28]}", "shape: [1, 28, 28], reshape: {shape: [28, 27]}}")),
              HasSubstr("field 'inputs[0].reshape': tensor 'image': reshape [28, 27] must hold the elements of shape "
                        "[1, 28, 28]"));
}

TEST(ModelConfigErrorTest, OptionalInputsAndBytesSlotsFollowTheirRules) {
  const std::string text = Edit("  - {name: image, datatype: FP32, shape: [1, 28, 28]}\n",
                                "  - {name: image, datatype: FP32, shape: [1, 28, 28]}\n"
                                "  - {name: caption, datatype: BYTES, shape: [1], optional: true, max_element_bytes: 64}\n");
  absl::StatusOr<ModelConfig> c = ParseModelConfig(text);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->inputs[1].optional);
  EXPECT_EQ(c->inputs[1].ElementSize(), 68);
  EXPECT_FALSE(c->inputs[0].optional);
  EXPECT_EQ(ParseModelConfig(ModelConfigToYaml(*c))->inputs, c->inputs);
  EXPECT_THAT(ErrorOf(Edit("shape: [1, 28, 28]}", "shape: [1, 28, 28], optional: true}")),
              HasSubstr("at least one input must not be optional"));
  EXPECT_THAT(ErrorOf(Edit("shape: [10]}", "shape: [10], optional: true}")), HasSubstr("unknown field 'outputs[0].optional'"));
  EXPECT_THAT(ErrorOf(Edit("shape: [10]}", "shape: [10], max_element_bytes: 8}")),
              HasSubstr("tensor 'logits': max_element_bytes is for BYTES tensors"));
  std::string zero = text;
  zero.replace(zero.find("max_element_bytes: 64"), 21, "max_element_bytes: 0");
  EXPECT_THAT(ErrorOf(zero), HasSubstr("from 1 to 1048576"));
}

TEST(ModelConfigErrorTest, ArchitectureOnTorchScript) {
  EXPECT_THAT(ErrorOf(Edit("platform: builtin", "platform: torchscript")),
              HasSubstr("only allowed for platform builtin"));
}

TEST(ModelConfigErrorTest, UnknownDatatype) {
  EXPECT_THAT(ErrorOf(Edit("datatype: FP32, shape: [1, 28", "datatype: FLOAT, shape: [1, 28")),
              HasSubstr("field 'inputs[0].datatype': unknown datatype 'FLOAT' (expected one of BOOL"));
}

TEST(ModelConfigErrorTest, BadShape) {
  EXPECT_THAT(ErrorOf(Edit("[1, 28, 28]", "[1, -28, 28]")),
              HasSubstr("dimension 1 of tensor 'image' is -28; dimensions must be positive"));
  EXPECT_THAT(ErrorOf(Edit("[1, 28, 28]", "[]")), HasSubstr("shape is empty"));
  EXPECT_THAT(ErrorOf(Edit("[1, 28, 28]", "[1, x]")),
              HasSubstr("'inputs[0].shape': expected integer dimensions, got 'x'"));
  EXPECT_THAT(ErrorOf(Edit("[1, 28, 28]", "28")), HasSubstr("expected a list of dimensions"));
}

TEST(ModelConfigErrorTest, NoInputsOrRepeatedNames) {
  EXPECT_THAT(ErrorOf(Edit("inputs:\n  - {name: image, datatype: FP32, shape: [1, 28, 28]}",
                           "inputs: image")),
              HasSubstr("field 'inputs': expected a list of tensors"));
  EXPECT_THAT(ErrorOf(Edit("inputs:\n  - {name: image, datatype: FP32, shape: [1, 28, 28]}",
                           "inputs: []")),
              HasSubstr("at least one tensor is required"));
  EXPECT_THAT(ErrorOf(Edit("  - {name: logits, datatype: FP32, shape: [10]}",
                           "  - {name: logits, datatype: FP32, shape: [10]}\n"
                           "  - {name: logits, datatype: FP32, shape: [3]}")),
              HasSubstr("tensor name 'logits' repeated"));
}

TEST(ModelConfigErrorTest, MaxBatchSizeMustBePositive) {
  EXPECT_THAT(ErrorOf(Edit("max_batch_size: 64", "max_batch_size: 0")),
              HasSubstr("must be at least 1, got 0"));
}

TEST(ModelConfigErrorTest, AccuracyOutOfRange) {
  EXPECT_THAT(ErrorOf(Edit("accuracy: 0.9", "accuracy: 90")), HasSubstr("must be in [0, 1]"));
}

TEST(ModelConfigErrorTest, NonPositiveObjective) {
  EXPECT_THAT(ErrorOf(Edit("latency_objective_ms: 50", "latency_objective_ms: 0")),
              HasSubstr("field 'latency_objective_ms': must be positive"));
}

TEST(ModelConfigErrorTest, NonMonotoneProfile) {
  EXPECT_THAT(ErrorOf(Edit("[100, 150, 260]", "[100, 150, 140]")),
              HasSubstr("field 'profiles.cpu': latency profile is not monotone: l(4)"));
}

TEST(ModelConfigErrorTest, ProfileLengthsDiffer) {
  EXPECT_THAT(ErrorOf(Edit("[100, 150, 260]", "[100, 150]")),
              HasSubstr("'batch' has 3 entries but 'latency_us' has 2"));
}

TEST(ModelConfigErrorTest, ProfileBeyondMaxBatch) {
  EXPECT_THAT(ErrorOf(Edit("max_batch_size: 64", "max_batch_size: 2")),
              HasSubstr("measures batch 4, above max_batch_size 2"));
}

TEST(ModelConfigErrorTest, ProfileWithoutBatchOne) {
  EXPECT_THAT(ErrorOf(Edit("batch: [1, 2, 4]", "batch: [2, 3, 4]")),
              HasSubstr("must include batch size 1"));
}

}  // namespace
}  // namespace tutti
