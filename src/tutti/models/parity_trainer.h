// ParM parity models (ParM, SOSP 2019 §4.4, §5): training them in C++ and
// measuring how well they rebuild unavailable predictions.
//
// Training: each sample is k random training images X_1..X_k encoded into a
// parity query P (coding/parity_codec.h); its label is Σ F(X_i), the sum of
// the deployed model's outputs; the parity model has the deployed model's
// architecture and is fitted with MSE, Adam (learning rate 0.001) and an L2
// penalty of 1e-5 — the paper's settings.
//
// Evaluation: the test set is cut into coding groups of k consecutive images;
// for every group and position j the prediction is rebuilt as
// F_P(P) − Σ_{i≠j} F(X_i) and scored against the label of X_j.
//
// This header is torch-free.
#ifndef TUTTI_MODELS_PARITY_TRAINER_H_
#define TUTTI_MODELS_PARITY_TRAINER_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "tutti/coding/parity_codec.h"
#include "tutti/core/clock.h"
#include "tutti/datasets/fashion_mnist.h"
#include "tutti/models/torch_model.h"
#include "tutti/models/trainer.h"

namespace tutti {

struct ParityTrainOptions {
  int k = 2;
  ParityEncoder encoder = ParityEncoder::kSum;
  int epochs = 0;              // 0: DefaultParityEpochs(architecture)
  int batch_size = 64;
  double learning_rate = 1e-3;
  double weight_decay = 1e-5;  // L2 penalty
  uint64_t seed = 1;
  int progress_updates_per_epoch = 5;
};

int DefaultParityEpochs(const std::string& architecture);

// Accuracy of a deployed model and of ParM's reconstructions for it.
struct ParityAccuracy {
  int64_t groups = 0;       // coding groups of k test images
  int64_t queries = 0;      // groups × k
  double available = 0;     // A_a: the deployed model's accuracy on those queries
  double degraded = 0;      // A_d: accuracy of the reconstructions
  // A_o(f) = (1 − f)·A_a + f·A_d when a fraction f of predictions is unavailable.
  double Overall(double f) const { return (1 - f) * available + f * degraded; }
};

// The config of the parity model of `deployed` (same architecture, tensors
// and max batch size), before training: no accuracy, profiles or objective.
// REQUIRES: deployed is a builtin model.
ModelConfig ParityModelConfig(const ModelConfig& deployed, const std::string& name, const ParitySpec& spec);

// Trains a parity model for `deployed` (a builtin model, run through its
// TorchModel to make labels) on `train`, reports progress with the degraded
// accuracy on `eval` at each epoch end (as eval_accuracy), and saves the
// weights to `weights_path`. Samples per epoch: train.size().
absl::StatusOr<TrainResult> TrainParityModel(const ParityTrainOptions& options, TorchModel& deployed,
                                             const ImageSet& train, const ImageSet& eval,
                                             const std::string& weights_path, const Clock& clock,
                                             const TrainProgressCallback& progress);

// Scores `parity` (trained with `codec`) against `deployed` on `set`, both run
// through TorchModel::Run as the executors run them. InvalidArgument if the
// set has fewer than k images or the models' shapes disagree with it.
absl::StatusOr<ParityAccuracy> EvaluateParity(TorchModel& deployed, TorchModel& parity, const ParityCodec& codec,
                                              const ImageSet& set);

}  // namespace tutti

#endif  // TUTTI_MODELS_PARITY_TRAINER_H_
