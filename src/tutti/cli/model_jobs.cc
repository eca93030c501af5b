#include "tutti/cli/model_jobs.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "tutti/core/status_macros.h"
#include "tutti/models/torch_model.h"
#include "tutti/models/evaluate.h"

namespace tutti::cli {
namespace {

// Pixels of 0.5; a typed model's records all zero (a valid value of every datatype).
std::vector<float> TrialInput(const TorchModel& model, int batch) {
  return std::vector<float>(model.input_elements() * batch, IsPlainFp32(model.config().inputs) ? 0.5f : 0.0f);
}

// A model loaded from disk, and its loading latency (INFaaS's T_load): the
// weights loaded and a first batch of `batch` run.
struct TimedLoad {
  std::unique_ptr<TorchModel> model;
  Duration load = 0;
};
absl::StatusOr<TimedLoad> LoadTimed(const ModelVersion& v, int batch, const Clock& clock) {
  const Time start = clock.Now();
  TUTTI_ASSIGN_OR_RETURN(std::unique_ptr<TorchModel> model, TorchModel::Load(v));
  std::vector<float> output;
  TUTTI_RETURN_IF_ERROR(model->Run(TrialInput(*model, batch), batch, &output));
  return TimedLoad{std::move(model), clock.Now() - start};
}

// Trains `name` on `train` (with `options`), writes it into the repository
// with its accuracy on `test` — measured through the torch executor on the
// artifact on disk — and returns its config as written. With `profiled`,
// the model takes its profiles and records its own load_ms. `progress`:
// report each epoch's progress; otherwise nothing.
absl::StatusOr<ModelConfig> TrainOne(const TrainJob& job, const std::string& name, const TrainOptions& options,
                                     const ImageSet& train, const ImageSet& test, const ModelConfig* profiled,
                                     const Clock& clock, bool progress, std::ostream& log) {
  const std::string dir = VersionDir(job.repo, name, job.version);
  // A model with a calibrated confidence: its temperature is fitted on
  // training images the weights never saw.
  const bool calibrated = job.train.architecture == "calibrated_lenet5";
  ImageSet fit = train, held_out;
  if (calibrated) {
    const int64_t keep = train.size() / 12;
    held_out = train.Slice(train.size() - keep, keep);
    fit = train.Slice(0, train.size() - keep);
  }
  if (progress) {
    log << absl::StrFormat("training %s (%s%s) on %d images%s, evaluating on %d\n", name, job.train.architecture,
                           job.init_from.empty() ? "" : absl::StrCat(", from ", job.init_from,
                                                                      options.last_stage_only ? ", last stage only" : ""),
                           fit.size(), job.classes.empty() ? "" : absl::StrCat(" of classes ", absl::StrJoin(job.classes, ",")),
                           test.size());
  }
  auto report = [&](const TrainProgress& p) {
    if (!progress) return;
    log << absl::StrFormat("  epoch %d/%d  step %4d/%d  loss %.4f  train acc %.4f", p.epoch,
                           p.epochs, p.step, p.steps_per_epoch, p.loss, p.train_accuracy);
    if (p.epoch_end) log << absl::StrFormat("  test acc %.4f", p.eval_accuracy);
    log << absl::StrFormat("  elapsed %.0fs  ETA %.0fs\n", p.elapsed_s, p.eta_s);
    log.flush();
  };
  const std::string weights = absl::StrCat(dir, "/", kWeightsFileName);
  TUTTI_ASSIGN_OR_RETURN(TrainResult result, TrainBuiltinModel(options, fit, test, weights, clock, report));

  if (calibrated) {
    TUTTI_ASSIGN_OR_RETURN(Calibration c, CalibrateBuiltinModel(job.train.architecture, weights, held_out));
    log << absl::StrFormat("calibrated on %d held-out images: temperature %.3f; NLL %.4f -> %.4f, ECE %.4f -> %.4f\n",
                           held_out.size(), c.temperature, c.nll_before, c.nll_after, c.ece_before, c.ece_after);
  }
  ModelConfig config = BuiltinModelConfig(name, job.train.architecture, job.max_batch_size);
  config.parameters = result.parameters;
  config.stage_hashes = result.stage_hashes;
  // Measured on some classes only: a narrower task than the whole dataset's
  // (model-less requests for the task must not pick it for its accuracy).
  if (!job.classes.empty()) absl::StrAppend(&config.task, "/classes=", absl::StrJoin(job.classes, ","));
  TUTTI_ASSIGN_OR_RETURN(TimedLoad loaded,
                         LoadTimed(ModelVersion{config, job.version, dir, weights}, config.max_batch_size, clock));
  TUTTI_ASSIGN_OR_RETURN(const double accuracy, EvaluateAccuracy(*loaded.model, test, 500));
  config.accuracy = accuracy;
  if (profiled != nullptr) {
    config.profiles = profiled->profiles;
    config.load_ms = ToMillis(loaded.load);
  }
  TUTTI_RETURN_IF_ERROR(WriteModelConfig(dir, config));
  if (progress) {
    log << absl::StrFormat("wrote %s: %d parameters, test accuracy %.4f\n", dir, result.parameters, accuracy);
  }
  return config;
}

}  // namespace

absl::Status RunTrainJob(const TrainJob& job, const Clock& clock, std::ostream& log) {
  const std::string name = job.name.empty() ? job.train.architecture : job.name;
  TUTTI_ASSIGN_OR_RETURN(ImageSet train, LoadFashionMnist(job.data_dir, Split::kTrain));
  TUTTI_ASSIGN_OR_RETURN(ImageSet test, LoadFashionMnist(job.data_dir, Split::kTest));
  train = train.OfClasses(job.classes);
  test = test.OfClasses(job.classes);
  if (job.test_limit > 0) test = test.Slice(0, job.test_limit);
  TrainOptions options = job.train;
  const ModelVersion* start = nullptr;
  absl::StatusOr<ModelRepository> repo;
  if (!job.init_from.empty()) {
    repo = ModelRepository::Open(job.repo);
    if (!repo.ok()) return repo.status();
    TUTTI_ASSIGN_OR_RETURN(start, repo->Find(job.init_from));
    if (start->config.architecture != options.architecture) {
      return absl::InvalidArgumentError(absl::StrCat("--init-from ", job.init_from, " is a ",
                                                     start->config.architecture, ", not a ", options.architecture));
    }
    options.init_weights = start->weights_path;
  }
  const int64_t limit = job.train_limit > 0 ? std::min(job.train_limit, train.size()) : train.size();
  if (job.copies == 0) {
    return TrainOne(job, name, options, train.Slice(0, limit), test, nullptr, clock, true, log).status();
  }
  // Copies: each its own seed and slice of the training images; the start's
  // profiles (the same architecture runs alike), its own load measured.
  log << absl::StrFormat("training %d copies of %s (%s%s), each on %d images, evaluating on %d\n", job.copies, name,
                         job.train.architecture,
                         start == nullptr ? "" : absl::StrCat(", from ", job.init_from,
                                                              options.last_stage_only ? ", last stage only" : ""),
                         limit, test.size());
  const int width = static_cast<int>(absl::StrCat(job.copies).size());
  const Time began = clock.Now();
  for (int i = 1; i <= job.copies; ++i) {
    TrainOptions copy = options;
    copy.seed = options.seed + i;
    const int64_t offset = train.size() == limit ? 0 : (i - 1) * limit % (train.size() - limit);
    const std::string copy_name = absl::StrFormat("%s_%0*d", name, width, i);
    TUTTI_ASSIGN_OR_RETURN(ModelConfig config, TrainOne(job, copy_name, copy, train.Slice(offset, limit), test,
                                                        start != nullptr ? &start->config : nullptr, clock, false,
                                                        log));
    const double elapsed = ToSeconds(clock.Now() - began);
    if (i == job.copies || i % std::max(1, job.copies / 20) == 0) {
      log << absl::StrFormat("  %d/%d: %s test acc %.4f  elapsed %.0fs  ETA %.0fs\n", i, job.copies, copy_name,
                             *config.accuracy, elapsed, elapsed / i * (job.copies - i));
      log.flush();
    }
  }
  return absl::OkStatus();
}

absl::Status RunProfileJob(const ModelVersion& version, const ProfileJob& job, const Clock& clock,
                           std::ostream& log) {
  ProfilerOptions options = job.profiler;
  if (options.max_batch == 0) options.max_batch = version.config.max_batch_size;
  if (options.max_batch > version.config.max_batch_size) {
    return absl::InvalidArgumentError(absl::StrCat("--max-batch ", options.max_batch,
                                                   " exceeds the model's max_batch_size ",
                                                   version.config.max_batch_size));
  }
  ModelConfig config = version.config;
  // A model of variable dimensions: each shape bucket, as its executor runs it.
  std::vector<int64_t> sizes = config.shape_buckets;
  if (sizes.empty()) sizes = {0};
  for (const int64_t size : sizes) {
    ModelVersion at = version;
    if (size > 0) at.config = AtBucket(version.config, size);
    TUTTI_ASSIGN_OR_RETURN(TimedLoad loaded, LoadTimed(at, options.max_batch, clock));
    const Duration load = loaded.load;
    const std::unique_ptr<TorchModel> model = std::move(loaded.model);
    const std::vector<float> input = TrialInput(*model, options.max_batch);
    std::vector<float> output;
    auto run = [&](int b) {
      return model->Run(absl::MakeConstSpan(input.data(), b * model->input_elements()), b, &output);
    };
    log << absl::StrFormat("profiling %s v%d on %s%s, b = 1..%d\n", version.config.name, version.version, job.kind,
                           size > 0 ? absl::StrCat(", shape bucket ", size) : "", options.max_batch);
    auto progress = [&](int b, Duration median) {
      log << absl::StrFormat("  b=%-4d l(b)=%.3f ms\n", b, ToMillis(median));
      log.flush();
    };
    TUTTI_ASSIGN_OR_RETURN(LatencyProfile profile, MeasureLatencyProfile(run, clock, options, progress));
    log << "  " << profile.DebugString() << "\n";
    if (size > 0) config.profiles.insert_or_assign(BucketProfileKey(job.kind, size), profile);
    // The kind's own: the model's (its largest bucket's), which groups check for.
    config.profiles.insert_or_assign(job.kind, std::move(profile));
    config.load_ms = ToMillis(load);
    log << absl::StrFormat("  loaded and warm in %.1f ms\n", ToMillis(load));
  }
  return WriteModelConfig(version.dir, config);
}

void PrintModelTable(const ModelRepository& repo, const std::string& kind, std::ostream& out) {
  out << absl::StrFormat("%-14s %3s %-11s %10s %8s %10s %10s %10s %10s\n", "model", "ver",
                         "platform", "parameters", "accuracy", "l(1) ms", "l(32) ms", "alpha ms",
                         "beta ms");
  for (const ModelVersion& v : repo.versions()) {
    const ModelConfig& c = v.config;
    std::string params = c.parameters ? absl::StrCat(*c.parameters) : "-";
    std::string acc = c.accuracy ? absl::StrFormat("%.4f", *c.accuracy) : "-";
    std::string l1 = "-", l32 = "-", alpha = "-", beta = "-";
    if (auto it = c.profiles.find(kind); it != c.profiles.end()) {
      const LatencyProfile& p = it->second;
      l1 = absl::StrFormat("%.3f", ToMillis(p.Latency(1)));
      if (p.max_batch() >= 32) l32 = absl::StrFormat("%.3f", ToMillis(p.Latency(32)));
      alpha = absl::StrFormat("%.4f", p.fit().alpha_ns / 1e6);
      beta = absl::StrFormat("%.4f", p.fit().beta_ns / 1e6);
    }
    out << absl::StrFormat("%-14s %3d %-11s %10s %8s %10s %10s %10s %10s\n", c.name, v.version,
                           PlatformName(c.platform), params, acc, l1, l32, alpha, beta);
  }
}

}  // namespace tutti::cli
