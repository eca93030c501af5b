#include "tutti/serving/inference_engine.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace tutti {

absl::Status CheckSubmission(const ClusterSpec& spec, const std::vector<ModelShape>& shapes, ModelId model,
                             size_t input_size, Duration objective) {
  if (model < 0 || model >= static_cast<ModelId>(spec.models.size())) {
    return absl::NotFoundError(absl::StrCat("unknown model id ", model));
  }
  if (static_cast<int64_t>(input_size) != shapes[model].input_elements) {
    return absl::InvalidArgumentError(absl::StrCat("model '", spec.models[model].name, "' takes ",
                                                   shapes[model].input_elements, " input values, got ", input_size));
  }
  if (objective < 0) return absl::InvalidArgumentError("the latency objective must not be negative");
  return absl::OkStatus();
}

absl::Status InferenceEngine::SubmitInSequence(ModelId model, SequenceRef sequence, std::vector<float> input,
                                               Duration objective, InferenceCallback done) {
  if (sequence.id != 0) return absl::InvalidArgumentError("this server keeps no sequences");
  return Submit(model, std::move(input), objective, std::move(done));
}

absl::Status DroppedError(const ClusterSpec& spec, ModelId model) {
  return absl::DeadlineExceededError(absl::StrCat("the latency objective of this '", spec.models[model].name,
                                                  "' request cannot be met; it was dropped before execution"));
}

}  // namespace tutti
