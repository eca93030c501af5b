#include "tutti/models/parity_trainer.h"

#include <torch/torch.h>

#include <algorithm>
#include <functional>
#include <random>

#include "absl/strings/str_cat.h"
#include "tutti/core/status_macros.h"
#include "tutti/models/architectures.h"
#include "tutti/models/evaluate.h"
#include "tutti/models/training_loop.h"

namespace tutti {
namespace {

// Runs a model on `n` items of `input`, writing n × outputs values.
using RunFn = std::function<absl::Status(absl::Span<const float> input, int n, std::vector<float>* output)>;

// The deployed model's outputs for every image of `set`.
absl::StatusOr<std::vector<float>> OutputsOf(TorchModel& model, const ImageSet& set) {
  const int batch = std::min(256, model.config().max_batch_size);
  std::vector<float> all, out;
  all.reserve(set.size() * model.output_elements());
  for (int64_t begin = 0; begin < set.size(); begin += batch) {
    const int n = static_cast<int>(std::min<int64_t>(batch, set.size() - begin));
    TUTTI_RETURN_IF_ERROR(model.Run(set.ToFloat(begin, n), n, &out));
    all.insert(all.end(), out.begin(), out.end());
  }
  return all;
}

// Degraded-mode accuracy over consecutive coding groups of `set`, given the
// deployed model's outputs for every image and a way to run the parity model.
absl::StatusOr<ParityAccuracy> ScoreReconstructions(const ParityCodec& codec, const ImageSet& set,
                                                    const std::vector<float>& outputs, int64_t classes,
                                                    int max_batch, const RunFn& run_parity) {
  const int k = codec.k();
  ParityAccuracy acc;
  acc.groups = set.size() / k;
  acc.queries = acc.groups * k;
  if (acc.groups == 0) return absl::InvalidArgumentError(absl::StrCat("need at least k = ", k, " images"));
  const std::vector<float> pixels = set.ToFloat(0, acc.queries);
  const int64_t in = codec.item_elements();
  const std::vector<int> deployed_pred = ArgmaxRows(outputs, classes);
  int64_t available = 0, degraded = 0;
  std::vector<float> parity, parity_out, rebuilt(classes);
  for (int64_t g0 = 0; g0 < acc.groups; g0 += max_batch) {
    const int n = static_cast<int>(std::min<int64_t>(max_batch, acc.groups - g0));
    parity.assign(n * in, 0.0f);
    for (int g = 0; g < n; ++g) {
      std::vector<const float*> items;
      for (int i = 0; i < k; ++i) items.push_back(&pixels[((g0 + g) * k + i) * in]);
      codec.Encode(items, &parity[g * in]);
    }
    TUTTI_RETURN_IF_ERROR(run_parity(parity, n, &parity_out));
    for (int g = 0; g < n; ++g) {
      const int64_t first = (g0 + g) * k;
      for (int j = 0; j < k; ++j) {
        std::vector<const float*> others;
        for (int i = 0; i < k; ++i) others.push_back(i == j ? nullptr : &outputs[(first + i) * classes]);
        ParityCodec::Decode(absl::MakeConstSpan(&parity_out[g * classes], classes), others, rebuilt.data());
        const int label = set.labels[first + j];
        degraded += ArgmaxRows(rebuilt, classes)[0] == label;
        available += deployed_pred[first + j] == label;
      }
    }
  }
  acc.available = static_cast<double>(available) / acc.queries;
  acc.degraded = static_cast<double>(degraded) / acc.queries;
  return acc;
}

}  // namespace

int DefaultParityEpochs(const std::string& architecture) { return architecture == "mlp" ? 10 : 15; }

ModelConfig ParityModelConfig(const ModelConfig& deployed, const std::string& name, const ParitySpec& spec) {
  ModelConfig c = BuiltinModelConfig(name, deployed.architecture, deployed.max_batch_size);
  c.task = deployed.task;
  c.inputs = deployed.inputs;
  c.outputs = deployed.outputs;
  c.parity = spec;
  return c;
}

absl::StatusOr<TrainResult> TrainParityModel(const ParityTrainOptions& options, TorchModel& deployed,
                                             const ImageSet& train, const ImageSet& eval,
                                             const std::string& weights_path, const Clock& clock,
                                             const TrainProgressCallback& progress) {
  const ModelConfig& dc = deployed.config();
  if (dc.platform != Platform::kBuiltin) {
    return absl::InvalidArgumentError(absl::StrCat("model '", dc.name, "' is not a built-in model; parity models "
                                                   "are trained for Tutti's built-in architectures"));
  }
  if (train.size() < options.k || eval.size() < options.k) {
    return absl::InvalidArgumentError(absl::StrCat("need at least k = ", options.k, " training and test images"));
  }
  if (deployed.input_elements() != train.image_size()) {
    return absl::InvalidArgumentError(absl::StrCat("model '", dc.name, "' takes ", deployed.input_elements(),
                                                   " values per item, images have ", train.image_size()));
  }
  if (options.batch_size < 1 || options.learning_rate <= 0 || options.weight_decay < 0) {
    return absl::InvalidArgumentError(absl::StrCat("bad training options: batch size ", options.batch_size,
                                                   ", learning rate ", options.learning_rate, ", weight decay ",
                                                   options.weight_decay));
  }
  TUTTI_ASSIGN_OR_RETURN(ParityCodec codec, ParityCodec::Create(options.encoder, options.k, dc.inputs[0].shape));
  TUTTI_ASSIGN_OR_RETURN(std::vector<float> train_out, OutputsOf(deployed, train));
  TUTTI_ASSIGN_OR_RETURN(std::vector<float> eval_out, OutputsOf(deployed, eval));
  const int64_t classes = deployed.output_elements(), in = codec.item_elements();
  const int k = options.k;
  try {
    torch::manual_seed(options.seed);
    TUTTI_ASSIGN_OR_RETURN(std::shared_ptr<BuiltinNetImpl> net, MakeBuiltinNet(dc.architecture));
    net->train();
    torch::optim::Adam optimizer(net->parameters(), torch::optim::AdamOptions(options.learning_rate)
                                                        .weight_decay(options.weight_decay));
    const std::vector<float> pixels = train.ToFloat(0, train.size());
    std::mt19937_64 rng(options.seed);
    std::uniform_int_distribution<int64_t> pick(0, train.size() - 1);
    std::vector<float> x, y;
    std::vector<const float*> items(k);
    auto run_net = [&](absl::Span<const float> input, int n, std::vector<float>* out) {
      torch::NoGradGuard no_grad;
      net->eval();
      torch::Tensor t = torch::from_blob(const_cast<float*>(input.data()), {n, 1, train.rows, train.cols});
      torch::Tensor o = net->forward(t).contiguous();
      out->assign(o.data_ptr<float>(), o.data_ptr<float>() + n * classes);
      net->train();
      return absl::OkStatus();
    };

    internal::EpochLoop loop;
    loop.epochs = options.epochs > 0 ? options.epochs : DefaultParityEpochs(dc.architecture);
    loop.steps_per_epoch = (train.size() + options.batch_size - 1) / options.batch_size;
    loop.progress_updates_per_epoch = options.progress_updates_per_epoch;
    loop.step = [&](int64_t step) {
      const int64_t n = std::min<int64_t>(options.batch_size, train.size() - step * options.batch_size);
      x.assign(n * in, 0.0f);
      y.assign(n * classes, 0.0f);
      for (int64_t s = 0; s < n; ++s) {
        for (int i = 0; i < k; ++i) {
          const int64_t idx = pick(rng);
          items[i] = &pixels[idx * in];
          for (int64_t c = 0; c < classes; ++c) y[s * classes + c] += train_out[idx * classes + c];
        }
        codec.Encode(items, &x[s * in]);
      }
      torch::Tensor xt = torch::from_blob(x.data(), {n, 1, train.rows, train.cols});
      torch::Tensor yt = torch::from_blob(y.data(), {n, classes});
      optimizer.zero_grad();
      torch::Tensor loss = torch::mse_loss(net->forward(xt), yt);
      loss.backward();
      optimizer.step();
      return internal::StepResult{loss.item<double>() * n, 0, n};
    };
    loop.evaluate = [&]() -> double {
      absl::StatusOr<ParityAccuracy> a =
          ScoreReconstructions(codec, eval, eval_out, classes, 256, run_net);
      return a.ok() ? a->degraded : 0.0;
    };
    return internal::RunEpochsAndSave(loop, net, weights_path, clock, progress);
  } catch (const c10::Error& e) {
    return absl::InternalError(absl::StrCat("parity training failed: ", e.what_without_backtrace()));
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("parity training failed: ", e.what()));
  }
}

absl::StatusOr<ParityAccuracy> EvaluateParity(TorchModel& deployed, TorchModel& parity, const ParityCodec& codec,
                                              const ImageSet& set) {
  if (deployed.input_elements() != set.image_size() || parity.input_elements() != set.image_size() ||
      codec.item_elements() != set.image_size() || parity.output_elements() != deployed.output_elements()) {
    return absl::InvalidArgumentError(absl::StrCat("models '", deployed.config().name, "' and '",
                                                   parity.config().name, "' do not match the images or each other"));
  }
  TUTTI_ASSIGN_OR_RETURN(std::vector<float> outputs, OutputsOf(deployed, set));
  return ScoreReconstructions(codec, set, outputs, deployed.output_elements(),
                              std::min(256, parity.config().max_batch_size),
                              [&](absl::Span<const float> in, int n, std::vector<float>* out) {
                                return parity.Run(in, n, out);
                              });
}

}  // namespace tutti
