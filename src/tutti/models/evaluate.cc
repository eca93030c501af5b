#include "tutti/models/evaluate.h"

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "tutti/core/status_macros.h"

namespace tutti {

std::vector<int> ArgmaxRows(const std::vector<float>& scores, int64_t classes) {
  std::vector<int> out;
  for (size_t i = 0; i + classes <= scores.size(); i += classes) {
    auto row = scores.begin() + i;
    out.push_back(static_cast<int>(std::max_element(row, row + classes) - row));
  }
  return out;
}

absl::StatusOr<double> EvaluateAccuracy(TorchModel& model, const ImageSet& set, int batch_size) {
  if (set.size() == 0) return absl::InvalidArgumentError("empty evaluation set");
  if (model.input_elements() != set.image_size()) {
    return absl::InvalidArgumentError(absl::StrCat("model '", model.config().name, "' takes ",
                                                   model.input_elements(), " values per item, images have ",
                                                   set.image_size()));
  }
  batch_size = std::clamp(batch_size, 1, model.config().max_batch_size);
  int64_t correct = 0;
  std::vector<float> out;
  for (int64_t begin = 0; begin < set.size(); begin += batch_size) {
    const int n = static_cast<int>(std::min<int64_t>(batch_size, set.size() - begin));
    TUTTI_RETURN_IF_ERROR(model.Run(set.ToFloat(begin, n), n, &out));
    std::vector<int> pred = ArgmaxRows(out, model.output_elements());
    for (int i = 0; i < n; ++i) correct += pred[i] == set.labels[begin + i];
  }
  return static_cast<double>(correct) / static_cast<double>(set.size());
}

}  // namespace tutti
