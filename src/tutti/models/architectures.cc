#include "tutti/models/architectures.h"

#include <atomic>
#include <numeric>
#include <random>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "tutti/core/fnv_hash.h"
#include "tutti/models/torch_model.h"

namespace tutti {
namespace {

namespace nn = torch::nn;

// Fashion-MNIST training-set pixel mean and standard deviation (on [0, 1]).
constexpr double kPixelMean = 0.2860;
constexpr double kPixelStd = 0.3530;

torch::Tensor Normalize(const torch::Tensor& x) { return (x - kPixelMean) / kPixelStd; }

class Mlp final : public BuiltinNetImpl {
 public:
  Mlp()
      : fc1_(register_module("fc1", nn::Linear(784, 200))),
        fc2_(register_module("fc2", nn::Linear(200, 100))),
        fc3_(register_module("fc3", nn::Linear(100, 10))) {}

  std::vector<std::vector<std::string>> StageModules() const override { return {{"fc1"}, {"fc2"}, {"fc3"}}; }
  torch::Tensor ForwardStages(torch::Tensor x, int begin, int end) override {
    for (int i = begin; i < end; ++i) {
      switch (i) {
        case 0: x = torch::relu(fc1_(Normalize(x).flatten(1))); break;
        case 1: x = torch::relu(fc2_(x)); break;
        default: x = fc3_(x);
      }
    }
    return x;
  }

 private:
  nn::Linear fc1_, fc2_, fc3_;
};

class LeNet5 : public BuiltinNetImpl {
 public:
  LeNet5()
      : conv1_(register_module("conv1", nn::Conv2d(nn::Conv2dOptions(1, 6, 5).padding(2)))),
        conv2_(register_module("conv2", nn::Conv2d(nn::Conv2dOptions(6, 16, 5)))),
        fc1_(register_module("fc1", nn::Linear(16 * 5 * 5, 120))),
        fc2_(register_module("fc2", nn::Linear(120, 84))),
        fc3_(register_module("fc3", nn::Linear(84, 10))) {}

  std::vector<std::vector<std::string>> StageModules() const override {
    return {{"conv1"}, {"conv2"}, {"fc1"}, {"fc2"}, {"fc3"}};
  }
  torch::Tensor ForwardStages(torch::Tensor x, int begin, int end) override {
    for (int i = begin; i < end; ++i) {
      switch (i) {
        case 0: x = torch::max_pool2d(torch::relu(conv1_(Normalize(x))), 2); break;     // 6×14×14
        case 1: x = torch::max_pool2d(torch::relu(conv2_(x)), 2).flatten(1); break;     // 16×5×5
        case 2: x = torch::relu(fc1_(x)); break;
        case 3: x = torch::relu(fc2_(x)); break;
        default: x = fc3_(x);
      }
    }
    return x;
  }

 private:
  nn::Conv2d conv1_, conv2_;
  nn::Linear fc1_, fc2_, fc3_;
};

// LeNet-5 trained on FP32 images as usual, served on raw pixels: its input
// UINT8 [N, 28, 28] (the dataset's own bytes), its outputs the logits and
// the calibrated confidence in its top class, max softmax(logits / T) with
// the temperature T fitted after training (a buffer, saved with the
// weights; Guo et al. 2017, "On Calibration of Modern Neural Networks").
class CalibratedLeNet5 final : public LeNet5, public TypedNet {
 public:
  CalibratedLeNet5() : temperature_(register_buffer("temperature", torch::ones({1}))) {}

  std::vector<torch::Tensor> ForwardTyped(const std::vector<torch::Tensor>& inputs) override {
    const torch::Tensor& pixels = inputs.at(0);
    const torch::Tensor logits = forward(pixels.to(torch::kFloat32).div(255.0).unsqueeze(1));
    const torch::Tensor confidence = torch::softmax(logits / temperature_, 1).amax(1, /*keepdim=*/true);
    return {logits, confidence};
  }
  torch::Tensor& temperature() override { return temperature_; }

 private:
  torch::Tensor temperature_;
};

nn::Conv2d Conv3x3(int64_t in, int64_t out, int64_t stride) {
  return nn::Conv2d(nn::Conv2dOptions(in, out, 3).stride(stride).padding(1).bias(false));
}

// The ResNet basic block: two 3×3 convolutions with batch norm and an
// identity (or 1×1 projection) shortcut.
class BasicBlockImpl : public nn::Module {
 public:
  BasicBlockImpl(int64_t in, int64_t out, int64_t stride)
      : conv1_(register_module("conv1", Conv3x3(in, out, stride))),
        bn1_(register_module("bn1", nn::BatchNorm2d(out))),
        conv2_(register_module("conv2", Conv3x3(out, out, 1))),
        bn2_(register_module("bn2", nn::BatchNorm2d(out))) {
    if (stride != 1 || in != out) {
      shortcut_ = register_module(
          "shortcut", nn::Sequential(nn::Conv2d(nn::Conv2dOptions(in, out, 1).stride(stride).bias(false)),
                                     nn::BatchNorm2d(out)));
    }
  }

  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor y = torch::relu(bn1_(conv1_(x)));
    y = bn2_(conv2_(y));
    return torch::relu(y + (shortcut_ ? shortcut_->forward(x) : x));
  }

 private:
  nn::Conv2d conv1_;
  nn::BatchNorm2d bn1_;
  nn::Conv2d conv2_;
  nn::BatchNorm2d bn2_;
  nn::Sequential shortcut_{nullptr};
};
TORCH_MODULE(BasicBlock);

class ResNetSmall final : public BuiltinNetImpl {
 public:
  ResNetSmall()
      : stem_(register_module("stem", Conv3x3(1, 16, 1))),
        bn_(register_module("bn", nn::BatchNorm2d(16))),
        block1_(register_module("block1", BasicBlock(16, 16, 1))),
        block2_(register_module("block2", BasicBlock(16, 32, 2))),
        block3_(register_module("block3", BasicBlock(32, 64, 2))),
        fc_(register_module("fc", nn::Linear(64, 10))) {}

  std::vector<std::vector<std::string>> StageModules() const override {
    return {{"stem", "bn"}, {"block1"}, {"block2"}, {"block3"}, {"fc"}};
  }
  torch::Tensor ForwardStages(torch::Tensor x, int begin, int end) override {
    for (int i = begin; i < end; ++i) {
      switch (i) {
        case 0: x = torch::max_pool2d(torch::relu(bn_(stem_(Normalize(x)))), 2); break;  // 16×14×14
        case 1: x = block1_(x); break;
        case 2: x = block2_(x); break;
        case 3: x = torch::adaptive_avg_pool2d(block3_(x), {1, 1}).flatten(1); break;   // 64
        default: x = fc_(x);
      }
    }
    return x;
  }

 private:
  nn::Conv2d stem_;
  nn::BatchNorm2d bn_;
  BasicBlock block1_, block2_, block3_;
  nn::Linear fc_;
};

std::atomic<bool> g_nondeterminism{false};

// A GRU that reads an image kGruRowsPerStep rows per step (a stateful
// model: sequence_batching). Its one stage maps [N, rows + hidden] — a
// step's pixels and the hidden state — to [N, 10 + hidden]: the logits
// made from the new hidden state, then that state.
class GruRows final : public BuiltinNetImpl {
 public:
  GruRows()
      : cell_(register_module("cell", nn::GRUCell(nn::GRUCellOptions(kGruRowsPerStep * 28, kGruHidden)))),
        fc_(register_module("fc", nn::Linear(kGruHidden, 10))) {}

  std::vector<std::vector<std::string>> StageModules() const override { return {{"cell", "fc"}}; }
  torch::Tensor ForwardStages(torch::Tensor x, int begin, int end) override {
    if (begin == end) return x;
    x = x.flatten(1);
    const int64_t rows = kGruRowsPerStep * 28;
    torch::Tensor h = Cell(Normalize(x.narrow(1, 0, rows)), x.narrow(1, rows, kGruHidden));
    return torch::cat({fc_(h), h}, 1);
  }

 private:
  // GRUCell, with the hidden-to-hidden product summed over blocks in a
  // random order when nondeterminism is injected (float addition is not
  // associative: the bits of the result vary run to run, as a GPU's
  // atomic-add reductions do).
  torch::Tensor Cell(const torch::Tensor& x, const torch::Tensor& h) {
    if (!g_nondeterminism.load(std::memory_order_relaxed)) return cell_(x, h);
    const torch::Tensor& w = cell_->weight_hh;
    constexpr int kBlocks = 16;
    const int64_t width = kGruHidden / kBlocks;
    std::vector<int> order(kBlocks);
    std::iota(order.begin(), order.end(), 0);
    thread_local std::mt19937 rng(std::random_device{}());
    std::shuffle(order.begin(), order.end(), rng);
    torch::Tensor gh = cell_->bias_hh.expand({h.size(0), w.size(0)}).clone();
    for (int b : order) gh = gh + torch::matmul(h.narrow(1, b * width, width), w.narrow(1, b * width, width).t());
    const torch::Tensor gi = torch::addmm(cell_->bias_ih, x, cell_->weight_ih.t());
    const auto i = gi.chunk(3, 1), g = gh.chunk(3, 1);
    const torch::Tensor r = torch::sigmoid(i[0] + g[0]), z = torch::sigmoid(i[1] + g[1]);
    const torch::Tensor n = torch::tanh(i[2] + r * g[2]);
    return (1 - z) * n + z * h;
  }

  nn::GRUCell cell_;
  nn::Linear fc_;
};

// Softmax regression, learning online (OnlineNet).
class OnlineLinear final : public BuiltinNetImpl, public OnlineNet {
 public:
  OnlineLinear() : fc_(register_module("fc", nn::Linear(784, 10))) {}

  std::vector<std::vector<std::string>> StageModules() const override { return {{"fc"}}; }
  torch::Tensor ForwardStages(torch::Tensor x, int begin, int end) override {
    if (begin == end) return x;
    return fc_(Normalize(x.flatten(1).narrow(1, 0, 784)));
  }

  int64_t StateElements() override { return 10 * 784 + 10; }
  torch::Tensor State() override { return torch::cat({fc_->weight.flatten(), fc_->bias}).detach(); }
  torch::Tensor ComputeThenUpdate(const torch::Tensor& x, const torch::Tensor& state, torch::Tensor* next) override {
    const torch::Tensor w = state.narrow(0, 0, 7840).view({10, 784}), b = state.narrow(0, 7840, 10);
    const torch::Tensor pixels = Normalize(x.narrow(1, 0, 784)), labels = x.select(1, 784).to(torch::kInt64);
    const torch::Tensor logits = torch::addmm(b, pixels, w.t());  // the compute stage: the batch's outputs
    const torch::Tensor rows = labels.ge(0).nonzero().squeeze(1);
    if (rows.numel() == 0) {
      *next = state.clone();
      return logits;
    }
    // The update stage: one SGD step on the cross-entropy of the labelled items.
    const torch::Tensor g = (torch::softmax(logits.index_select(0, rows), 1) -
                             torch::one_hot(labels.index_select(0, rows), 10).to(torch::kFloat32)) /
                            static_cast<double>(rows.numel());
    const torch::Tensor xs = pixels.index_select(0, rows);
    torch::Tensor grad_w;
    if (g_nondeterminism.load(std::memory_order_relaxed)) {
      // The batch's reduction summed row by row in a random order.
      std::vector<int64_t> order(rows.numel());
      std::iota(order.begin(), order.end(), 0);
      thread_local std::mt19937 rng(std::random_device{}());
      std::shuffle(order.begin(), order.end(), rng);
      grad_w = torch::zeros({10, 784});
      for (int64_t r : order) grad_w = grad_w + torch::outer(g[r], xs[r]);
    } else {
      grad_w = torch::matmul(g.t(), xs);
    }
    *next = torch::cat({(w - kOnlineLearningRate * grad_w).flatten(), b - kOnlineLearningRate * g.sum(0)});
    return logits;
  }

 private:
  static constexpr double kOnlineLearningRate = 0.05;
  nn::Linear fc_;
};

}  // namespace

void SetInjectedNondeterminism(bool on) { g_nondeterminism.store(on); }

bool IsSequenceArchitecture(const std::string& architecture) { return architecture == "gru_rows"; }

torch::Tensor ClassifyImages(BuiltinNetImpl& net, const std::string& architecture, const torch::Tensor& images) {
  if (!IsSequenceArchitecture(architecture)) return net.forward(images);
  const int64_t n = images.size(0);
  const torch::Tensor rows = images.reshape({n, 28 / kGruRowsPerStep, kGruRowsPerStep * 28});
  torch::Tensor h = torch::zeros({n, kGruHidden}, images.options());
  torch::Tensor out;
  for (int64_t step = 0; step < rows.size(1); ++step) {
    out = net.forward(torch::cat({rows.select(1, step), h}, 1));
    h = out.narrow(1, 10, kGruHidden);
  }
  return out.narrow(1, 0, 10);
}

absl::StatusOr<std::shared_ptr<BuiltinNetImpl>> MakeBuiltinNet(const std::string& architecture) {
  if (architecture == "mlp") return std::make_shared<Mlp>();
  if (architecture == "lenet5") return std::make_shared<LeNet5>();
  if (architecture == "resnet_small") return std::make_shared<ResNetSmall>();
  if (architecture == "gru_rows") return std::make_shared<GruRows>();
  if (architecture == "online_linear") return std::make_shared<OnlineLinear>();
  if (architecture == "calibrated_lenet5") return std::make_shared<CalibratedLeNet5>();
  return absl::InvalidArgumentError(absl::StrCat("unknown architecture '", architecture, "' (expected ",
                                                 absl::StrJoin(kBuiltinArchitectures, ", "), ")"));
}

int64_t CountParameters(const torch::nn::Module& module) {
  int64_t n = 0;
  for (const torch::Tensor& p : module.parameters()) n += p.numel();
  return n;
}

std::vector<std::string> StageHashes(BuiltinNetImpl& net) {
  torch::NoGradGuard no_grad;
  const auto mix = FnvMix;
  const auto children = net.named_children();
  std::vector<std::string> hashes;
  for (const std::vector<std::string>& stage : net.StageModules()) {
    uint64_t h = kFnvOffsetBasis;
    for (const std::string& name : stage) {
      h = mix(h, name.data(), name.size() + 1);
      const torch::nn::Module& child = *children[name];
      for (const auto& named : {child.named_parameters(), child.named_buffers()}) {
        for (const auto& item : named) {
          const torch::Tensor t = item.value().contiguous().to(torch::kCPU);
          h = mix(h, item.key().data(), item.key().size() + 1);
          h = mix(h, t.sizes().data(), t.sizes().size() * sizeof(int64_t));
          h = mix(h, t.data_ptr(), t.numel() * t.element_size());
        }
      }
    }
    hashes.push_back(absl::StrFormat("%016x", h));
  }
  return hashes;
}

}  // namespace tutti
