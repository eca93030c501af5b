#include "tutti/repository/model_config.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "tutti/core/status_macros.h"
#include "tutti/core/yaml_map_reader.h"
#include "yaml-cpp/yaml.h"

namespace tutti {
namespace {


// An entry of `inputs` (which may be optional) or of `outputs`.
absl::StatusOr<TensorSpec> ParseTensor(const YAML::Node& node, const std::string& path, bool input) {
  MapReader r(node, path);
  TUTTI_RETURN_IF_ERROR(r.CheckIsMap());
  TensorSpec t;
  TUTTI_ASSIGN_OR_RETURN(auto name, r.RequireScalar<std::string>("name", "a string"));
  TUTTI_ASSIGN_OR_RETURN(auto dtype, r.RequireScalar<std::string>("datatype", "a string"));
  TUTTI_ASSIGN_OR_RETURN(auto shape, r.Require("shape"));
  t.name = name;
  std::optional<DataType> parsed = ParseDataType(dtype);
  if (!parsed) {
    return Invalid(r.FieldPath("datatype"), absl::StrCat("unknown datatype '", dtype,
                                                         "' (expected one of ", AllDataTypeNames(), ")"));
  }
  t.datatype = *parsed;
  if (!shape.IsSequence()) return Invalid(r.FieldPath("shape"), "expected a list of dimensions");
  for (size_t i = 0; i < shape.size(); ++i) {
    TUTTI_ASSIGN_OR_RETURN(auto dim, r.Scalar<int64_t>("shape", shape[i], "integer dimensions"));
    t.shape.push_back(dim);
  }
  if (YAML::Node reshape = r.Get("reshape"); reshape.IsDefined() && !reshape.IsNull()) {
    MapReader rr(reshape, r.FieldPath("reshape"));
    TUTTI_RETURN_IF_ERROR(rr.CheckIsMap());
    TUTTI_ASSIGN_OR_RETURN(auto dims, rr.Require("shape"));
    if (!dims.IsSequence()) return Invalid(rr.FieldPath("shape"), "expected a list of dimensions");
    for (size_t i = 0; i < dims.size(); ++i) {
      TUTTI_ASSIGN_OR_RETURN(auto dim, rr.Scalar<int64_t>("shape", dims[i], "integer dimensions"));
      t.reshape.push_back(dim);
    }
    TUTTI_RETURN_IF_ERROR(rr.CheckNoUnknownFields());
  }
  if (input) {
    TUTTI_ASSIGN_OR_RETURN(std::optional<bool> optional, r.OptionalScalar<bool>("optional", "true or false"));
    t.optional = optional.value_or(false);
  }
  TUTTI_ASSIGN_OR_RETURN(std::optional<int64_t> max_bytes,
                         r.OptionalScalar<int64_t>("max_element_bytes", "a positive integer"));
  if (max_bytes) {
    if (t.datatype != DataType::kBytes || *max_bytes < 1 || *max_bytes > (1 << 20)) {
      return Invalid(r.FieldPath("max_element_bytes"), absl::StrCat("tensor '", t.name, "': max_element_bytes is "
                                                                   "for BYTES tensors, from 1 to 1048576"));
    }
    t.max_element_bytes = *max_bytes;
  }
  TUTTI_RETURN_IF_ERROR(r.CheckNoUnknownFields());
  return t;
}

// A {name: name} map of `node`, as a step's input_map or output_map.
absl::StatusOr<std::map<std::string, std::string>> ParseNameMap(const YAML::Node& node, const std::string& where) {
  if (!node.IsMap()) return Invalid(where, "expected a mapping from the step model's tensors to graph tensors");
  std::map<std::string, std::string> out;
  for (const auto& kv : node) {
    if (!kv.second.IsScalar()) return Invalid(where, "expected tensor names");
    out[kv.first.as<std::string>()] = kv.second.as<std::string>();
  }
  return out;
}

absl::StatusOr<std::optional<EnsembleRoute>> ParseRoute(const YAML::Node& node, const std::string& where) {
  if (!node.IsDefined() || node.IsNull()) return std::nullopt;
  MapReader r(node, where);
  TUTTI_RETURN_IF_ERROR(r.CheckIsMap());
  EnsembleRoute route;
  TUTTI_ASSIGN_OR_RETURN(route.tensor, r.RequireScalar<std::string>("tensor", "a graph tensor's name"));
  TUTTI_ASSIGN_OR_RETURN(YAML::Node values, r.Require("argmax_in"));
  if (!values.IsSequence() || values.size() == 0) return Invalid(where + ".argmax_in", "expected a list of classes");
  for (size_t i = 0; i < values.size(); ++i) {
    TUTTI_ASSIGN_OR_RETURN(int64_t v, r.Scalar<int64_t>("argmax_in", values[i], "class indices"));
    if (v < 0) return Invalid(where + ".argmax_in", "class indices are not negative");
    route.argmax_in.push_back(v);
  }
  TUTTI_RETURN_IF_ERROR(r.CheckNoUnknownFields());
  return route;
}

void EmitRoute(YAML::Emitter& out, const char* key, const EnsembleRoute& route) {
  out << YAML::Key << key << YAML::Value << YAML::Flow << YAML::BeginMap << YAML::Key << "tensor" << YAML::Value
      << route.tensor << YAML::Key << "argmax_in" << YAML::Value << YAML::Flow << route.argmax_in << YAML::EndMap;
}

absl::StatusOr<std::vector<EnsembleStep>> ParseSteps(const YAML::Node& node, std::optional<EnsembleRoute>* exit,
                                                     std::string* merge) {
  MapReader r(node, "ensemble_scheduling");
  TUTTI_RETURN_IF_ERROR(r.CheckIsMap());
  TUTTI_ASSIGN_OR_RETURN(YAML::Node list, r.Require("step"));
  if (!list.IsSequence()) return Invalid("ensemble_scheduling.step", "expected a list of steps");
  TUTTI_ASSIGN_OR_RETURN(*exit, ParseRoute(r.Get("early_exit"), "ensemble_scheduling.early_exit"));
  TUTTI_ASSIGN_OR_RETURN(auto m, r.OptionalScalar<std::string>("merge", "mean or sum"));
  if (m && *m != "mean" && *m != "sum") {
    return Invalid("ensemble_scheduling.merge", absl::StrCat("unknown merge '", *m, "' (expected mean or sum)"));
  }
  *merge = m.value_or("");
  TUTTI_RETURN_IF_ERROR(r.CheckNoUnknownFields());
  std::vector<EnsembleStep> steps;
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string where = absl::StrCat("ensemble_scheduling.step[", i, "]");
    MapReader sr(list[i], where);
    TUTTI_RETURN_IF_ERROR(sr.CheckIsMap());
    EnsembleStep s;
    TUTTI_ASSIGN_OR_RETURN(s.model_name, sr.RequireScalar<std::string>("model_name", "a model name"));
    TUTTI_ASSIGN_OR_RETURN(auto version, sr.OptionalScalar<int64_t>("model_version", "an integer"));
    s.model_version = version.value_or(-1);
    TUTTI_ASSIGN_OR_RETURN(YAML::Node in, sr.Require("input_map"));
    TUTTI_ASSIGN_OR_RETURN(s.input_map, ParseNameMap(in, absl::StrCat(where, ".input_map")));
    TUTTI_ASSIGN_OR_RETURN(YAML::Node out, sr.Require("output_map"));
    TUTTI_ASSIGN_OR_RETURN(s.output_map, ParseNameMap(out, absl::StrCat(where, ".output_map")));
    TUTTI_ASSIGN_OR_RETURN(s.route, ParseRoute(sr.Get("route"), absl::StrCat(where, ".route")));
    TUTTI_RETURN_IF_ERROR(sr.CheckNoUnknownFields());
    steps.push_back(std::move(s));
  }
  return steps;
}

absl::StatusOr<std::vector<TensorSpec>> ParseTensors(MapReader& r, absl::string_view key) {
  TUTTI_ASSIGN_OR_RETURN(auto list, r.Require(key));
  if (!list.IsSequence()) return Invalid(key, "expected a list of tensors");
  std::vector<TensorSpec> out;
  for (size_t i = 0; i < list.size(); ++i) {
    TUTTI_ASSIGN_OR_RETURN(auto t, ParseTensor(list[i], absl::StrCat(key, "[", i, "]"), key == "inputs"));
    out.push_back(std::move(t));
  }
  return out;
}

// The required `dims` list of `r`'s mapping.
absl::StatusOr<std::vector<int64_t>> ParseDims(MapReader& r) {
  TUTTI_ASSIGN_OR_RETURN(YAML::Node dims, r.Require("dims"));
  if (!dims.IsSequence()) return Invalid(r.FieldPath("dims"), "expected a list of dimensions");
  std::vector<int64_t> out;
  for (size_t i = 0; i < dims.size(); ++i) {
    TUTTI_ASSIGN_OR_RETURN(int64_t d, r.Scalar<int64_t>("dims", dims[i], "integers"));
    out.push_back(d);
  }
  return out;
}

// sequence_batching: {max_sequence_idle_microseconds, state: [one implicit state]}.
absl::StatusOr<SequenceBatching> ParseSequenceBatching(const YAML::Node& node) {
  MapReader r(node, "sequence_batching");
  TUTTI_RETURN_IF_ERROR(r.CheckIsMap());
  SequenceBatching out;
  TUTTI_ASSIGN_OR_RETURN(auto idle, r.OptionalScalar<int64_t>("max_sequence_idle_microseconds", "an integer"));
  if (idle) out.max_sequence_idle_us = *idle;
  TUTTI_ASSIGN_OR_RETURN(YAML::Node states, r.Require("state"));
  if (!states.IsSequence() || states.size() != 1) {
    return Invalid("sequence_batching.state", "expected a list of one implicit state (Tutti keeps one per model)");
  }
  MapReader sr(states[0], "sequence_batching.state[0]");
  TUTTI_RETURN_IF_ERROR(sr.CheckIsMap());
  TUTTI_ASSIGN_OR_RETURN(out.state_input, sr.RequireScalar<std::string>("input_name", "a string"));
  TUTTI_ASSIGN_OR_RETURN(out.state_output, sr.RequireScalar<std::string>("output_name", "a string"));
  TUTTI_ASSIGN_OR_RETURN(auto type, sr.OptionalScalar<std::string>("data_type", "a string"));
  if (type && *type != "TYPE_FP32") {
    return Invalid("sequence_batching.state[0].data_type", absl::StrCat("'", *type, "': only TYPE_FP32 is served"));
  }
  TUTTI_ASSIGN_OR_RETURN(out.state_shape, ParseDims(sr));
  TUTTI_RETURN_IF_ERROR(sr.CheckNoUnknownFields());
  TUTTI_RETURN_IF_ERROR(r.CheckNoUnknownFields());
  return out;
}

absl::StatusOr<LatencyProfile> ParseProfile(const YAML::Node& node, const std::string& path) {
  MapReader r(node, path);
  TUTTI_RETURN_IF_ERROR(r.CheckIsMap());
  TUTTI_ASSIGN_OR_RETURN(auto batch, r.Require("batch"));
  TUTTI_ASSIGN_OR_RETURN(auto latency, r.Require("latency_us"));
  r.Get("alpha_us");  // informative only; recomputed from the points
  r.Get("beta_us");
  if (!batch.IsSequence() || !latency.IsSequence()) {
    return Invalid(path, "'batch' and 'latency_us' must be lists");
  }
  if (batch.size() != latency.size()) {
    return Invalid(path, absl::StrFormat("'batch' has %d entries but 'latency_us' has %d",
                                         batch.size(), latency.size()));
  }
  std::vector<ProfilePoint> points;
  for (size_t i = 0; i < batch.size(); ++i) {
    TUTTI_ASSIGN_OR_RETURN(auto b, r.Scalar<int>("batch", batch[i], "integer batch sizes"));
    TUTTI_ASSIGN_OR_RETURN(auto us, r.Scalar<double>("latency_us", latency[i], "numbers"));
    points.push_back({b, Micros(us)});
  }
  TUTTI_RETURN_IF_ERROR(r.CheckNoUnknownFields());
  absl::StatusOr<LatencyProfile> profile = LatencyProfile::FromPoints(points, Monotonicity::kReject);
  if (!profile.ok()) return Invalid(path, profile.status().message());
  return profile;
}

// Triton's ModelQueuePolicy, at `path`.
absl::StatusOr<QueuePolicy> ParseQueuePolicy(const YAML::Node& node, const std::string& path) {
  MapReader r(node, path);
  TUTTI_RETURN_IF_ERROR(r.CheckIsMap());
  TUTTI_ASSIGN_OR_RETURN(auto action, r.OptionalScalar<std::string>("timeout_action", "REJECT or DELAY"));
  TUTTI_ASSIGN_OR_RETURN(auto timeout, r.OptionalScalar<int64_t>("default_timeout_microseconds", "an integer"));
  TUTTI_ASSIGN_OR_RETURN(auto override_, r.OptionalScalar<bool>("allow_timeout_override", "true or false"));
  TUTTI_ASSIGN_OR_RETURN(auto size, r.OptionalScalar<int64_t>("max_queue_size", "an integer"));
  TUTTI_RETURN_IF_ERROR(r.CheckNoUnknownFields());
  if (action && *action != "REJECT" && *action != "DELAY") {
    return Invalid(path + ".timeout_action", "expected REJECT or DELAY");
  }
  QueuePolicy p;
  p.delay = action == "DELAY";
  p.default_timeout_us = timeout.value_or(0);
  p.allow_timeout_override = override_.value_or(false);
  p.max_queue_size = size.value_or(0);
  if (p.default_timeout_us < 0) return Invalid(path + ".default_timeout_microseconds", "must not be negative");
  if (p.max_queue_size < 0) return Invalid(path + ".max_queue_size", "must not be negative (0: no limit)");
  return p;
}

absl::StatusOr<ModelConfig> ParseFields(const YAML::Node& root) {
  MapReader r(root, "");
  TUTTI_RETURN_IF_ERROR(r.CheckIsMap());
  ModelConfig c;
  TUTTI_ASSIGN_OR_RETURN(auto name, r.RequireScalar<std::string>("name", "a string"));
  TUTTI_ASSIGN_OR_RETURN(auto platform, r.RequireScalar<std::string>("platform", "a string"));
  TUTTI_ASSIGN_OR_RETURN(auto arch, r.OptionalScalar<std::string>("architecture", "a string"));
  TUTTI_ASSIGN_OR_RETURN(auto task, r.OptionalScalar<std::string>("task", "a string"));
  TUTTI_ASSIGN_OR_RETURN(auto max_batch, r.RequireScalar<int>("max_batch_size", "an integer"));
  TUTTI_ASSIGN_OR_RETURN(auto inputs, ParseTensors(r, "inputs"));
  TUTTI_ASSIGN_OR_RETURN(auto outputs, ParseTensors(r, "outputs"));
  TUTTI_ASSIGN_OR_RETURN(auto accuracy, r.OptionalScalar<double>("accuracy", "a number"));
  TUTTI_ASSIGN_OR_RETURN(auto params, r.OptionalScalar<int64_t>("parameters", "an integer"));
  TUTTI_ASSIGN_OR_RETURN(auto objective, r.OptionalScalar<double>("latency_objective_ms", "a number"));
  TUTTI_ASSIGN_OR_RETURN(c.load_ms, r.OptionalScalar<double>("load_ms", "a number of milliseconds"));
  if (YAML::Node buckets = r.Get("shape_buckets"); buckets.IsDefined() && !buckets.IsNull()) {
    if (!buckets.IsSequence()) return Invalid("shape_buckets", "expected a list of sizes");
    for (size_t i = 0; i < buckets.size(); ++i) {
      TUTTI_ASSIGN_OR_RETURN(int64_t size, r.Scalar<int64_t>("shape_buckets", buckets[i], "integer sizes"));
      c.shape_buckets.push_back(size);
    }
  }
  if (platform == "builtin") {
    c.platform = Platform::kBuiltin;
  } else if (platform == "torchscript") {
    c.platform = Platform::kTorchScript;
  } else if (platform == "onnx" || platform == "onnxruntime_onnx") {  // the latter: Triton's name
    c.platform = Platform::kOnnx;
  } else if (platform == "emulated") {
    c.platform = Platform::kEmulated;
  } else if (platform == "ensemble") {
    c.platform = Platform::kEnsemble;
  } else {
    return Invalid("platform", absl::StrCat("unknown platform '", platform,
                                            "' (expected builtin, torchscript, onnx, emulated or ensemble)"));
  }
  c.name = name;
  c.architecture = arch.value_or("");
  c.task = task.value_or("");
  c.max_batch_size = max_batch;
  c.inputs = std::move(inputs);
  c.outputs = std::move(outputs);
  c.accuracy = accuracy;
  c.parameters = params;
  c.latency_objective_ms = objective;
  if (YAML::Node batching = r.Get("dynamic_batching"); batching.IsDefined() && !batching.IsNull()) {
    MapReader br(batching, "dynamic_batching");
    TUTTI_RETURN_IF_ERROR(br.CheckIsMap());
    TUTTI_ASSIGN_OR_RETURN(c.max_queue_delay_us,
                           br.OptionalScalar<int64_t>("max_queue_delay_microseconds", "an integer"));
    TUTTI_ASSIGN_OR_RETURN(auto levels, br.OptionalScalar<int64_t>("priority_levels", "an integer"));
    TUTTI_ASSIGN_OR_RETURN(auto default_level, br.OptionalScalar<int64_t>("default_priority_level", "an integer"));
    c.priority_levels = levels.value_or(0);
    c.default_priority_level = default_level.value_or(0);
    if (YAML::Node p = br.Get("default_queue_policy"); p.IsDefined() && !p.IsNull()) {
      TUTTI_ASSIGN_OR_RETURN(c.default_queue_policy, ParseQueuePolicy(p, "dynamic_batching.default_queue_policy"));
    }
    if (YAML::Node p = br.Get("priority_queue_policy"); p.IsDefined() && !p.IsNull()) {
      if (!p.IsMap()) {
        return Invalid("dynamic_batching.priority_queue_policy", "expected a mapping from priority level to policy");
      }
      for (const auto& kv : p) {
        const std::string key = kv.first.as<std::string>();
        const std::string field = absl::StrCat("dynamic_batching.priority_queue_policy.", key);
        int64_t level = 0;
        if (!absl::SimpleAtoi(key, &level)) return Invalid(field, "a priority level must be an integer");
        TUTTI_ASSIGN_OR_RETURN(c.priority_queue_policy[level], ParseQueuePolicy(kv.second, field));
      }
    }
    TUTTI_RETURN_IF_ERROR(br.CheckNoUnknownFields());
  }
  YAML::Node profiles = r.Get("profiles");
  if (profiles.IsDefined() && !profiles.IsNull()) {
    if (!profiles.IsMap()) return Invalid("profiles", "expected a mapping from executor kind to profile");
    for (const auto& kv : profiles) {
      const std::string kind = kv.first.as<std::string>();
      TUTTI_ASSIGN_OR_RETURN(auto p, ParseProfile(kv.second, absl::StrCat("profiles.", kind)));
      c.profiles.emplace(kind, std::move(p));
    }
  }
  if (YAML::Node parity = r.Get("parity"); parity.IsDefined() && !parity.IsNull()) {
    MapReader pr(parity, "parity");
    TUTTI_RETURN_IF_ERROR(pr.CheckIsMap());
    ParitySpec spec;
    TUTTI_ASSIGN_OR_RETURN(spec.deployed, pr.RequireScalar<std::string>("deployed", "a model name"));
    TUTTI_ASSIGN_OR_RETURN(spec.k, pr.RequireScalar<int>("k", "an integer"));
    TUTTI_ASSIGN_OR_RETURN(auto encoder, pr.RequireScalar<std::string>("encoder", "sum or concat"));
    absl::StatusOr<ParityEncoder> e = ParseParityEncoder(encoder);
    if (!e.ok()) return Invalid("parity.encoder", e.status().message());
    spec.encoder = *e;
    TUTTI_RETURN_IF_ERROR(pr.CheckNoUnknownFields());
    c.parity = spec;
  }
  if (YAML::Node scheduling = r.Get("ensemble_scheduling"); scheduling.IsDefined() && !scheduling.IsNull()) {
    if (c.platform != Platform::kEnsemble) return Invalid("ensemble_scheduling", "only allowed for platform ensemble");
    TUTTI_ASSIGN_OR_RETURN(c.steps, ParseSteps(scheduling, &c.early_exit, &c.merge));
  }
  if (YAML::Node seq = r.Get("sequence_batching"); seq.IsDefined() && !seq.IsNull()) {
    TUTTI_ASSIGN_OR_RETURN(c.sequence_batching, ParseSequenceBatching(seq));
  }
  if (YAML::Node ms = r.Get("model_state"); ms.IsDefined() && !ms.IsNull()) {
    MapReader mr(ms, "model_state");
    TUTTI_RETURN_IF_ERROR(mr.CheckIsMap());
    TUTTI_ASSIGN_OR_RETURN(c.model_state_shape, ParseDims(mr));
    TUTTI_RETURN_IF_ERROR(mr.CheckNoUnknownFields());
  }
  if (YAML::Node hashes = r.Get("stage_hashes"); hashes.IsDefined() && !hashes.IsNull()) {
    if (!hashes.IsSequence()) return Invalid("stage_hashes", "expected a list of hashes");
    for (size_t i = 0; i < hashes.size(); ++i) {
      TUTTI_ASSIGN_OR_RETURN(std::string h, r.Scalar<std::string>("stage_hashes", hashes[i], "strings"));
      c.stage_hashes.push_back(std::move(h));
    }
  }
  TUTTI_RETURN_IF_ERROR(r.CheckNoUnknownFields());
  TUTTI_RETURN_IF_ERROR(ValidateModelConfig(c));
  return c;
}

absl::Status ValidateTensors(const std::vector<TensorSpec>& tensors, absl::string_view key) {
  if (tensors.empty()) return Invalid(key, "at least one tensor is required");
  absl::flat_hash_set<std::string> names;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorSpec& t = tensors[i];
    const std::string where = absl::StrCat(key, "[", i, "]");
    if (t.name.empty()) return Invalid(where, "tensor name is empty");
    if (!names.insert(t.name).second) return Invalid(where, absl::StrCat("tensor name '", t.name, "' repeated"));
    if (t.shape.empty()) return Invalid(absl::StrCat(where, ".shape"), "shape is empty");
    if (!t.reshape.empty()) {
      const bool fixed = std::all_of(t.shape.begin(), t.shape.end(), [](int64_t d) { return d > 0; });
      if (!fixed || !std::all_of(t.reshape.begin(), t.reshape.end(), [](int64_t d) { return d > 0; }) ||
          std::accumulate(t.reshape.begin(), t.reshape.end(), int64_t{1}, std::multiplies<>()) !=
              std::accumulate(t.shape.begin(), t.shape.end(), int64_t{1}, std::multiplies<>())) {
        return Invalid(absl::StrCat(where, ".reshape"),
                       absl::StrCat("tensor '", t.name, "': reshape [", absl::StrJoin(t.reshape, ", "),
                                    "] must hold the elements of shape [", absl::StrJoin(t.shape, ", "),
                                    "], both of positive dimensions"));
      }
    }
    for (size_t d = 0; d < t.shape.size(); ++d) {
      if (t.shape[d] <= 0 && t.shape[d] != -1) {
        return Invalid(absl::StrCat(where, ".shape"),
                       absl::StrFormat("dimension %d of tensor '%s' is %d; dimensions must be positive, or -1 "
                                       "(variable)", d, t.name, t.shape[d]));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

namespace {

int64_t Product(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

}  // namespace

int64_t SequenceBatching::StateElements() const { return Product(state_shape); }

int64_t ModelConfig::ModelStateElements() const {
  return model_state_shape.empty() ? 0 : Product(model_state_shape);
}

ModelConfig StatelessForm(const ModelConfig& config) {
  ModelConfig out = config;
  if (!config.sequence_batching || config.inputs.empty() || config.outputs.empty()) return out;
  const int64_t state = config.sequence_batching->StateElements();
  out.inputs[0].shape = {config.inputs[0].ElementCount() + state};
  out.outputs[0].shape = {config.outputs[0].ElementCount() + state};
  out.inputs[0].reshape.clear();  // the weights compute on the flat concatenation
  out.outputs[0].reshape.clear();
  return out;
}

int64_t TensorSpec::ElementCount() const { return Product(shape); }

int64_t TensorSpec::ElementSize() const {
  return datatype == DataType::kBytes ? 4 + max_element_bytes : static_cast<int64_t>(DataTypeSize(datatype));
}

bool HasVariableDims(const ModelConfig& config) {
  for (const auto* tensors : {&config.inputs, &config.outputs}) {
    for (const TensorSpec& t : *tensors) {
      if (std::find(t.shape.begin(), t.shape.end(), -1) != t.shape.end()) return true;
    }
  }
  return false;
}

std::vector<TensorSpec> TensorsAt(std::vector<TensorSpec> tensors, int64_t size) {
  for (TensorSpec& t : tensors) std::replace(t.shape.begin(), t.shape.end(), int64_t{-1}, size);
  return tensors;
}

ModelConfig AtBucket(const ModelConfig& config, int64_t size) {
  ModelConfig out = config;
  out.shape_buckets.clear();
  out.inputs = TensorsAt(std::move(out.inputs), size);
  out.outputs = TensorsAt(std::move(out.outputs), size);
  return out;
}

std::string BucketProfileKey(absl::string_view kind, int64_t size) { return absl::StrCat(kind, "/", size); }

absl::string_view PlatformName(Platform platform) {
  switch (platform) {
    case Platform::kBuiltin:
      return "builtin";
    case Platform::kTorchScript:
      return "torchscript";
    case Platform::kOnnx:
      return "onnx";
    case Platform::kEmulated:
      return "emulated";
    case Platform::kEnsemble:
      return "ensemble";
  }
  return "unknown";
}

absl::Status ValidateModelConfig(const ModelConfig& c) {
  if (c.name.empty()) return Invalid("name", "must not be empty");
  if (c.platform == Platform::kBuiltin) {
    if (c.architecture.empty()) return Invalid("architecture", "required for platform builtin");
    if (std::find(std::begin(kBuiltinArchitectures), std::end(kBuiltinArchitectures),
                  c.architecture) == std::end(kBuiltinArchitectures)) {
      return Invalid("architecture", absl::StrCat("unknown architecture '", c.architecture,
                                                  "' (expected one of ",
                                                  absl::StrJoin(kBuiltinArchitectures, ", "), ")"));
    }
  } else if (!c.architecture.empty()) {
    return Invalid("architecture", "only allowed for platform builtin");
  }
  for (size_t i = 0; i < c.shape_buckets.size(); ++i) {
    if (c.shape_buckets[i] < 1 || (i > 0 && c.shape_buckets[i] <= c.shape_buckets[i - 1])) {
      return Invalid("shape_buckets", "sizes must be positive and ascending");
    }
  }
  if (HasVariableDims(c) != !c.shape_buckets.empty()) {
    return Invalid("shape_buckets", HasVariableDims(c) ? "a tensor has a variable (-1) dimension: list the sizes "
                                                         "requests are padded to, as shape_buckets: [16, 32, ...]"
                                                       : "only for a model with variable (-1) dimensions");
  }
  if (HasVariableDims(c) && (c.stateful() || c.parity || c.platform == Platform::kEnsemble)) {
    return Invalid("shape_buckets", "stateful, parity and graph models have fixed shapes");
  }
  if (c.max_batch_size < 1) {
    return Invalid("max_batch_size", absl::StrCat("must be at least 1, got ", c.max_batch_size));
  }
  TUTTI_RETURN_IF_ERROR(ValidateTensors(c.inputs, "inputs"));
  TUTTI_RETURN_IF_ERROR(ValidateTensors(c.outputs, "outputs"));
  if (std::all_of(c.inputs.begin(), c.inputs.end(), [](const TensorSpec& t) { return t.optional; })) {
    return Invalid("inputs", "at least one input must not be optional: requests give the batch size with it");
  }
  for (size_t i = 0; i < c.outputs.size(); ++i) {
    if (c.outputs[i].optional) return Invalid(absl::StrCat("outputs[", i, "]"), "only inputs are optional");
  }
  if (c.accuracy && !(*c.accuracy >= 0 && *c.accuracy <= 1)) {
    return Invalid("accuracy", absl::StrCat("must be in [0, 1], got ", *c.accuracy));
  }
  if (c.parameters && *c.parameters < 0) return Invalid("parameters", "must not be negative");
  if (c.load_ms && !(*c.load_ms >= 0)) return Invalid("load_ms", "must not be negative");
  if (c.max_queue_delay_us && *c.max_queue_delay_us < 0) {
    return Invalid("dynamic_batching.max_queue_delay_microseconds", "must not be negative");
  }
  if (c.latency_objective_ms && !(*c.latency_objective_ms > 0)) {
    return Invalid("latency_objective_ms", "must be positive");
  }
  if (c.priority_levels < 0 || c.priority_levels > kMaxPriorityLevels) {
    return Invalid("dynamic_batching.priority_levels", absl::StrCat("must be from 0 to ", kMaxPriorityLevels));
  }
  if (c.priority_levels > 0 && (c.default_priority_level < 1 || c.default_priority_level > c.priority_levels)) {
    return Invalid("dynamic_batching.default_priority_level",
                   absl::StrCat("must be from 1 to priority_levels (", c.priority_levels, "), got ",
                                c.default_priority_level));
  }
  if (c.priority_levels == 0 && c.default_priority_level != 0) {
    return Invalid("dynamic_batching.default_priority_level", "needs priority_levels");
  }
  for (const auto& [level, policy] : c.priority_queue_policy) {
    if (level < 1 || level > c.priority_levels) {
      return Invalid(absl::StrCat("dynamic_batching.priority_queue_policy.", level),
                     absl::StrCat("no such priority level (the model has ", c.priority_levels, ")"));
    }
  }
  if (c.parity) {
    if (c.parity->deployed.empty()) return Invalid("parity.deployed", "name the deployed model");
    if (c.parity->deployed == c.name) return Invalid("parity.deployed", "a parity model cannot protect itself");
    if (c.inputs.size() != 1) return Invalid("inputs", "a parity model has exactly one input");
    absl::StatusOr<ParityCodec> codec = ParityCodec::Create(c.parity->encoder, c.parity->k, c.inputs[0].shape);
    if (!codec.ok()) return Invalid("parity", codec.status().message());
  }
  if (c.platform == Platform::kEnsemble) {
    if (c.steps.empty()) return Invalid("ensemble_scheduling", "platform ensemble needs at least one step");
    for (size_t i = 0; i < c.steps.size(); ++i) {
      const EnsembleStep& s = c.steps[i];
      const std::string where = absl::StrCat("ensemble_scheduling.step[", i, "]");
      if (s.model_name.empty()) return Invalid(where + ".model_name", "must not be empty");
      if (s.model_name == c.name) return Invalid(where + ".model_name", "a graph cannot be a step of itself");
      if (s.model_version == 0 || s.model_version < -1) {
        return Invalid(where + ".model_version", "must be a version (1, 2, …) or -1 for the latest");
      }
      if (s.input_map.empty()) return Invalid(where + ".input_map", "map the step model's inputs");
      if (s.output_map.empty()) return Invalid(where + ".output_map", "map at least one output");
    }
  } else if (!c.steps.empty() || c.early_exit || !c.merge.empty()) {
    return Invalid("ensemble_scheduling", "only allowed for platform ensemble");
  }
  if (!c.stage_hashes.empty() && c.platform != Platform::kBuiltin) {
    return Invalid("stage_hashes", "only allowed for platform builtin");
  }
  for (int64_t d : c.model_state_shape) {
    if (d <= 0) return Invalid("model_state.dims", "dimensions must be positive");
  }
  if (!c.model_state_shape.empty() && c.sequence_batching) {
    return Invalid("model_state", "a model keeps either sequences' states (sequence_batching) or its own, not both");
  }
  if (const std::optional<SequenceBatching>& q = c.sequence_batching) {
    if (c.platform == Platform::kEnsemble) {
      return Invalid("sequence_batching", "a graph is stateful through its steps: give it to the stateful step's model");
    }
    if (q->max_sequence_idle_us < 1) return Invalid("sequence_batching.max_sequence_idle_microseconds", "must be positive");
    if (q->state_input.empty() || q->state_output.empty()) {
      return Invalid("sequence_batching.state[0]", "name the state's input and output");
    }
    if (q->state_shape.empty()) return Invalid("sequence_batching.state[0].dims", "the state needs a shape");
    for (int64_t d : q->state_shape) {
      if (d <= 0) return Invalid("sequence_batching.state[0].dims", "dimensions must be positive");
    }
    for (const std::vector<TensorSpec>* tensors : {&c.inputs, &c.outputs}) {
      for (const TensorSpec& t : *tensors) {
        if (t.name == q->state_input || t.name == q->state_output) {
          return Invalid("sequence_batching.state[0]",
                         absl::StrCat("'", t.name, "' is also a tensor of the model: the state is implicit"));
        }
      }
    }
  }
  if (c.platform == Platform::kEmulated && c.profiles.empty()) {
    return Invalid("profiles", "platform emulated needs at least one latency profile to emulate");
  }
  for (const auto& [kind, profile] : c.profiles) {
    if (profile.max_batch() > c.max_batch_size) {
      return Invalid(absl::StrCat("profiles.", kind),
                     absl::StrFormat("measures batch %d, above max_batch_size %d",
                                     profile.max_batch(), c.max_batch_size));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<ModelConfig> ParseModelConfig(const std::string& yaml_text) {
  TUTTI_ASSIGN_OR_RETURN(YAML::Node root, LoadYaml(yaml_text));
  try {
    return ParseFields(root);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("malformed config: ", e.what()));
  }
}

std::string ModelConfigToYaml(const ModelConfig& c) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << c.name;
  out << YAML::Key << "platform" << YAML::Value << std::string(PlatformName(c.platform));
  if (!c.architecture.empty()) out << YAML::Key << "architecture" << YAML::Value << c.architecture;
  if (!c.task.empty()) out << YAML::Key << "task" << YAML::Value << c.task;
  out << YAML::Key << "max_batch_size" << YAML::Value << c.max_batch_size;
  for (const auto& [key, tensors] : {std::pair{"inputs", &c.inputs}, std::pair{"outputs", &c.outputs}}) {
    out << YAML::Key << key << YAML::Value << YAML::BeginSeq;
    for (const TensorSpec& t : *tensors) {
      out << YAML::Flow << YAML::BeginMap << YAML::Key << "name" << YAML::Value << t.name
          << YAML::Key << "datatype" << YAML::Value << std::string(DataTypeName(t.datatype))
          << YAML::Key << "shape" << YAML::Value << YAML::Flow << t.shape;
      if (!t.reshape.empty()) {
        out << YAML::Key << "reshape" << YAML::Value << YAML::Flow << YAML::BeginMap << YAML::Key << "shape"
            << YAML::Value << YAML::Flow << t.reshape << YAML::EndMap;
      }
      if (t.optional) out << YAML::Key << "optional" << YAML::Value << true;
      if (t.datatype == DataType::kBytes && t.max_element_bytes != TensorSpec().max_element_bytes) {
        out << YAML::Key << "max_element_bytes" << YAML::Value << t.max_element_bytes;
      }
      out << YAML::EndMap;
    }
    out << YAML::EndSeq;
  }
  if (!c.shape_buckets.empty()) out << YAML::Key << "shape_buckets" << YAML::Value << YAML::Flow << c.shape_buckets;
  if (c.accuracy) out << YAML::Key << "accuracy" << YAML::Value << absl::StrFormat("%.6g", *c.accuracy);
  if (c.parameters) out << YAML::Key << "parameters" << YAML::Value << *c.parameters;
  if (c.latency_objective_ms) {
    out << YAML::Key << "latency_objective_ms" << YAML::Value << absl::StrFormat("%g", *c.latency_objective_ms);
  }
  if (c.load_ms) out << YAML::Key << "load_ms" << YAML::Value << absl::StrFormat("%.3f", *c.load_ms);
  if (c.max_queue_delay_us || c.priority_levels > 0 || c.default_queue_policy) {
    out << YAML::Key << "dynamic_batching" << YAML::Value << YAML::Flow << YAML::BeginMap;
    if (c.max_queue_delay_us) out << YAML::Key << "max_queue_delay_microseconds" << YAML::Value << *c.max_queue_delay_us;
    if (c.priority_levels > 0) {
      out << YAML::Key << "priority_levels" << YAML::Value << c.priority_levels << YAML::Key
          << "default_priority_level" << YAML::Value << c.default_priority_level;
    }
    auto policy = [&out](const QueuePolicy& p) {
      out << YAML::BeginMap << YAML::Key << "timeout_action" << YAML::Value << (p.delay ? "DELAY" : "REJECT")
          << YAML::Key << "default_timeout_microseconds" << YAML::Value << p.default_timeout_us << YAML::Key
          << "allow_timeout_override" << YAML::Value << p.allow_timeout_override << YAML::Key << "max_queue_size"
          << YAML::Value << p.max_queue_size << YAML::EndMap;
    };
    if (c.default_queue_policy) {
      out << YAML::Key << "default_queue_policy" << YAML::Value;
      policy(*c.default_queue_policy);
    }
    if (!c.priority_queue_policy.empty()) {
      out << YAML::Key << "priority_queue_policy" << YAML::Value << YAML::BeginMap;
      for (const auto& [level, p] : c.priority_queue_policy) {
        out << YAML::Key << level << YAML::Value;
        policy(p);
      }
      out << YAML::EndMap;
    }
    out << YAML::EndMap;
  }
  if (!c.profiles.empty()) {
    out << YAML::Key << "profiles" << YAML::Value << YAML::BeginMap;
    for (const auto& [kind, p] : c.profiles) {
      // Latencies in µs with 3 decimals: exact to the nanosecond.
      std::vector<int> batch;
      std::vector<std::string> latency_us;
      for (const ProfilePoint& pt : p.points()) {
        batch.push_back(pt.batch);
        latency_us.push_back(absl::StrFormat("%.3f", ToMicros(pt.latency)));
      }
      out << YAML::Key << kind << YAML::Value << YAML::BeginMap;
      out << YAML::Key << "batch" << YAML::Value << YAML::Flow << batch;
      out << YAML::Key << "latency_us" << YAML::Value << YAML::Flow << latency_us;
      out << YAML::Key << "alpha_us" << YAML::Value << absl::StrFormat("%.3f", p.fit().alpha_ns / 1e3);
      out << YAML::Key << "beta_us" << YAML::Value << absl::StrFormat("%.3f", p.fit().beta_ns / 1e3);
      out << YAML::EndMap;
    }
    out << YAML::EndMap;
  }
  if (c.parity) {
    out << YAML::Key << "parity" << YAML::Value << YAML::Flow << YAML::BeginMap << YAML::Key << "deployed"
        << YAML::Value << c.parity->deployed << YAML::Key << "k" << YAML::Value << c.parity->k << YAML::Key
        << "encoder" << YAML::Value << std::string(ParityEncoderName(c.parity->encoder)) << YAML::EndMap;
  }
  if (!c.steps.empty()) {
    out << YAML::Key << "ensemble_scheduling" << YAML::Value << YAML::BeginMap << YAML::Key << "step" << YAML::Value
        << YAML::BeginSeq;
    for (const EnsembleStep& s : c.steps) {
      out << YAML::Flow << YAML::BeginMap << YAML::Key << "model_name" << YAML::Value << s.model_name << YAML::Key
          << "model_version" << YAML::Value << s.model_version;
      for (const auto& [key, map] : {std::pair{"input_map", &s.input_map}, std::pair{"output_map", &s.output_map}}) {
        out << YAML::Key << key << YAML::Value << YAML::Flow << YAML::BeginMap;
        for (const auto& [from, to] : *map) out << YAML::Key << from << YAML::Value << to;
        out << YAML::EndMap;
      }
      if (s.route) EmitRoute(out, "route", *s.route);
      out << YAML::EndMap;
    }
    out << YAML::EndSeq;
    if (c.early_exit) EmitRoute(out, "early_exit", *c.early_exit);
    if (!c.merge.empty()) out << YAML::Key << "merge" << YAML::Value << c.merge;
    out << YAML::EndMap;
  }
  if (const std::optional<SequenceBatching>& q = c.sequence_batching) {
    out << YAML::Key << "sequence_batching" << YAML::Value << YAML::BeginMap << YAML::Key
        << "max_sequence_idle_microseconds" << YAML::Value << q->max_sequence_idle_us << YAML::Key << "state"
        << YAML::Value << YAML::BeginSeq << YAML::Flow << YAML::BeginMap << YAML::Key << "input_name"
        << YAML::Value << q->state_input << YAML::Key << "output_name" << YAML::Value << q->state_output
        << YAML::Key << "data_type" << YAML::Value << "TYPE_FP32" << YAML::Key << "dims" << YAML::Value
        << YAML::Flow << q->state_shape << YAML::EndMap << YAML::EndSeq << YAML::EndMap;
  }
  if (!c.model_state_shape.empty()) {
    out << YAML::Key << "model_state" << YAML::Value << YAML::Flow << YAML::BeginMap << YAML::Key << "dims"
        << YAML::Value << YAML::Flow << c.model_state_shape << YAML::EndMap;
  }
  if (!c.stage_hashes.empty()) out << YAML::Key << "stage_hashes" << YAML::Value << YAML::Flow << c.stage_hashes;
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

const QueuePolicy* ModelConfig::QueuePolicyOf(int64_t level) const {
  if (auto it = priority_queue_policy.find(level); it != priority_queue_policy.end()) return &it->second;
  return default_queue_policy ? &*default_queue_policy : nullptr;
}

}  // namespace tutti
