// Accuracy of a loaded model on a labelled image set, computed through the
// same TorchModel::Run path the executors serve with, so the number recorded
// in a model's config is the accuracy of the served artifact.
#ifndef TUTTI_MODELS_EVALUATE_H_
#define TUTTI_MODELS_EVALUATE_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "tutti/datasets/fashion_mnist.h"
#include "tutti/models/torch_model.h"

namespace tutti {

// Index of the largest of each row of `scores` (rows of `classes` values).
std::vector<int> ArgmaxRows(const std::vector<float>& scores, int64_t classes);

// Fraction of `set` whose argmax output equals the label, in batches of
// `batch_size` (<= the model's max batch size). A stateful model reads each
// image as a sequence of steps of its input's size, its state carried from
// step to step, and is judged by its last step's output. A model of raw
// pixels (one UINT8 input) is given the images' bytes and judged by its
// first output.
absl::StatusOr<double> EvaluateAccuracy(TorchModel& model, const ImageSet& set, int batch_size);

// A routing graph offline (the shape of the demo's fashion_router): the
// router classifies each image; an image whose class is in `exit` is
// answered by the router, any other by the specialist whose `classes` hold
// its class (none: counted wrong, as the served graph answers it with an
// error). The fraction answered with the label.
struct RoutedSpecialist {
  TorchModel* model;
  std::vector<int64_t> classes;
};
absl::StatusOr<double> EvaluateRoutedAccuracy(TorchModel& router, const std::vector<RoutedSpecialist>& specialists,
                                              const std::vector<int64_t>& exit, const ImageSet& set, int batch_size);

// Side-by-side models whose outputs are averaged (a graph with merge:
// mean): the fraction of `set` whose mean output's argmax is the label.
absl::StatusOr<double> EvaluateMeanAccuracy(const std::vector<TorchModel*>& models, const ImageSet& set,
                                            int batch_size);

}  // namespace tutti

#endif  // TUTTI_MODELS_EVALUATE_H_
