#include "tutti/models/evaluate.h"

#include <algorithm>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "tutti/core/status_macros.h"
#include "tutti/repository/tensor_record.h"

namespace tutti {

std::vector<int> ArgmaxRows(const std::vector<float>& scores, int64_t classes) {
  std::vector<int> out;
  for (size_t i = 0; i + classes <= scores.size(); i += classes) {
    auto row = scores.begin() + i;
    out.push_back(static_cast<int>(std::max_element(row, row + classes) - row));
  }
  return out;
}

namespace {

// A stateful model (its stateless form): each image read as a sequence of
// steps of the model's input size, the state carried from step to step
// through TorchModel::Run; the last step's output classifies it.
absl::StatusOr<double> EvaluateSequenceAccuracy(TorchModel& model, const ImageSet& set, int batch_size) {
  const int64_t state = model.config().sequence_batching->StateElements();
  const int64_t step = model.input_elements() - state, classes = model.output_elements() - state;
  if (step <= 0 || set.image_size() % step != 0) {
    return absl::InvalidArgumentError(absl::StrCat("model '", model.config().name, "' reads ", step,
                                                   " values per step, which do not divide images of ",
                                                   set.image_size()));
  }
  batch_size = std::clamp(batch_size, 1, model.config().max_batch_size);
  int64_t correct = 0;
  std::vector<float> in, out;
  for (int64_t begin = 0; begin < set.size(); begin += batch_size) {
    const int n = static_cast<int>(std::min<int64_t>(batch_size, set.size() - begin));
    const std::vector<float> pixels = set.ToFloat(begin, n);
    std::vector<float> h(n * state, 0.0f);
    for (int64_t at = 0; at < set.image_size(); at += step) {
      in.clear();
      for (int i = 0; i < n; ++i) {
        const float* x = pixels.data() + i * set.image_size() + at;
        in.insert(in.end(), x, x + step);
        in.insert(in.end(), h.begin() + i * state, h.begin() + (i + 1) * state);
      }
      TUTTI_RETURN_IF_ERROR(model.Run(in, n, &out));
      for (int i = 0; i < n; ++i) {
        std::copy_n(out.begin() + i * (classes + state) + classes, state, h.begin() + i * state);
      }
    }
    for (int i = 0; i < n; ++i) {
      auto row = out.begin() + i * (classes + state);
      correct += std::max_element(row, row + classes) - row == set.labels[begin + i];
    }
  }
  return static_cast<double>(correct) / static_cast<double>(set.size());
}

// A model of raw pixels: one UINT8 input of an image's size, its first
// output the logits (FP32).
absl::StatusOr<double> EvaluatePixelAccuracy(TorchModel& model, const ImageSet& set, int batch_size) {
  const ModelConfig& c = model.config();
  if (c.inputs.size() != 1 || c.inputs[0].datatype != DataType::kUint8 ||
      c.inputs[0].ElementCount() != set.image_size() || c.outputs[0].datatype != DataType::kFp32) {
    return absl::InvalidArgumentError(absl::StrCat("model '", c.name, "' is not a classifier of one UINT8 image "
                                                   "of ", set.image_size(), " pixels with FP32 logits"));
  }
  batch_size = std::clamp(batch_size, 1, c.max_batch_size);
  int64_t correct = 0;
  std::vector<float> in, out;
  for (int64_t begin = 0; begin < set.size(); begin += batch_size) {
    const int n = static_cast<int>(std::min<int64_t>(batch_size, set.size() - begin));
    in.clear();
    const std::string pixels(reinterpret_cast<const char*>(set.image(begin)), n * set.image_size());
    PackRecords(c.inputs, {pixels}, n, &in);
    TUTTI_RETURN_IF_ERROR(model.Run(in, n, &out));
    const std::string logits = UnpackRecords(c.outputs, out, n)[0];
    std::vector<float> scores(logits.size() / sizeof(float));
    std::memcpy(scores.data(), logits.data(), logits.size());
    const std::vector<int> pred = ArgmaxRows(scores, c.outputs[0].ElementCount());
    for (int i = 0; i < n; ++i) correct += pred[i] == set.labels[begin + i];
  }
  return static_cast<double>(correct) / static_cast<double>(set.size());
}

}  // namespace

absl::StatusOr<double> EvaluateAccuracy(TorchModel& model, const ImageSet& set, int batch_size) {
  if (set.size() == 0) return absl::InvalidArgumentError("empty evaluation set");
  if (model.config().sequence_batching) return EvaluateSequenceAccuracy(model, set, batch_size);
  if (!IsPlainFp32(model.config().inputs)) return EvaluatePixelAccuracy(model, set, batch_size);
  // A compute-then-update model's items carry a label after the pixels: none.
  const bool labelled = !model.config().model_state_shape.empty();
  if (model.input_elements() != set.image_size() + (labelled ? 1 : 0)) {
    return absl::InvalidArgumentError(absl::StrCat("model '", model.config().name, "' takes ",
                                                   model.input_elements(), " values per item, images have ",
                                                   set.image_size()));
  }
  batch_size = std::clamp(batch_size, 1, model.config().max_batch_size);
  int64_t correct = 0;
  std::vector<float> out;
  for (int64_t begin = 0; begin < set.size(); begin += batch_size) {
    const int n = static_cast<int>(std::min<int64_t>(batch_size, set.size() - begin));
    std::vector<float> in = set.ToFloat(begin, n);
    if (labelled) {
      std::vector<float> with(n * (set.image_size() + 1), -1.0f);
      for (int i = 0; i < n; ++i) std::copy_n(in.begin() + i * set.image_size(), set.image_size(), with.begin() + i * (set.image_size() + 1));
      in = std::move(with);
    }
    TUTTI_RETURN_IF_ERROR(model.Run(in, n, &out));
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
