// tutti train-parity | eval-parity: ParM parity models (ParM, SOSP 2019).
#include <algorithm>
#include <iostream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tutti/cli/command_util.h"
#include "tutti/core/file_util.h"
#include "tutti/core/real_clock.h"
#include "tutti/core/status_macros.h"
#include "tutti/datasets/fashion_mnist.h"
#include "tutti/models/parity_trainer.h"

namespace tutti::cli {
namespace {

constexpr double kUnavailableFractions[] = {0, 0.05, 0.1, 0.2};

// "<deployed>-parity-k<k>-<encoder>"
std::string DefaultParityName(const std::string& deployed, const ParitySpec& spec) {
  return absl::StrCat(deployed, "-parity-k", spec.k, "-", ParityEncoderName(spec.encoder));
}

struct ParityRow {
  std::string deployed, parity;
  ParitySpec spec;
  ParityAccuracy acc;
};

absl::StatusOr<ParityRow> EvaluateParityModel(const ModelRepository& repo, const ModelVersion& parity,
                                              const ImageSet& test) {
  const ParitySpec& spec = *parity.config.parity;
  TUTTI_ASSIGN_OR_RETURN(const ModelVersion* deployed, repo.Find(spec.deployed));
  TUTTI_ASSIGN_OR_RETURN(std::unique_ptr<TorchModel> d, TorchModel::Load(*deployed));
  TUTTI_ASSIGN_OR_RETURN(std::unique_ptr<TorchModel> p, TorchModel::Load(parity));
  TUTTI_ASSIGN_OR_RETURN(ParityCodec codec, ParityCodec::Create(spec.encoder, spec.k, parity.config.inputs[0].shape));
  TUTTI_ASSIGN_OR_RETURN(ParityAccuracy acc, EvaluateParity(*d, *p, codec, test));
  return ParityRow{spec.deployed, parity.config.name, spec, acc};
}

void PrintParityTable(const std::vector<ParityRow>& rows, std::ostream& out) {
  out << absl::StrFormat("%-10s %-26s %2s %-7s %7s %7s %7s", "deployed", "parity model", "k", "encoder", "A_a",
                         "A_d", "A_a-A_d");
  for (double f : kUnavailableFractions) out << absl::StrFormat("  A_o(%.2f)", f);
  out << absl::StrFormat("  %s\n", "default");
  for (const ParityRow& r : rows) {
    out << absl::StrFormat("%-10s %-26s %2d %-7s %7.4f %7.4f %7.4f", r.deployed, r.parity, r.spec.k,
                           ParityEncoderName(r.spec.encoder), r.acc.available, r.acc.degraded,
                           r.acc.available - r.acc.degraded);
    for (double f : kUnavailableFractions) out << absl::StrFormat("  %9.4f", r.acc.Overall(f));
    out << absl::StrFormat("  %7.4f\n", 1.0 / kFashionMnistClasses);
  }
}

std::string ParityCsv(const std::vector<ParityRow>& rows) {
  std::string csv = "deployed,parity_model,k,encoder,queries,available_accuracy,degraded_accuracy";
  for (double f : kUnavailableFractions) absl::StrAppendFormat(&csv, ",overall_f%.2f", f);
  csv += ",default_bound\n";
  for (const ParityRow& r : rows) {
    absl::StrAppendFormat(&csv, "%s,%s,%d,%s,%d,%.6f,%.6f", r.deployed, r.parity, r.spec.k,
                          ParityEncoderName(r.spec.encoder), r.acc.queries, r.acc.available, r.acc.degraded);
    for (double f : kUnavailableFractions) absl::StrAppendFormat(&csv, ",%.6f", r.acc.Overall(f));
    absl::StrAppendFormat(&csv, ",%.6f\n", 1.0 / kFashionMnistClasses);
  }
  return csv;
}

}  // namespace

int TrainParityCommand(const Args& args) {
  std::string repo_dir = "demo_repository", deployed_name, name, encoder = "sum", data_dir = kDefaultFashionMnistDir;
  int64_t version = 1, train_limit = 0, seed = 1;
  int threads = 0;
  ParityTrainOptions options;
  FlagSet flags("tutti train-parity --deployed MODEL --k 2|3|4 [--encoder sum|concat] [flags]",
                "Trains a ParM parity model for a deployed built-in model: each training sample is\n"
                "k random Fashion-MNIST images encoded into one query (sum, or downsized and tiled\n"
                "for concat), labelled with the sum of the deployed model's outputs; same\n"
                "architecture, MSE loss, Adam (lr 0.001, L2 1e-5). Writes it to the repository as\n"
                "<repo>/<name>/<version> with `parity: {deployed, k, encoder}` in its config and\n"
                "prints its accuracy on the 10,000 test images (see `tutti eval-parity`).");
  flags.String("repo", &repo_dir, "model repository directory");
  flags.String("deployed", &deployed_name, "the deployed model the parity model protects");
  flags.Int("k", &options.k, "coding group size: 2, 3 or 4 queries per parity query");
  flags.String("encoder", &encoder, "sum | concat");
  flags.String("name", &name, "parity model name (default: <deployed>-parity-k<k>-<encoder>)");
  flags.Int64("version", &version, "version number to write");
  flags.Int("epochs", &options.epochs, "epochs of 60,000 parity samples (0: 10 for mlp, 15 otherwise)");
  flags.Int("batch-size", &options.batch_size, "minibatch size");
  flags.Double("lr", &options.learning_rate, "Adam learning rate");
  flags.Double("weight-decay", &options.weight_decay, "L2 penalty");
  flags.Int64("seed", &seed, "random seed");
  flags.Int64("limit", &train_limit, "sample from the first N training images only (0: all 60,000)");
  flags.String("data", &data_dir, "directory with the Fashion-MNIST IDX files");
  flags.Int("threads", &threads, "libtorch intra-op threads (0: one per core)");
  if (int rc = ParseOrExit(flags, args, {"deployed", "k"}); rc >= 0) return rc;
  options.seed = static_cast<uint64_t>(seed);
  SetTorchThreads(threads);
  absl::StatusOr<ParityEncoder> enc = ParseParityEncoder(encoder);
  if (!enc.ok()) return Fail(enc.status());
  options.encoder = *enc;
  const ParitySpec spec{deployed_name, options.k, options.encoder};
  if (name.empty()) name = DefaultParityName(deployed_name, spec);

  absl::StatusOr<ModelRepository> repo = ModelRepository::Open(repo_dir);
  if (!repo.ok()) return Fail(repo.status());
  absl::StatusOr<const ModelVersion*> deployed = repo->Find(deployed_name);
  if (!deployed.ok()) return Fail(deployed.status());
  if ((*deployed)->config.parity) {
    return Fail(absl::InvalidArgumentError(absl::StrCat("'", deployed_name, "' is itself a parity model")));
  }
  if ((*deployed)->config.platform != Platform::kBuiltin) {
    return Fail(absl::InvalidArgumentError(
        absl::StrCat("'", deployed_name, "' is a ", PlatformName((*deployed)->config.platform),
                     " model; parity models are trained for built-in architectures")));
  }
  absl::StatusOr<std::unique_ptr<TorchModel>> model = TorchModel::Load(**deployed);
  if (!model.ok()) return Fail(model.status());
  absl::StatusOr<ImageSet> train = LoadFashionMnist(data_dir, Split::kTrain);
  absl::StatusOr<ImageSet> test = LoadFashionMnist(data_dir, Split::kTest);
  if (!train.ok()) return Fail(train.status());
  if (!test.ok()) return Fail(test.status());
  if (train_limit > 0) *train = train->Slice(0, train_limit);

  std::cerr << absl::StrFormat("training %s: parity model of %s (%s), k = %d, %s encoder, on %d images\n", name,
                               deployed_name, (*deployed)->config.architecture, options.k, encoder, train->size());
  RealClock clock;
  const std::string dir = VersionDir(repo_dir, name, version);
  const std::string weights = absl::StrCat(dir, "/", kWeightsFileName);
  absl::StatusOr<TrainResult> result =
      TrainParityModel(options, **model, *train, *test, weights, clock, [](const TrainProgress& p) {
        std::cerr << absl::StrFormat("  epoch %d/%d  step %4d/%d  mse %.4f", p.epoch, p.epochs, p.step,
                                     p.steps_per_epoch, p.loss);
        if (p.epoch_end) std::cerr << absl::StrFormat("  degraded acc %.4f", p.eval_accuracy);
        std::cerr << absl::StrFormat("  elapsed %.0fs  ETA %.0fs\n", p.elapsed_s, p.eta_s);
      });
  if (!result.ok()) return Fail(result.status());
  ModelConfig config = ParityModelConfig((*deployed)->config, name, spec);
  config.parameters = result->parameters;
  if (absl::Status s = WriteModelConfig(dir, config); !s.ok()) return Fail(s);
  // Score the artifact as written, through the executors' loading path.
  absl::StatusOr<ModelRepository> updated = ModelRepository::Open(repo_dir);
  if (!updated.ok()) return Fail(updated.status());
  absl::StatusOr<ParityRow> row = EvaluateParityModel(*updated, **updated->Find(name, version), *test);
  if (!row.ok()) return Fail(row.status());
  std::cerr << absl::StrFormat("wrote %s\n", dir);
  PrintParityTable({*row}, std::cout);
  return 0;
}

int EvalParityCommand(const Args& args) {
  std::string repo_dir = "demo_repository", deployed, csv, data_dir = kDefaultFashionMnistDir;
  FlagSet flags("tutti eval-parity [--repo DIR] [--deployed MODEL] [--csv FILE]",
                "Measures ParM's accuracy for every parity model in the repository on the 10,000\n"
                "Fashion-MNIST test images, cut into coding groups of k: A_a (the deployed model's\n"
                "accuracy), A_d (degraded mode: each prediction rebuilt as F_P(P) - sum of the\n"
                "other k-1), the overall accuracy A_o(f) = (1-f) A_a + f A_d when a fraction f of\n"
                "predictions is unavailable, and the default-prediction bound (1/classes).");
  flags.String("repo", &repo_dir, "model repository directory");
  flags.String("deployed", &deployed, "only the parity models of this deployed model");
  flags.String("csv", &csv, "also write the table as CSV to this file");
  flags.String("data", &data_dir, "directory with the Fashion-MNIST IDX files");
  if (int rc = ParseOrExit(flags, args); rc >= 0) return rc;
  absl::StatusOr<ModelRepository> repo = ModelRepository::Open(repo_dir);
  if (!repo.ok()) return Fail(repo.status());
  absl::StatusOr<ImageSet> test = LoadFashionMnist(data_dir, Split::kTest);
  if (!test.ok()) return Fail(test.status());
  std::vector<ParityRow> rows;
  for (const std::string& name : repo->ModelNames()) {
    const ModelVersion* v = *repo->Find(name);
    if (!v->config.parity || (!deployed.empty() && v->config.parity->deployed != deployed)) continue;
    std::cerr << "evaluating " << name << "\n";
    absl::StatusOr<ParityRow> row = EvaluateParityModel(*repo, *v, *test);
    if (!row.ok()) return Fail(row.status());
    rows.push_back(*row);
  }
  if (rows.empty()) {
    return Fail(absl::NotFoundError(absl::StrCat("no parity models", deployed.empty() ? "" : " of " + deployed,
                                                 " in ", repo_dir, "; train one with `tutti train-parity`")));
  }
  std::sort(rows.begin(), rows.end(), [](const ParityRow& a, const ParityRow& b) {
    return std::tuple(a.deployed, a.spec.encoder, a.spec.k) < std::tuple(b.deployed, b.spec.encoder, b.spec.k);
  });
  PrintParityTable(rows, std::cout);
  if (!csv.empty()) {
    if (absl::Status s = WriteFileAtomic(csv, ParityCsv(rows)); !s.ok()) return Fail(s);
    std::cerr << "wrote " << csv << "\n";
  }
  return 0;
}

}  // namespace tutti::cli
