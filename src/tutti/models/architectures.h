// Tutti's built-in model architectures for Fashion-MNIST (28×28 grayscale,
// 10 classes), written with libtorch's C++ API:
//
//   mlp           ParM's MLP: 784-200-100-10 with ReLU (ParM §5, footnote 2).
//   lenet5        LeNet-5 (LeCun et al. 1998) with ReLU and max pooling.
//   resnet_small  A small residual network: a 16-channel stem, three basic
//                 blocks of 16/32/64 channels, global average pooling.
//   online_linear A compute-then-update model: softmax regression on the
//                 pixels whose weights are its state; each batch is answered
//                 with the current weights, then updates them by one SGD step
//                 on its items' labels (each item: 784 pixels, then its label
//                 or -1). Its forward ignores the label column.
//   calibrated_lenet5
//                 lenet5 served on raw UINT8 pixels [N, 28, 28], answering
//                 with its logits and a calibrated confidence (TypedNet).
//   gru_rows      A stateful model: a GRU (64 hidden) that reads an image 4
//                 rows per step, 7 steps, and classifies it from its last
//                 hidden state. Its forward is one step: [N, 4·28 + 64]
//                 (the rows, then the state) → [N, 10 + 64] (logits, then
//                 the new state); ClassifyImages unrolls it over images.
//
// Every architecture takes FP32 images [N, 1, 28, 28] with pixel values in
// [0, 1], normalizes them itself, and returns logits [N, 10], so clients send
// plain pixels and parity encoders (ParM) can sum images directly.
//
// This header includes libtorch: include it only from torch translation units.
#ifndef TUTTI_MODELS_ARCHITECTURES_H_
#define TUTTI_MODELS_ARCHITECTURES_H_

#include <torch/torch.h>

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tutti/repository/model_config.h"

namespace tutti {

// A built-in network: a torch module whose forward maps images to logits,
// as a sequence of stages (its layers in forward order; stage 0 takes the
// images, each later stage the previous one's output), so that networks
// with identical leading stages can run those once for all of them (Nexus
// §6.3's prefix batching; see StageHashes).
class BuiltinNetImpl : public torch::nn::Module {
 public:
  // The top-level submodules (register_module names) each stage uses, by stage.
  virtual std::vector<std::vector<std::string>> StageModules() const = 0;
  // Runs stages [begin, end) on `x`. REQUIRES: 0 <= begin <= end <= stages.
  virtual torch::Tensor ForwardStages(torch::Tensor x, int begin, int end) = 0;

  int stages() const { return static_cast<int>(StageModules().size()); }
  torch::Tensor forward(torch::Tensor images) { return ForwardStages(std::move(images), 0, stages()); }
};

// A fresh, randomly initialised network (torch's default initialisation,
// seeded by torch::manual_seed). InvalidArgument for an unknown name.
absl::StatusOr<std::shared_ptr<BuiltinNetImpl>> MakeBuiltinNet(const std::string& architecture);

// A built-in network served with typed tensors (its config's, not one FP32
// input and output; trainer.h BuiltinModelConfig): its forward above
// trains it on FP32 images, ForwardTyped serves it. Its outputs carry a
// confidence scaled by a fitted temperature (CalibrateBuiltinModel).
class TypedNet {
 public:
  virtual ~TypedNet() = default;
  // The config's inputs, in order, to its outputs, in order.
  virtual std::vector<torch::Tensor> ForwardTyped(const std::vector<torch::Tensor>& inputs) = 0;
  // The temperature its confidence divides the logits by, [1].
  virtual torch::Tensor& temperature() = 0;
};

// A compute-then-update network (online learning; HAMS §II-B): its state
// is its weights, flat. Its items carry their label after their input
// (< 0: none).
class OnlineNet {
 public:
  virtual ~OnlineNet() = default;
  virtual int64_t StateElements() = 0;
  // The loaded weights, flat.
  virtual torch::Tensor State() = 0;
  // Logits for items `x` [N, input + 1] computed with `state`; then one
  // SGD step on the labelled items, whose weights go to `next`.
  virtual torch::Tensor ComputeThenUpdate(const torch::Tensor& x, const torch::Tensor& state, torch::Tensor* next) = 0;
};

inline constexpr int kGruRowsPerStep = 4;
inline constexpr int kGruHidden = 64;

// Whether `architecture` is a stateful one (a step of a sequence).
bool IsSequenceArchitecture(const std::string& architecture);

// Logits [N, 10] for images [N, 1, 28, 28]: the network's forward, or for
// a sequence architecture its steps over the image from a zero state.
torch::Tensor ClassifyImages(BuiltinNetImpl& net, const std::string& architecture, const torch::Tensor& images);

int64_t CountParameters(const torch::nn::Module& module);

// Per stage of `net`: a hash (16 hex digits) of the architecture's name for
// it and of its parameters' and buffers' names, shapes and values. Two
// networks whose first k hashes agree compute the same first k stages.
std::vector<std::string> StageHashes(BuiltinNetImpl& net);

}  // namespace tutti

#endif  // TUTTI_MODELS_ARCHITECTURES_H_
