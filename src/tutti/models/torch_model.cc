#include "tutti/models/torch_model.h"

#include <torch/script.h>
#include <torch/torch.h>

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "tutti/core/status_macros.h"
#include "tutti/models/architectures.h"

namespace tutti {
namespace {

std::string ShapeString(c10::IntArrayRef sizes) { return absl::StrCat("[", absl::StrJoin(sizes, ", "), "]"); }

// The part that differs between platforms: how to call the network.
class Network {
 public:
  virtual ~Network() = default;
  virtual torch::Tensor Forward(const torch::Tensor& input) = 0;
  virtual int64_t Parameters() = 0;
};

class ScriptNetwork final : public Network {
 public:
  explicit ScriptNetwork(torch::jit::Module module) : module_(std::move(module)) { module_.eval(); }
  torch::Tensor Forward(const torch::Tensor& input) override {
    return module_.forward({input}).toTensor();
  }
  int64_t Parameters() override {
    int64_t n = 0;
    for (const at::Tensor& p : module_.parameters()) n += p.numel();
    return n;
  }

 private:
  torch::jit::Module module_;
};

class BuiltinNetwork final : public Network {
 public:
  explicit BuiltinNetwork(std::shared_ptr<BuiltinNetImpl> net) : net_(std::move(net)) { net_->eval(); }
  torch::Tensor Forward(const torch::Tensor& input) override { return net_->forward(input); }
  int64_t Parameters() override { return CountParameters(*net_); }

 private:
  std::shared_ptr<BuiltinNetImpl> net_;
};

class TorchModelImpl final : public TorchModel {
 public:
  TorchModelImpl(ModelConfig config, std::unique_ptr<Network> net)
      : config_(std::move(config)), net_(std::move(net)), parameters_(net_->Parameters()) {
    input_shape_ = {0};
    input_shape_.insert(input_shape_.end(), config_.inputs[0].shape.begin(), config_.inputs[0].shape.end());
  }

  absl::Status Run(absl::Span<const float> input, int batch, std::vector<float>* output) override {
    if (batch < 1 || static_cast<int64_t>(input.size()) != batch * input_elements()) {
      return absl::InvalidArgumentError(absl::StrCat("batch of ", batch, " needs ",
                                                     batch * input_elements(), " input values, got ",
                                                     input.size()));
    }
    try {
      c10::InferenceMode guard;
      std::vector<int64_t> shape = input_shape_;
      shape[0] = batch;
      torch::Tensor x = torch::from_blob(const_cast<float*>(input.data()), shape, torch::kFloat32);
      torch::Tensor y = net_->Forward(x).contiguous().to(torch::kFloat32);
      if (y.dim() < 1 || y.size(0) != batch || y.numel() != batch * output_elements()) {
        return absl::InternalError(absl::StrCat(
            "model '", config_.name, "' returned shape ", ShapeString(y.sizes()), " for a batch of ",
            batch, "; its config declares output '", config_.outputs[0].name, "' with ",
            output_elements(), " values per item"));
      }
      output->assign(y.data_ptr<float>(), y.data_ptr<float>() + y.numel());
      return absl::OkStatus();
    } catch (const c10::Error& e) {
      return absl::InternalError(absl::StrCat("model '", config_.name, "' failed: ", e.what_without_backtrace()));
    } catch (const std::exception& e) {  // TorchScript interpreter errors
      return absl::InternalError(absl::StrCat("model '", config_.name, "' failed: ", e.what()));
    }
  }

  const ModelConfig& config() const override { return config_; }
  int64_t parameter_count() const override { return parameters_; }

 private:
  ModelConfig config_;
  std::unique_ptr<Network> net_;
  int64_t parameters_;
  std::vector<int64_t> input_shape_;
};

absl::StatusOr<std::unique_ptr<Network>> LoadNetwork(const ModelVersion& v) {
  if (v.config.platform == Platform::kEmulated) {
    return absl::InvalidArgumentError(absl::StrCat("model '", v.config.name,
                                                   "' is platform emulated: it has no weights and "
                                                   "runs only on emulated executors"));
  }
  try {
    if (v.config.platform == Platform::kTorchScript) {
      return std::make_unique<ScriptNetwork>(torch::jit::load(v.weights_path));
    }
    TUTTI_ASSIGN_OR_RETURN(std::shared_ptr<BuiltinNetImpl> net, MakeBuiltinNet(v.config.architecture));
    std::shared_ptr<torch::nn::Module> module = net;
    torch::load(module, v.weights_path);
    return std::make_unique<BuiltinNetwork>(std::move(net));
  } catch (const std::exception& e) {
    const auto* c10 = dynamic_cast<const c10::Error*>(&e);
    return absl::DataLossError(absl::StrCat(v.weights_path, ": cannot load as a ",
                                            PlatformName(v.config.platform), " model: ",
                                            c10 ? c10->what_without_backtrace() : e.what()));
  }
}

}  // namespace

void SetTorchThreads(int threads) {
  if (threads > 0) torch::set_num_threads(threads);
}

absl::StatusOr<std::unique_ptr<TorchModel>> TorchModel::Load(const ModelVersion& version) {
  const ModelConfig& c = version.config;
  if (c.inputs.size() != 1 || c.outputs.size() != 1 || c.inputs[0].datatype != DataType::kFp32 ||
      c.outputs[0].datatype != DataType::kFp32) {
    return absl::InvalidArgumentError(absl::StrCat(
        version.dir, ": the torch executor supports exactly one FP32 input and one FP32 output"));
  }
  TUTTI_ASSIGN_OR_RETURN(std::unique_ptr<Network> net, LoadNetwork(version));
  auto model = std::make_unique<TorchModelImpl>(c, std::move(net));
  // A trial run catches a config that disagrees with the network.
  std::vector<float> in(model->input_elements()), out;
  TUTTI_RETURN_IF_ERROR(model->Run(in, 1, &out));
  return model;
}

}  // namespace tutti
