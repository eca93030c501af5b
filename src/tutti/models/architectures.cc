#include "tutti/models/architectures.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

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

class LeNet5 final : public BuiltinNetImpl {
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

}  // namespace

absl::StatusOr<std::shared_ptr<BuiltinNetImpl>> MakeBuiltinNet(const std::string& architecture) {
  if (architecture == "mlp") return std::make_shared<Mlp>();
  if (architecture == "lenet5") return std::make_shared<LeNet5>();
  if (architecture == "resnet_small") return std::make_shared<ResNetSmall>();
  return absl::InvalidArgumentError(
      absl::StrCat("unknown architecture '", architecture, "' (expected mlp, lenet5 or resnet_small)"));
}

int64_t CountParameters(const torch::nn::Module& module) {
  int64_t n = 0;
  for (const torch::Tensor& p : module.parameters()) n += p.numel();
  return n;
}

std::vector<std::string> StageHashes(BuiltinNetImpl& net) {
  torch::NoGradGuard no_grad;
  auto mix = [](uint64_t h, const void* data, size_t n) {  // FNV-1a
    const auto* p = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ULL;
    return h;
  };
  const auto children = net.named_children();
  std::vector<std::string> hashes;
  for (const std::vector<std::string>& stage : net.StageModules()) {
    uint64_t h = 14695981039346656037ULL;
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
