// Tutti's built-in model architectures for Fashion-MNIST (28×28 grayscale,
// 10 classes), written with libtorch's C++ API:
//
//   mlp           ParM's MLP: 784-200-100-10 with ReLU (ParM §5, footnote 2).
//   lenet5        LeNet-5 (LeCun et al. 1998) with ReLU and max pooling.
//   resnet_small  A small residual network: a 16-channel stem, three basic
//                 blocks of 16/32/64 channels, global average pooling.
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

int64_t CountParameters(const torch::nn::Module& module);

// Per stage of `net`: a hash (16 hex digits) of the architecture's name for
// it and of its parameters' and buffers' names, shapes and values. Two
// networks whose first k hashes agree compute the same first k stages.
std::vector<std::string> StageHashes(BuiltinNetImpl& net);

}  // namespace tutti

#endif  // TUTTI_MODELS_ARCHITECTURES_H_
