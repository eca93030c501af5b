// tutti train | profile | models | demo.
#include <iostream>
#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "tutti/cli/command_util.h"
#include "tutti/cli/model_jobs.h"
#include "tutti/core/file_util.h"
#include "tutti/core/real_clock.h"
#include "tutti/core/status_macros.h"
#include "tutti/datasets/fashion_mnist.h"
#include "tutti/models/evaluate.h"
#include "tutti/experiments/stateful_pipeline.h"
#include "tutti/models/torch_model.h"
#include "tutti/repository/variants.h"

namespace tutti::cli {
namespace {


// The demo repository's models and the test-accuracy floors they must reach.
struct DemoModel {
  const char* architecture;
  double floor;
  int max_batch_size;
  // gru_rows reads rows, online_linear labelled images, calibrated_lenet5
  // raw pixels: none is averaged with the others.
  bool in_ensemble = true;
};
constexpr DemoModel kDemoModels[] = {
    {"mlp", 0.87, 256},       {"lenet5", 0.89, 128},          {"resnet_small", 0.90, 128},
    {"gru_rows", 0.82, 64, false}, {"online_linear", 0.80, 64, false}, {"calibrated_lenet5", 0.89, 128, false}};

// The demo's routing graph, fashion_router: mlp classifies each image;
// its class picks the specialist that answers — lenet5 fine-tuned in its
// last layer on the group's classes, so the specialists share lenet5's
// first four layer stages and are served with prefix batching — and bags
// (class 8, a group of one) exit with mlp's answer.
struct DemoSpecialist {
  const char* name;
  std::vector<int64_t> classes;
};
const std::vector<DemoSpecialist>& DemoSpecialists() {
  static const auto* specialists = new std::vector<DemoSpecialist>{
      {"tops", {0, 2, 4, 6}}, {"lower", {1, 3}}, {"shoes", {5, 7, 9}}};
  return *specialists;
}
constexpr char kDemoRouter[] = "mlp";
constexpr char kDemoTrunk[] = "lenet5";
constexpr char kDemoGraph[] = "fashion_router";
constexpr char kDemoEnsemble[] = "fashion_ensemble";
const std::vector<int64_t> kDemoExit = {8};
constexpr double kDemoGraphObjectiveMs = 20;
constexpr char kDemoStatefulGraph[] = "gru_pipeline";

// Trains (when absent, or with `retrain`) and profiles the specialists,
// then writes the graph — and fashion_ensemble, the demo models side by
// side with their logits averaged — with its accuracy on the test images,
// measured offline over the saved models.
absl::Status BuildDemoGraph(const std::string& repo_dir, const std::string& data_dir, bool retrain, bool reprofile,
                            const Clock& clock) {
  TUTTI_ASSIGN_OR_RETURN(ModelRepository repo, ModelRepository::Open(repo_dir));
  bool missing = false;
  for (const DemoSpecialist& s : DemoSpecialists()) missing |= !repo.Find(s.name).ok();
  for (const DemoSpecialist& s : DemoSpecialists()) {
    if (!retrain && !missing) break;  // all of them, from one trunk
    TrainJob job;
    job.repo = repo_dir;
    job.name = s.name;
    job.data_dir = data_dir;
    job.init_from = kDemoTrunk;
    job.classes.assign(s.classes.begin(), s.classes.end());
    job.train.architecture = kDemoTrunk;
    job.train.last_stage_only = true;
    job.train.epochs = 3;
    TUTTI_RETURN_IF_ERROR(RunTrainJob(job, clock, std::cerr));
  }
  TUTTI_ASSIGN_OR_RETURN(repo, ModelRepository::Open(repo_dir));
  for (const DemoSpecialist& s : DemoSpecialists()) {
    TUTTI_ASSIGN_OR_RETURN(const ModelVersion* v, repo.Find(s.name));
    if (reprofile || !v->config.profiles.contains("cpu")) {
      TUTTI_RETURN_IF_ERROR(RunProfileJob(*v, ProfileJob{}, clock, std::cerr));
    }
  }
  TUTTI_ASSIGN_OR_RETURN(repo, ModelRepository::Open(repo_dir));
  ModelConfig graph = BuiltinModelConfig(kDemoGraph, "", 128);
  graph.platform = Platform::kEnsemble;
  graph.architecture.clear();
  graph.steps.push_back({kDemoRouter, -1, {{"image", "image"}}, {{"logits", "class"}}});
  for (const DemoSpecialist& s : DemoSpecialists()) {
    graph.steps.push_back({s.name, -1, {{"image", "image"}}, {{"logits", "logits"}}, EnsembleRoute{"class", s.classes}});
  }
  graph.early_exit = EnsembleRoute{"class", kDemoExit};
  graph.latency_objective_ms = kDemoGraphObjectiveMs;
  // Offline: the saved models, run directly.
  TUTTI_ASSIGN_OR_RETURN(ImageSet test, LoadFashionMnist(data_dir, Split::kTest));
  TUTTI_ASSIGN_OR_RETURN(std::unique_ptr<TorchModel> router, TorchModel::Load(**repo.Find(kDemoRouter)));
  std::vector<std::unique_ptr<TorchModel>> loaded;
  std::vector<RoutedSpecialist> specialists;
  for (const DemoSpecialist& s : DemoSpecialists()) {
    TUTTI_ASSIGN_OR_RETURN(loaded.emplace_back(), TorchModel::Load(**repo.Find(s.name)));
    specialists.push_back({loaded.back().get(), s.classes});
  }
  TUTTI_ASSIGN_OR_RETURN(graph.accuracy, EvaluateRoutedAccuracy(*router, specialists, kDemoExit, test, 500));
  std::cerr << absl::StrFormat("%s: accuracy %.4f on the %d test images (offline)\n", kDemoGraph, *graph.accuracy,
                               test.size());
  TUTTI_RETURN_IF_ERROR(WriteModelConfig(VersionDir(repo_dir, kDemoGraph, 1), graph));

  // fashion_ensemble: the three demo models side by side, their logits averaged.
  ModelConfig ensemble = graph;
  ensemble.name = kDemoEnsemble;
  ensemble.steps.clear();
  ensemble.early_exit.reset();
  ensemble.merge = "mean";
  std::vector<TorchModel*> members;
  for (const DemoModel& m : kDemoModels) {
    if (!m.in_ensemble) continue;
    ensemble.steps.push_back({m.architecture, -1, {{"image", "image"}}, {{"logits", "logits"}}});
    TUTTI_ASSIGN_OR_RETURN(loaded.emplace_back(), TorchModel::Load(**repo.Find(m.architecture)));
    members.push_back(loaded.back().get());
  }
  TUTTI_ASSIGN_OR_RETURN(ensemble.accuracy, EvaluateMeanAccuracy(members, test, 500));
  std::cerr << absl::StrFormat("%s: accuracy %.4f on the %d test images (offline)\n", kDemoEnsemble,
                               *ensemble.accuracy, test.size());
  return WriteModelConfig(VersionDir(repo_dir, kDemoEnsemble, 1), ensemble);
}

// gru_pipeline: gru_rows between two stateless TorchScript steps (an input
// clamp, a softmax; experiments/stateful_pipeline.h), with the steps
// profiled on this CPU. Its accuracy is gru_rows's (neither step moves the
// argmax of a valid image).
absl::Status BuildStatefulPipeline(const std::string& repo_dir, bool reprofile, const Clock& clock) {
  TUTTI_ASSIGN_OR_RETURN(ModelRepository repo, ModelRepository::Open(repo_dir));
  const std::string clamp = absl::StrCat(kDemoStatefulGraph, "_clamp"),
                    softmax = absl::StrCat(kDemoStatefulGraph, "_softmax");
  if (!repo.Find(kDemoStatefulGraph).ok() || !repo.Find(clamp).ok() || !repo.Find(softmax).ok()) {
    TUTTI_RETURN_IF_ERROR(WriteStatefulPipeline(repo_dir, kDemoStatefulGraph, "gru_rows", 100, std::nullopt));
    TUTTI_ASSIGN_OR_RETURN(repo, ModelRepository::Open(repo_dir));
  }
  for (const std::string& step : {clamp, softmax}) {
    TUTTI_ASSIGN_OR_RETURN(const ModelVersion* v, repo.Find(step));
    if (reprofile || !v->config.profiles.contains("cpu")) {
      TUTTI_RETURN_IF_ERROR(RunProfileJob(*v, ProfileJob{}, clock, std::cerr));
    }
  }
  return absl::OkStatus();
}

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
                "Trains one of Tutti's built-in architectures (mlp, lenet5, resnet_small,\n"
                "gru_rows, online_linear, calibrated_lenet5) on\n"
                "Fashion-MNIST with libtorch, shows progress, evaluates the saved model on the\n"
                "10,000 test images and writes it with its accuracy into the model repository\n"
                "as <repo>/<name>/<version>/{model.pt,config.yaml}. calibrated_lenet5 trains on\n"
                "11/12 of the training images and fits its confidence's temperature on the rest.");
  flags.String("arch", &job.train.architecture,
               "architecture: mlp | lenet5 | resnet_small | gru_rows | online_linear | calibrated_lenet5");
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
  flags.String("init-from", &job.init_from, "fine-tune: start from this repository model's weights");
  flags.Bool("last-stage-only", &job.train.last_stage_only,
             "fine-tune the last layer only, so the model shares the rest with --init-from (prefix batching)");
  std::string classes;
  flags.String("classes", &classes, "train and measure on these classes only, e.g. 5,7,9 (default: all)");
  flags.Int64("test-limit", &job.test_limit, "measure accuracy on the first N test images only (0: all 10,000)");
  flags.Int("copies", &job.copies,
            "train N models NAME_1 … NAME_N instead of one (per-customer fine-tunes): each its own seed and "
            "slice of --limit images; with --init-from each gets that model's profiles and its own load_ms "
            "(0: one model)");
  if (int rc = ParseOrExit(flags, args, {"arch", "repo"}); rc >= 0) return rc;
  if (job.copies < 0 || job.test_limit < 0) {
    return Fail(absl::InvalidArgumentError("--copies and --test-limit must not be negative"));
  }
  for (absl::string_view c : absl::StrSplit(classes, ',', absl::SkipEmpty())) {
    int v = 0;
    if (!absl::SimpleAtoi(c, &v) || v < 0 || v >= kFashionMnistClasses) {
      return Fail(absl::InvalidArgumentError(absl::StrCat("--classes: '", c, "' is not a class 0 … 9")));
    }
    job.classes.push_back(v);
  }
  if (job.train.last_stage_only && job.init_from.empty()) {
    return Fail(absl::InvalidArgumentError("--last-stage-only fine-tunes: give --init-from too"));
  }
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
                "model's config and prints it. A model with shape_buckets is measured at each\n"
                "bucket (stored as KIND/SIZE, the largest also as KIND).");
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
  bool variants = false;
  FlagSet flags("tutti models [--repo DIR] [--variants]",
                "Validates a model repository and lists its models with accuracy and latency\n"
                "profile. Exits 1 with every problem found if the repository is invalid.");
  flags.String("repo", &repo_dir, "model repository directory");
  flags.String("kind", &kind, "executor kind whose profile is shown");
  flags.Bool("variants", &variants, "also list the variants generated per task for model-less serving (INFaaS)");
  if (int rc = ParseOrExit(flags, args); rc >= 0) return rc;
  absl::StatusOr<ModelRepository> repo = ModelRepository::Open(repo_dir);
  if (!repo.ok()) return Fail(repo.status());
  PrintModelTable(*repo, kind, std::cout);
  if (!variants) return 0;
  std::set<std::string> tasks;
  for (const ModelVersion& v : repo->versions()) tasks.insert(v.config.task);
  std::cout << absl::StrFormat("\n%-30s %-22s %-6s %9s %9s %9s %5s %7s %8s\n", "task", "variant", "kind", "accuracy",
                               "l(1) ms", "l(max) ms", "cost", "load s", "MiB");
  for (const std::string& task : tasks) {
    absl::StatusOr<std::vector<ModelVariant>> generated = GenerateTaskVariants(*repo, task, BuiltinHardwareKinds());
    if (!generated.ok()) continue;
    for (const ModelVariant& v : *generated) {
      std::cout << absl::StrFormat("%-30s %-22s %-6s %9.4f %9.3f %9.3f %5.0f %7.3f %8.2f\n", task, v.name,
                                   v.hardware, v.accuracy, ToMillis(v.profile.Latency(1)),
                                   ToMillis(v.profile.Latency(v.profile.max_batch())), v.cost,
                                   ToSeconds(v.load_latency), static_cast<double>(v.memory_bytes) / (1 << 20));
    }
  }
  return 0;
}

int DemoCommand(const Args& args) {
  std::string repo_dir = kDefaultRepo, data_dir = kDefaultFashionMnistDir;
  bool retrain = false, reprofile = false;
  int threads = 0;
  FlagSet flags("tutti demo [--repo DIR]",
                "Builds the demo model repository: trains each demo model (mlp, lenet5,\n"
                "resnet_small; the stateful gru_rows, which reads an image 4 rows per request\n"
                "of a sequence; online_linear, which learns online from each batch's labels;\n"
                "and calibrated_lenet5, which takes raw UINT8 pixels and answers with logits\n"
                "and a calibrated confidence) on Fashion-MNIST if it is absent or below its\n"
                "accuracy floor (0.87, 0.89, 0.90, 0.82, 0.80, 0.89), profiles it on this CPU\n"
                "if it has no profile, and prints\n"
                "the table. Exits 1 if a model stays below its floor. Then the graph\n"
                "fashion_router: mlp routes each image by its class to a specialist (tops,\n"
                "lower, shoes: lenet5 fine-tuned in its last layer on those classes, served\n"
                "with prefix batching), bags exit early with mlp's answer; and the graph\n"
                "fashion_ensemble: mlp, lenet5 and resnet_small side by side, their logits\n"
                "averaged. Their accuracy on the test images is measured offline and recorded.\n"
                "And the stateful graph gru_pipeline: an input clamp, gru_rows, a softmax.");
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
  if (absl::Status s = BuildDemoGraph(repo_dir, data_dir, retrain, reprofile, clock); !s.ok()) return Fail(s);
  if (absl::Status s = BuildStatefulPipeline(repo_dir, reprofile, clock); !s.ok()) return Fail(s);
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
