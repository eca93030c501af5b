// tutti train | profile | models | demo.
#include <iostream>

#include "absl/strings/str_format.h"
#include "tutti/cli/command_util.h"
#include "tutti/cli/model_jobs.h"
#include "tutti/core/file_util.h"
#include "tutti/core/real_clock.h"
#include "tutti/core/status_macros.h"
#include "tutti/datasets/fashion_mnist.h"
#include "tutti/models/torch_model.h"

namespace tutti::cli {
namespace {

constexpr char kDefaultRepo[] = "demo_repository";

// The demo repository's models and the test-accuracy floors they must reach.
struct DemoModel {
  const char* architecture;
  double floor;
  int max_batch_size;
};
constexpr DemoModel kDemoModels[] = {
    {"mlp", 0.87, 256}, {"lenet5", 0.89, 128}, {"resnet_small", 0.90, 128}};

// Writes kExampleRequestFile: test image 0 as a [1, 1, 28, 28] FP32 request.
absl::Status WriteExampleRequest(const std::string& repo_dir, const std::string& data_dir) {
  TUTTI_ASSIGN_OR_RETURN(ImageSet test, LoadFashionMnist(data_dir, Split::kTest));
  const std::vector<float> pixels = test.ToFloat(0, 1);
  std::string body = absl::StrFormat(
      R"j({"id":"fashion-mnist-test-0 (a %s, label %d)","inputs":[{"name":"image","datatype":"FP32",)j"
      R"j("shape":[1,1,28,28],"data":[)j",
      kFashionMnistClassNames[test.labels[0]], test.labels[0]);
  for (size_t i = 0; i < pixels.size(); ++i) absl::StrAppendFormat(&body, "%s%.6g", i ? "," : "", pixels[i]);
  body += "]}]}\n";
  return WriteFileAtomic(repo_dir + "/" + kExampleRequestFile, body);
}

}  // namespace

int TrainCommand(const Args& args) {
  TrainJob job;
  int threads = 0;
  FlagSet flags("tutti train --arch ARCH --repo DIR [flags]",
                "Trains one of Tutti's built-in architectures (mlp, lenet5, resnet_small) on\n"
                "Fashion-MNIST with libtorch, shows progress, evaluates the saved model on the\n"
                "10,000 test images and writes it with its accuracy into the model repository\n"
                "as <repo>/<name>/<version>/{model.pt,config.yaml}.");
  flags.String("arch", &job.train.architecture, "architecture: mlp | lenet5 | resnet_small");
  flags.String("repo", &job.repo, "model repository directory");
  flags.String("name", &job.name, "model name (default: the architecture)");
  flags.Int64("version", &job.version, "version number to write");
  flags.Int("epochs", &job.train.epochs, "epochs (0: the architecture's default)");
  flags.Int("batch-size", &job.train.batch_size, "minibatch size");
  flags.Double("lr", &job.train.learning_rate, "Adam learning rate");
  flags.Double("weight-decay", &job.train.weight_decay, "L2 penalty");
  int64_t seed = static_cast<int64_t>(job.train.seed);
  flags.Int64("seed", &seed, "random seed");
  flags.Int("max-batch-size", &job.max_batch_size, "max_batch_size written to the config");
  flags.Int64("limit", &job.train_limit, "train on the first N images only (0: all 60,000)");
  flags.String("data", &job.data_dir, "directory with the Fashion-MNIST IDX files");
  flags.Int("threads", &threads, "libtorch intra-op threads (0: one per core)");
  if (int rc = ParseOrExit(flags, args, {"arch", "repo"}); rc >= 0) return rc;
  job.train.seed = static_cast<uint64_t>(seed);
  SetTorchThreads(threads);
  RealClock clock;
  absl::Status s = RunTrainJob(job, clock, std::cerr);
  return s.ok() ? 0 : Fail(s);
}

int ProfileCommand(const Args& args) {
  std::string repo_dir = kDefaultRepo, model;
  int64_t version = ModelRepository::kLatest;
  int threads = 0;
  ProfileJob job;
  job.profiler.max_batch = 0;
  FlagSet flags("tutti profile --repo DIR [--model NAME] [flags]",
                "Measures the batch latency l(b) of models on this machine's CPU with the torch\n"
                "executor (b = 1..32, then powers of two up to the max; warm-up runs, then the\n"
                "median of repeats), fits l(b) = alpha*b + beta, stores the profile in each\n"
                "model's config and prints it.");
  flags.String("repo", &repo_dir, "model repository directory");
  flags.String("model", &model, "model to profile (default: every model)");
  flags.Int64("version", &version, "version (0: latest)");
  flags.String("kind", &job.kind, "executor kind to store the profile under");
  flags.Int("max-batch", &job.profiler.max_batch, "largest batch (0: the model's max_batch_size)");
  flags.Int("warmup", &job.profiler.warmup_runs, "untimed runs per batch size");
  flags.Int("repeats", &job.profiler.repeats, "timed runs per batch size (median kept)");
  flags.Int("threads", &threads, "libtorch intra-op threads (0: one per core)");
  if (int rc = ParseOrExit(flags, args); rc >= 0) return rc;
  SetTorchThreads(threads);
  absl::StatusOr<ModelRepository> repo = ModelRepository::Open(repo_dir);
  if (!repo.ok()) return Fail(repo.status());
  std::vector<const ModelVersion*> targets;
  if (!model.empty()) {
    absl::StatusOr<const ModelVersion*> v = repo->Find(model, version);
    if (!v.ok()) return Fail(v.status());
    targets.push_back(*v);
  } else {
    for (const std::string& name : repo->ModelNames()) targets.push_back(*repo->Find(name));
  }
  RealClock clock;
  for (const ModelVersion* v : targets) {
    if (absl::Status s = RunProfileJob(*v, job, clock, std::cerr); !s.ok()) return Fail(s);
  }
  absl::StatusOr<ModelRepository> updated = ModelRepository::Open(repo_dir);
  if (!updated.ok()) return Fail(updated.status());
  PrintModelTable(*updated, job.kind, std::cout);
  return 0;
}

int ModelsCommand(const Args& args) {
  std::string repo_dir = kDefaultRepo, kind = "cpu";
  FlagSet flags("tutti models [--repo DIR]",
                "Validates a model repository and lists its models with accuracy and latency\n"
                "profile. Exits 1 with every problem found if the repository is invalid.");
  flags.String("repo", &repo_dir, "model repository directory");
  flags.String("kind", &kind, "executor kind whose profile is shown");
  if (int rc = ParseOrExit(flags, args); rc >= 0) return rc;
  absl::StatusOr<ModelRepository> repo = ModelRepository::Open(repo_dir);
  if (!repo.ok()) return Fail(repo.status());
  PrintModelTable(*repo, kind, std::cout);
  return 0;
}

int DemoCommand(const Args& args) {
  std::string repo_dir = kDefaultRepo, data_dir = kDefaultFashionMnistDir;
  bool retrain = false, reprofile = false;
  int threads = 0;
  FlagSet flags("tutti demo [--repo DIR]",
                "Builds the demo model repository: trains each demo model (mlp, lenet5,\n"
                "resnet_small) on Fashion-MNIST if it is absent or below its accuracy floor\n"
                "(0.87, 0.89, 0.90), profiles it on this CPU if it has no profile, and prints\n"
                "the table. Exits 1 if a model stays below its floor.");
  flags.String("repo", &repo_dir, "model repository directory");
  flags.String("data", &data_dir, "directory with the Fashion-MNIST IDX files");
  flags.Bool("retrain", &retrain, "train every demo model again");
  flags.Bool("reprofile", &reprofile, "profile every demo model again");
  flags.Int("threads", &threads, "libtorch intra-op threads (0: one per core)");
  if (int rc = ParseOrExit(flags, args); rc >= 0) return rc;
  SetTorchThreads(threads);
  RealClock clock;
  for (const DemoModel& m : kDemoModels) {
    absl::StatusOr<ModelRepository> repo = ModelRepository::Open(repo_dir);
    absl::StatusOr<const ModelVersion*> have =
        repo.ok() ? repo->Find(m.architecture) : absl::StatusOr<const ModelVersion*>(repo.status());
    if (!repo.ok() && repo.status().code() != absl::StatusCode::kNotFound) return Fail(repo.status());
    const bool good = have.ok() && (*have)->config.accuracy.value_or(0) >= m.floor;
    if (retrain || !good) {
      TrainJob job;
      job.repo = repo_dir;
      job.name = m.architecture;
      job.max_batch_size = m.max_batch_size;
      job.data_dir = data_dir;
      job.train.architecture = m.architecture;
      if (absl::Status s = RunTrainJob(job, clock, std::cerr); !s.ok()) return Fail(s);
      repo = ModelRepository::Open(repo_dir);
      if (!repo.ok()) return Fail(repo.status());
      have = repo->Find(m.architecture);
    } else {
      std::cerr << m.architecture << ": trained already (accuracy "
                << *(*have)->config.accuracy << ")\n";
    }
    if (!have.ok()) return Fail(have.status());
    if (reprofile || !(*have)->config.profiles.contains("cpu")) {
      if (absl::Status s = RunProfileJob(**have, ProfileJob{}, clock, std::cerr); !s.ok()) return Fail(s);
    }
  }
  absl::StatusOr<ModelRepository> repo = ModelRepository::Open(repo_dir);
  if (!repo.ok()) return Fail(repo.status());
  if (absl::Status s = WriteExampleRequest(repo_dir, data_dir); !s.ok()) return Fail(s);
  std::cout << "\nTutti demo model repository: " << repo_dir << "\n";
  PrintModelTable(*repo, "cpu", std::cout);
  int below = 0;
  for (const DemoModel& m : kDemoModels) {
    const ModelConfig& c = (*repo->Find(m.architecture))->config;
    if (c.accuracy.value_or(0) < m.floor) {
      std::cerr << absl::StrFormat("error: %s accuracy %.4f is below its floor %.2f\n", c.name,
                                   c.accuracy.value_or(0), m.floor);
      ++below;
    }
  }
  return below == 0 ? 0 : 1;
}

}  // namespace tutti::cli
