#include "tutti/models/training_loop.h"

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "tutti/models/architectures.h"

namespace tutti::internal {

namespace {

// Saves `net` to `path` atomically (creating its directory).
absl::Status SaveNet(std::shared_ptr<torch::nn::Module> net, const std::string& path) {
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  const std::string tmp = path + ".tmp";
  torch::save(net, tmp);
  std::filesystem::rename(tmp, path, ec);
  if (ec) return absl::InternalError(absl::StrCat("cannot write ", path, ": ", ec.message()));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<TrainResult> RunEpochsAndSave(const EpochLoop& loop, std::shared_ptr<torch::nn::Module> net,
                                             const std::string& weights_path, const Clock& clock,
                                             const TrainProgressCallback& progress) {
  const int64_t steps = loop.steps_per_epoch;
  const int64_t report_every = std::max<int64_t>(1, steps / std::max(1, loop.progress_updates_per_epoch));
  const Time start = clock.Now();
  TrainResult result;
  for (int epoch = 1; epoch <= loop.epochs; ++epoch) {
    if (loop.begin_epoch) loop.begin_epoch(epoch);
    StepResult sum;
    for (int64_t step = 0; step < steps; ++step) {
      const StepResult s = loop.step(step);
      sum.loss_sum += s.loss_sum;
      sum.correct += s.correct;
      sum.n += s.n;
      const bool last = step + 1 == steps;
      if (!progress || (!last && (step + 1) % report_every != 0)) continue;
      TrainProgress p;
      p.epoch = epoch;
      p.epochs = loop.epochs;
      p.step = step + 1;
      p.steps_per_epoch = steps;
      p.loss = sum.loss_sum / sum.n;
      p.train_accuracy = static_cast<double>(sum.correct) / sum.n;
      p.elapsed_s = ToSeconds(clock.Now() - start);
      const double done = (epoch - 1) + static_cast<double>(step + 1) / steps;
      p.eta_s = p.elapsed_s / done * (loop.epochs - done);
      if (last) {
        p.epoch_end = true;
        p.eval_accuracy = loop.evaluate();
      }
      progress(p);
    }
    result.epoch_loss.push_back(sum.loss_sum / sum.n);
  }
  result.eval_accuracy = loop.evaluate();
  result.parameters = CountParameters(*net);
  net->eval();
  if (absl::Status s = SaveNet(net, weights_path); !s.ok()) return s;
  return result;
}

torch::Tensor ImagesTensor(const ImageSet& set) {
  return torch::from_blob(const_cast<uint8_t*>(set.pixels.data()), {set.size(), 1, set.rows, set.cols},
                          torch::kUInt8)
      .to(torch::kFloat32)
      .div_(255.0);
}

}  // namespace tutti::internal
