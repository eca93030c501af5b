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

absl::StatusOr<double> EvaluateRoutedAccuracy(TorchModel& router, const std::vector<RoutedSpecialist>& specialists,
                                              const std::vector<int64_t>& exit, const ImageSet& set, int batch_size) {
  if (set.size() == 0) return absl::InvalidArgumentError("empty evaluation set");
  batch_size = std::clamp(batch_size, 1, router.config().max_batch_size);
  for (const RoutedSpecialist& s : specialists) batch_size = std::min(batch_size, s.model->config().max_batch_size);
  auto in = [](const std::vector<int64_t>& classes, int c) {
    return std::find(classes.begin(), classes.end(), c) != classes.end();
  };
  int64_t correct = 0;
  std::vector<float> out;
  for (int64_t begin = 0; begin < set.size(); begin += batch_size) {
    const int n = static_cast<int>(std::min<int64_t>(batch_size, set.size() - begin));
    const std::vector<float> pixels = set.ToFloat(begin, n);
    TUTTI_RETURN_IF_ERROR(router.Run(pixels, n, &out));
    const std::vector<int> chosen = ArgmaxRows(out, router.output_elements());
    std::vector<int> answer(n, -1);
    for (int i = 0; i < n; ++i) {
      if (in(exit, chosen[i])) answer[i] = chosen[i];
    }
    for (const RoutedSpecialist& s : specialists) {
      std::vector<int> rows;
      std::vector<float> batch;
      for (int i = 0; i < n; ++i) {
        if (answer[i] >= 0 || !in(s.classes, chosen[i])) continue;
        rows.push_back(i);
        batch.insert(batch.end(), pixels.begin() + i * set.image_size(), pixels.begin() + (i + 1) * set.image_size());
      }
      if (rows.empty()) continue;
      TUTTI_RETURN_IF_ERROR(s.model->Run(batch, static_cast<int>(rows.size()), &out));
      const std::vector<int> pred = ArgmaxRows(out, s.model->output_elements());
      for (size_t r = 0; r < rows.size(); ++r) answer[rows[r]] = pred[r];
    }
    for (int i = 0; i < n; ++i) correct += answer[i] == set.labels[begin + i];
  }
  return static_cast<double>(correct) / static_cast<double>(set.size());
}

absl::StatusOr<double> EvaluateMeanAccuracy(const std::vector<TorchModel*>& models, const ImageSet& set,
                                            int batch_size) {
  if (set.size() == 0 || models.empty()) return absl::InvalidArgumentError("no models or an empty evaluation set");
  for (const TorchModel* m : models) batch_size = std::clamp(batch_size, 1, m->config().max_batch_size);
  int64_t correct = 0;
  std::vector<float> out, sum;
  for (int64_t begin = 0; begin < set.size(); begin += batch_size) {
    const int n = static_cast<int>(std::min<int64_t>(batch_size, set.size() - begin));
    const std::vector<float> pixels = set.ToFloat(begin, n);
    sum.clear();
    for (TorchModel* m : models) {
      TUTTI_RETURN_IF_ERROR(m->Run(pixels, n, &out));
      if (sum.empty()) {
        sum = out;
      } else {
        for (size_t k = 0; k < sum.size(); ++k) sum[k] += out[k];
      }
    }
    for (float& v : sum) v /= static_cast<float>(models.size());  // as the graph computes it
    const std::vector<int> pred = ArgmaxRows(sum, models[0]->output_elements());
    for (int i = 0; i < n; ++i) correct += pred[i] == set.labels[begin + i];
  }
  return static_cast<double>(correct) / static_cast<double>(set.size());
}

}  // namespace tutti
