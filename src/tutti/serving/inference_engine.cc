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

absl::Status InferenceEngine::SubmitWith(ModelId model, const RequestContext& context, std::vector<float> input,
                                         Duration objective, InferenceCallback done) {
  if (context.sequence.id != 0) return absl::InvalidArgumentError("this server keeps no sequences");
  return Submit(model, std::move(input), objective, std::move(done));
}

absl::Status CancelledError(const ClusterSpec& spec, ModelId model) {
  return absl::CancelledError(absl::StrCat("this '", spec.models[model].name, "' request was cancelled (its client "
                                           "went away or cancelled it, or its timeout passed) before it ran"));
}

absl::Status DroppedError(const ClusterSpec& spec, ModelId model) {
  return absl::DeadlineExceededError(absl::StrCat("the latency objective of this '", spec.models[model].name,
                                                  "' request cannot be met; it was dropped before execution"));
}

}  // namespace tutti
