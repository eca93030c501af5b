// The pieces shared by Tutti's trainers (trainer.cc, parity_trainer.cc): the
// epoch loop with progress reports, image tensors and saving a network.
//
// Internal to src/tutti/models; includes libtorch.
#ifndef TUTTI_MODELS_TRAINING_LOOP_H_
#define TUTTI_MODELS_TRAINING_LOOP_H_

#include <torch/torch.h>

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "tutti/core/clock.h"
#include "tutti/datasets/fashion_mnist.h"
#include "tutti/models/trainer.h"

namespace tutti::internal {

// What one minibatch contributed: its summed loss, correct predictions and size.
struct StepResult {
  double loss_sum = 0;
  int64_t correct = 0;
  int64_t n = 0;
};

struct EpochLoop {
  int epochs = 1;
  int64_t steps_per_epoch = 1;
  int progress_updates_per_epoch = 5;
  std::function<void(int epoch)> begin_epoch;      // optional; 1-based epoch
  std::function<StepResult(int64_t step)> step;    // one minibatch
  std::function<double()> evaluate;                // held-out score at epoch ends
};

// Runs the loop, reporting progress a few times per epoch and at each end
// (with evaluate()), then saves `net` (in eval mode) to `weights_path`.
// Returns per-epoch losses, the final evaluation and the parameter count.
absl::StatusOr<TrainResult> RunEpochsAndSave(const EpochLoop& loop, std::shared_ptr<torch::nn::Module> net,
                                             const std::string& weights_path, const Clock& clock,
                                             const TrainProgressCallback& progress);

// The whole set as FP32 [N, 1, rows, cols] in [0, 1].
torch::Tensor ImagesTensor(const ImageSet& set);


}  // namespace tutti::internal

#endif  // TUTTI_MODELS_TRAINING_LOOP_H_
