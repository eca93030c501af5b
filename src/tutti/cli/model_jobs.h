// The model-management jobs behind `tutti train`, `tutti profile`,
// `tutti models` and `tutti demo`: each reads and writes the model repository
// and reports progress on a log stream (stderr in the CLI).
#ifndef TUTTI_CLI_MODEL_JOBS_H_
#define TUTTI_CLI_MODEL_JOBS_H_

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "tutti/core/clock.h"
#include "tutti/models/trainer.h"
#include "tutti/profiler/profiler.h"
#include "tutti/repository/model_repository.h"

namespace tutti::cli {

struct TrainJob {
  std::string repo;
  std::string name;          // model name; defaults to the architecture
  int64_t version = 1;
  int max_batch_size = 128;
  std::string data_dir = kDefaultFashionMnistDir;
  int64_t train_limit = 0;   // use only the first N training images (0: all)
  // Fine-tuning: start from this repository model's latest weights (same
  // architecture), training its last layer stage only with
  // train.last_stage_only; "" for a fresh network.
  std::string init_from;
  std::vector<int> classes;  // train and measure on these classes' images only (empty: all)
  int64_t test_limit = 0;    // measure accuracy on the first N test images only (0: all)
  // > 0: train this many models <name>_<i> (i = 1 … copies) instead of one,
  // each with seed train.seed + i on its own slice of train_limit images;
  // with init_from, each gets that model's profiles and its own load_ms.
  int copies = 0;
  TrainOptions train;
};

// Trains a built-in model, writes <repo>/<name>/<version>/{model.pt,
// config.yaml}, then reloads the written model through the torch executor
// and records its accuracy on the 10,000 test images (those of job.classes,
// if given), its parameter count and its stage hashes in the config. Any profile of an earlier model there is dropped.
// With job.copies, the same for each copy (TrainJob).
absl::Status RunTrainJob(const TrainJob& job, const Clock& clock, std::ostream& log);

struct ProfileJob {
  std::string kind = "cpu";  // executor kind the profile is stored under
  ProfilerOptions profiler;  // max_batch 0: the model's max_batch_size
};

// Measures ℓ(b) of one model version with the torch executor on this machine
// and stores it in the version's config under `job.kind`, with how long
// loading the weights and running a first batch took (load_ms). A model of
// variable dimensions: each shape bucket's under "<kind>/<size>", and the
// largest's under `job.kind` too.
absl::Status RunProfileJob(const ModelVersion& version, const ProfileJob& job, const Clock& clock,
                           std::ostream& log);

// Prints one row per model version: model, version, platform, parameters,
// accuracy, ℓ(1), ℓ(32), α, β of the `kind` profile.
void PrintModelTable(const ModelRepository& repo, const std::string& kind, std::ostream& out);

}  // namespace tutti::cli

#endif  // TUTTI_CLI_MODEL_JOBS_H_
