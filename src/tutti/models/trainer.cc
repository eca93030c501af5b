#include "tutti/models/trainer.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "tutti/core/status_macros.h"
#include "tutti/models/architectures.h"
#include "tutti/models/training_loop.h"

namespace tutti {
namespace {

double Accuracy(BuiltinNetImpl& net, const std::string& architecture, const torch::Tensor& images,
                const torch::Tensor& labels) {
  torch::NoGradGuard no_grad;
  net.eval();
  int64_t correct = 0;
  for (int64_t i = 0; i < images.size(0); i += 500) {
    const int64_t n = std::min<int64_t>(500, images.size(0) - i);
    torch::Tensor pred = ClassifyImages(net, architecture, images.narrow(0, i, n)).argmax(1);
    correct += pred.eq(labels.narrow(0, i, n)).sum().item<int64_t>();
  }
  net.train();
  return static_cast<double>(correct) / static_cast<double>(images.size(0));
}

torch::Tensor LabelsTensor(const ImageSet& set) {
  return torch::from_blob(const_cast<uint8_t*>(set.labels.data()), {set.size()}, torch::kUInt8).to(torch::kInt64);
}

}  // namespace

ModelConfig BuiltinModelConfig(const std::string& name, const std::string& architecture,
                               int max_batch_size) {
  ModelConfig c;
  c.name = name;
  c.platform = Platform::kBuiltin;
  c.architecture = architecture;
  c.task = "fashion-mnist";
  c.max_batch_size = max_batch_size;
  c.inputs = {TensorSpec{"image", DataType::kFp32, {1, 28, 28}}};
  c.outputs = {TensorSpec{"logits", DataType::kFp32, {10}}};
  if (architecture == "online_linear") {
    c.inputs = {TensorSpec{"image_and_label", DataType::kFp32, {785}}};
    c.model_state_shape = {10 * 784 + 10};
  }
  if (architecture == "calibrated_lenet5") {
    c.task = "fashion-mnist-uint8";  // its own input: not interchangeable with the FP32 ones
    c.inputs = {TensorSpec{"pixels", DataType::kUint8, {28, 28}}};
    c.outputs = {TensorSpec{"logits", DataType::kFp32, {10}}, TensorSpec{"confidence", DataType::kFp32, {1}}};
  }
  if (IsSequenceArchitecture(architecture)) {
    c.inputs = {TensorSpec{"rows", DataType::kFp32, {kGruRowsPerStep, 28}}};
    c.sequence_batching = SequenceBatching{.state_input = "hidden_in", .state_output = "hidden_out",
                                           .state_shape = {kGruHidden}};
  }
  return c;
}

int DefaultEpochs(const std::string& architecture) {
  if (architecture == "mlp") return 10;
  if (architecture == "lenet5" || architecture == "calibrated_lenet5") return 10;
  return 5;
}

absl::StatusOr<TrainResult> TrainBuiltinModel(const TrainOptions& options, const ImageSet& train,
                                              const ImageSet& eval, const std::string& weights_path,
                                              const Clock& clock,
                                              const TrainProgressCallback& progress) {
  const int epochs = options.epochs > 0 ? options.epochs : DefaultEpochs(options.architecture);
  if (train.size() == 0 || eval.size() == 0) {
    return absl::InvalidArgumentError("training and evaluation sets must not be empty");
  }
  if (options.batch_size < 1 || options.learning_rate <= 0 || options.weight_decay < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "bad training options: batch size ", options.batch_size, ", learning rate ",
        options.learning_rate, ", weight decay ", options.weight_decay));
  }
  try {
    torch::manual_seed(options.seed);
    TUTTI_ASSIGN_OR_RETURN(std::shared_ptr<BuiltinNetImpl> net, MakeBuiltinNet(options.architecture));
    if (!options.init_weights.empty()) {
      std::shared_ptr<torch::nn::Module> module = net;
      try {
        torch::load(module, options.init_weights);
      } catch (const std::exception& e) {
        return absl::InvalidArgumentError(absl::StrCat("cannot start from ", options.init_weights, ": ", e.what()));
      }
    }
    std::vector<torch::Tensor> trained = net->parameters();
    if (options.last_stage_only) {
      trained.clear();
      for (auto& p : net->parameters()) p.set_requires_grad(false);
      auto children = net->named_children();
      const std::vector<std::vector<std::string>> stages = net->StageModules();
      for (const std::string& name : stages.back()) {
        for (auto& p : children[name]->parameters()) {
          p.set_requires_grad(true);
          trained.push_back(p);
        }
      }
    }
    net->train();
    torch::optim::Adam optimizer(
        trained,
        torch::optim::AdamOptions(options.learning_rate).weight_decay(options.weight_decay));
    const torch::Tensor train_x = internal::ImagesTensor(train), train_y = LabelsTensor(train);
    const torch::Tensor eval_x = internal::ImagesTensor(eval), eval_y = LabelsTensor(eval);
    std::mt19937_64 rng(options.seed);
    std::vector<int64_t> order(train.size());
    std::iota(order.begin(), order.end(), 0);
    torch::Tensor perm;
    internal::EpochLoop loop;
    loop.epochs = epochs;
    loop.steps_per_epoch = (train.size() + options.batch_size - 1) / options.batch_size;
    loop.progress_updates_per_epoch = options.progress_updates_per_epoch;
    loop.begin_epoch = [&](int epoch) {
      // Cosine annealing of the learning rate over the epochs.
      const double lr = options.learning_rate * 0.5 * (1 + std::cos(M_PI * (epoch - 1) / epochs));
      for (auto& group : optimizer.param_groups()) {
        static_cast<torch::optim::AdamOptions&>(group.options()).lr(lr);
      }
      std::shuffle(order.begin(), order.end(), rng);
      perm = torch::from_blob(order.data(), {train.size()}, torch::kInt64);
    };
    loop.step = [&](int64_t step) {
      const int64_t begin = step * options.batch_size;
      const int64_t n = std::min<int64_t>(options.batch_size, train.size() - begin);
      torch::Tensor idx = perm.narrow(0, begin, n);
      torch::Tensor x = train_x.index_select(0, idx), y = train_y.index_select(0, idx);
      if (options.last_stage_only) {  // frozen stages keep their batch-norm statistics too
        auto children = net->named_children();
        const auto stages = net->StageModules();
        for (size_t stage = 0; stage + 1 < stages.size(); ++stage) {
          for (const std::string& name : stages[stage]) children[name]->eval();
        }
      }
      optimizer.zero_grad();
      torch::Tensor logits = ClassifyImages(*net, options.architecture, x);
      torch::Tensor loss = torch::nn::functional::cross_entropy(logits, y);
      loss.backward();
      optimizer.step();
      return internal::StepResult{loss.item<double>() * n, logits.argmax(1).eq(y).sum().item<int64_t>(), n};
    };
    loop.evaluate = [&] { return Accuracy(*net, options.architecture, eval_x, eval_y); };
    TUTTI_ASSIGN_OR_RETURN(TrainResult result, internal::RunEpochsAndSave(loop, net, weights_path, clock, progress));
    result.stage_hashes = StageHashes(*net);
    return result;
  } catch (const c10::Error& e) {
    return absl::InternalError(absl::StrCat("training failed: ", e.what_without_backtrace()));
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("training failed: ", e.what()));
  }
}

namespace {

// Mean negative log-likelihood of `labels` under softmax(logits / t).
double MeanNll(const torch::Tensor& logits, const torch::Tensor& labels, double t) {
  return torch::nn::functional::cross_entropy(logits / t, labels).item<double>();
}

// Expected calibration error over 15 equal-width confidence bins.
double ExpectedCalibrationError(const torch::Tensor& logits, const torch::Tensor& labels, double t) {
  const auto [confidence, predicted] = torch::softmax(logits / t, 1).max(1);
  const torch::Tensor correct = predicted.eq(labels).to(torch::kFloat64);
  const torch::Tensor bins = (confidence.to(torch::kFloat64) * 15).floor().clamp(0, 14).to(torch::kInt64);
  double ece = 0;
  for (int64_t b = 0; b < 15; ++b) {
    const torch::Tensor in = bins.eq(b);
    const int64_t n = in.sum().item<int64_t>();
    if (n == 0) continue;
    const double gap = confidence.to(torch::kFloat64).masked_select(in).mean().item<double>() -
                       correct.masked_select(in).mean().item<double>();
    ece += std::abs(gap) * static_cast<double>(n) / static_cast<double>(labels.size(0));
  }
  return ece;
}

}  // namespace

absl::StatusOr<Calibration> CalibrateBuiltinModel(const std::string& architecture, const std::string& weights_path,
                                                  const ImageSet& held_out) {
  if (held_out.size() == 0) return absl::InvalidArgumentError("calibration needs held-out images");
  try {
    TUTTI_ASSIGN_OR_RETURN(std::shared_ptr<BuiltinNetImpl> net, MakeBuiltinNet(architecture));
    auto* typed = dynamic_cast<TypedNet*>(net.get());
    if (typed == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("architecture '", architecture, "' has no confidence output"));
    }
    std::shared_ptr<torch::nn::Module> module = net;
    torch::load(module, weights_path);
    net->eval();
    torch::NoGradGuard no_grad;
    const torch::Tensor logits =
        ClassifyImages(*net, architecture, internal::ImagesTensor(held_out)).to(torch::kFloat64);
    const torch::Tensor labels = LabelsTensor(held_out);
    // The NLL is unimodal in log T: a golden-section search over T in [0.05, 20].
    double lo = std::log(0.05), hi = std::log(20.0);
    const double phi = (std::sqrt(5.0) - 1) / 2;
    for (int i = 0; i < 60; ++i) {
      const double a = hi - phi * (hi - lo), b = lo + phi * (hi - lo);
      if (MeanNll(logits, labels, std::exp(a)) < MeanNll(logits, labels, std::exp(b))) {
        hi = b;
      } else {
        lo = a;
      }
    }
    Calibration c;
    c.temperature = std::exp((lo + hi) / 2);
    c.nll_before = MeanNll(logits, labels, 1.0);
    c.nll_after = MeanNll(logits, labels, c.temperature);
    c.ece_before = ExpectedCalibrationError(logits, labels, 1.0);
    c.ece_after = ExpectedCalibrationError(logits, labels, c.temperature);
    typed->temperature().fill_(c.temperature);
    torch::save(module, weights_path);
    return c;
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("calibrating ", weights_path, " failed: ", e.what()));
  }
}

}  // namespace tutti
