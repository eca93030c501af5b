// Training Tutti's built-in architectures on Fashion-MNIST with libtorch.
//
// Adam on cross-entropy with a cosine-annealed learning rate, minibatches shuffled by a seeded generator, so a run
// is reproducible given its options. Progress (epoch, loss, accuracy, ETA) is
// reported through a callback a few times per epoch and at each epoch's end,
// with the held-out accuracy measured then.
//
// This header is torch-free.
#ifndef TUTTI_MODELS_TRAINER_H_
#define TUTTI_MODELS_TRAINER_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tutti/core/clock.h"
#include "tutti/datasets/fashion_mnist.h"
#include "tutti/repository/model_config.h"

namespace tutti {

struct TrainOptions {
  std::string architecture;    // kBuiltinArchitectures
  int epochs = 0;              // 0: DefaultEpochs(architecture)
  int batch_size = 64;
  double learning_rate = 1e-3;
  double weight_decay = 0;     // L2 penalty
  uint64_t seed = 1;
  int progress_updates_per_epoch = 5;
  // Fine-tuning: start from these weights (of the same architecture)
  // instead of a fresh network, and with `last_stage_only` train only the
  // last layer stage, so that the rest stays identical to the start's (the
  // shared trunk of prefix batching, Nexus §6.3).
  std::string init_weights;
  bool last_stage_only = false;
};

struct TrainProgress {
  int epoch = 0;  // 1-based
  int epochs = 0;
  int64_t step = 0;  // minibatches done in this epoch
  int64_t steps_per_epoch = 0;
  double loss = 0;            // mean training loss over this epoch so far
  double train_accuracy = 0;  // over this epoch so far
  double elapsed_s = 0;       // since training started
  double eta_s = 0;           // estimated time to finish all epochs
  bool epoch_end = false;
  double eval_accuracy = -1;  // held-out accuracy; set at epoch ends only
};

struct TrainResult {
  std::vector<double> epoch_loss;  // mean training loss per epoch
  double eval_accuracy = 0;        // held-out accuracy after the last epoch
  int64_t parameters = 0;
  std::vector<std::string> stage_hashes;  // of the saved weights (ModelConfig::stage_hashes)
};

using TrainProgressCallback = std::function<void(const TrainProgress&)>;

// The config of a built-in Fashion-MNIST model before it is measured: input
// "image" FP32 [1, 28, 28] (pixels in [0, 1]), output "logits" FP32 [10],
// task "fashion-mnist"; no accuracy or profile yet. calibrated_lenet5's:
// input "pixels" UINT8 [28, 28], outputs "logits" FP32 [10] and
// "confidence" FP32 [1], task "fashion-mnist-uint8".
ModelConfig BuiltinModelConfig(const std::string& name, const std::string& architecture,
                               int max_batch_size);

// Epochs that reach the README's accuracy floors within about two minutes on
// two cores.
int DefaultEpochs(const std::string& architecture);

// Trains a fresh network on `train`, evaluates on `eval` after each epoch and
// saves the weights to `weights_path` (loadable by TorchModel as platform
// builtin). `clock` times progress reports only. Errors: unknown
// architecture, empty data, bad options, libtorch failures, unwritable path,
// initial weights that cannot be loaded.
absl::StatusOr<TrainResult> TrainBuiltinModel(const TrainOptions& options, const ImageSet& train,
                                              const ImageSet& eval, const std::string& weights_path,
                                              const Clock& clock,
                                              const TrainProgressCallback& progress);

// Temperature scaling (Guo et al. 2017): the temperature T that minimises
// the negative log-likelihood of `held_out`'s labels under softmax(logits /
// T), found by a golden-section search over [0.05, 20], written into the
// saved weights of a network with a confidence output (architectures.h
// TypedNet). Its effect on the held-out images: the mean NLL and the
// expected calibration error (15 bins) at T = 1 and at T.
struct Calibration {
  double temperature = 1;
  double nll_before = 0, nll_after = 0;
  double ece_before = 0, ece_after = 0;
};
absl::StatusOr<Calibration> CalibrateBuiltinModel(const std::string& architecture, const std::string& weights_path,
                                                  const ImageSet& held_out);

}  // namespace tutti

#endif  // TUTTI_MODELS_TRAINER_H_
