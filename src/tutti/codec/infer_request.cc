#include "tutti/codec/infer_request.h"

#include "tutti/core/fnv_hash.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "tutti/core/user_text.h"

namespace tutti {
namespace {

absl::Status Bad(absl::string_view what) { return absl::InvalidArgumentError(what); }

std::string ShapeText(const std::vector<int64_t>& shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

std::string BatchShapeText(const ModelConfig& config, int batch) {
  return absl::StrCat("[", batch, ", ", absl::StrJoin(config.inputs[0].shape, ", "), "]");
}

}  // namespace

absl::Status CheckInputCount(const ModelConfig& config, size_t count) {
  if (count == 1) return absl::OkStatus();
  return Bad(absl::StrCat("model '", config.name, "' takes exactly one input ('", config.inputs[0].name, "'), got ",
                          count));
}

absl::StatusOr<int> CheckInputTensor(const ModelConfig& config, absl::string_view name, absl::string_view datatype,
                                     const std::vector<int64_t>& shape) {
  const TensorSpec& spec = config.inputs[0];
  if (name != spec.name) {
    return Bad(absl::StrCat("unexpected input ", QuoteUserText(name), "; model '", config.name, "' takes input '",
                            spec.name, "'"));
  }
  return CheckTensorShape(config, spec, datatype, shape);
}

absl::StatusOr<int> CheckTensorShape(const ModelConfig& config, const TensorSpec& spec, absl::string_view datatype,
                                     const std::vector<int64_t>& shape) {
  if (datatype != DataTypeName(spec.datatype)) {
    return Bad(absl::StrCat("input '", spec.name, "' has datatype ", UserText(datatype), "; the model expects ",
                            DataTypeName(spec.datatype)));
  }
  for (int64_t d : shape) {
    if (d < 1) {
      return Bad(absl::StrCat("input '", spec.name, "' has shape ", ShapeText(shape),
                              ": dimensions must be positive integers"));
    }
  }
  if (shape.size() != spec.shape.size() + 1 ||
      !std::equal(shape.begin() + 1, shape.end(), spec.shape.begin(),
                  [](int64_t got, int64_t want) { return want == -1 || got == want; })) {
    return Bad(absl::StrCat("input '", spec.name, "' has shape ", ShapeText(shape), "; expected [N, ",
                            absl::StrJoin(spec.shape, ", "), "]"));
  }
  if (shape[0] > config.max_batch_size) {
    return Bad(absl::StrCat("input '", spec.name, "': batch of ", shape[0], " exceeds model '", config.name,
                            "' max_batch_size ", config.max_batch_size));
  }
  return static_cast<int>(shape[0]);
}

absl::Status CheckValueCount(const ModelConfig& config, int batch, int64_t values) {
  const int64_t needed = batch * config.inputs[0].ElementCount();
  if (values == needed) return absl::OkStatus();
  return Bad(absl::StrCat("input '", config.inputs[0].name, "' has ", values, " values; shape ",
                          BatchShapeText(config, batch), " needs ", needed));
}

absl::Status CheckByteCount(const ModelConfig& config, int batch, int64_t bytes) {
  const int64_t needed = batch * config.inputs[0].ElementCount() * static_cast<int64_t>(sizeof(float));
  if (bytes == needed) return absl::OkStatus();
  return Bad(absl::StrCat("input '", config.inputs[0].name, "' has ", bytes, " bytes of binary data; shape ",
                          BatchShapeText(config, batch), " of FP32 needs ", needed));
}

absl::Status CheckOutputName(const ModelConfig& config, absl::string_view name) {
  std::vector<std::string> names;
  for (const TensorSpec& t : config.outputs) {
    if (name == t.name) return absl::OkStatus();
    names.push_back(absl::StrCat("'", t.name, "'"));
  }
  return Bad(absl::StrCat("unknown output ", QuoteUserText(name), "; model '", config.name, "' has output",
                          names.size() > 1 ? "s " : " ", absl::StrJoin(names, ", ")));
}

absl::Status CheckObjective(double objective_ms) {
  // NaN fails both comparisons.
  if (objective_ms >= kMinObjectiveMs && objective_ms <= kMaxObjectiveMs) return absl::OkStatus();
  return Bad(absl::StrFormat("parameter 'latency_objective_ms' must be a positive number of milliseconds, from %g "
                             "(1 us) to %.0f (a day)",
                             kMinObjectiveMs, kMaxObjectiveMs));
}

absl::Status CheckTimeout(bool integer, int64_t timeout_us) {
  if (integer && timeout_us >= 0 && timeout_us <= static_cast<int64_t>(kMaxObjectiveMs) * 1000) {
    return absl::OkStatus();
  }
  return Bad("parameter 'timeout' must be an integer number of microseconds, from 0 (none) to 86400000000 (a day)");
}

absl::Status CheckPriority(bool integer) {
  if (integer) return absl::OkStatus();
  return Bad("parameter 'priority' must be a non-negative integer (1: the highest level; 0: the model's default)");
}

int PriorityLevel(const ModelConfig& config, uint64_t priority) {
  if (config.priority_levels == 0) return 0;
  const uint64_t level = priority == 0 || priority > static_cast<uint64_t>(config.priority_levels)
                             ? static_cast<uint64_t>(config.default_priority_level)
                             : priority;
  return static_cast<int>(level) - 1;
}

std::string ConfigDataTypeName(DataType type) {
  return type == DataType::kBytes ? "TYPE_STRING" : absl::StrCat("TYPE_", DataTypeName(type));
}

absl::string_view KservePlatformName(const ModelConfig& config) {
  switch (config.platform) {
    case Platform::kTorchScript:
      return "pytorch_torchscript";
    case Platform::kOnnx:
      return "onnxruntime_onnx";
    case Platform::kEmulated:
      return "tutti_emulated";
    case Platform::kEnsemble:
      return "ensemble";
    case Platform::kBuiltin:
      break;
  }
  return "tutti_builtin";
}

absl::StatusOr<uint64_t> SequenceIdOfInteger(int64_t value, bool negative) {
  if (negative || value < 0) {
    return absl::InvalidArgumentError("parameter 'sequence_id' must be an unsigned integer below 2^63 or a string");
  }
  return static_cast<uint64_t>(value);
}

uint64_t SequenceIdOfString(absl::string_view value) {
  if (value.empty()) return 0;
  return FnvMix(kFnvOffsetBasis, value.data(), value.size()) | (uint64_t{1} << 63);
}

absl::Status CheckSequenceBatch(const InferRequest& request) {
  if (request.sequence.id == 0 || request.batch == 1) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("a request of a sequence carries one item (shape [1, …]), got ",
                                                 request.batch));
}

}  // namespace tutti
