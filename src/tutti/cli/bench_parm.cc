// tutti bench parm: ParM's tail-latency experiment (experiments/parm_tail.h).
#include <chrono>
#include <cmath>
#include <iostream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "tutti/cli/bench_commands.h"
#include "tutti/cli/command_util.h"
#include "tutti/workload/metrics.h"
#include "tutti/core/file_util.h"
#include "tutti/experiments/parm_tail.h"
#include "tutti/models/torch_model.h"

namespace tutti::cli {

namespace {

void PrintRow(const ParmTailResult& r, std::ostream& out) {
  out << absl::StrFormat("%-22s %9d %9d %9s %9s %9s %11s %9.2f%%", r.label, r.instances, r.requests,
                         FormatMillis(r.p50), FormatMillis(r.p99), FormatMillis(r.p999),
                         FormatMillis(r.p999 - r.p50), 100.0 * r.reconstructed / std::max<int64_t>(1, r.requests));
  if (r.accuracy >= 0) out << absl::StrFormat(" %9.4f", r.accuracy);
  out << absl::StrFormat(" %7d\n", r.errors);
}

std::string CsvRow(const ParmTailResult& r) {
  return absl::StrFormat("%s,%d,%d,%.4f,%.4f,%.4f,%d,%.6f,%d\n", r.label, r.instances, r.requests, ToMillis(r.p50),
                         ToMillis(r.p99), ToMillis(r.p999), r.reconstructed, r.accuracy, r.errors);
}

}  // namespace

int BenchParm(const Args& args) {
  std::string executor = "emulated", ks = "2", repo_dir = "demo_repository", deployed = "mlp", csv;
  std::string slow_shape = "exp";
  std::string data_dir = kDefaultFashionMnistDir;
  double latency_ms = 10, slow_min_ms = 500, slow_max_ms = 2000;
  int64_t seed = 1;
  ParmTailSetup setup;
  FlagSet flags("tutti bench parm [--executor emulated|torch] [--k 2,3,4] [flags]",
                "ParM's tail-latency experiment (ParM section 6): m instances of a deployed model\n"
                "under injected slowdowns (like the paper's background shuffles: `--slowdowns`\n"
                "episodes under way at all times, each slowing 2 random instances by\n"
                "`--slow-factor`, shaped by `--slow-shape`, for a uniform random 0.5-2 s), Poisson\n"
                "arrivals, batch size 1, one pull-based queue. Three setups: no redundancy (m\n"
                "instances), Equal-Resources (m + m/k deployed instances) and ParM (m deployed +\n"
                "m/k parity instances, coding groups of k). Prints p50/p99/p99.9 and how many\n"
                "times smaller ParM's p99.9 - p50 gap is than Equal-Resources'. `emulated`\n"
                "instances run in virtual time with a fixed query latency; `torch` runs the\n"
                "repository's real model and its parity model (`tutti train-parity --encoder\n"
                "sum`) on this CPU and scores the answers.");
  flags.String("executor", &executor, "emulated | torch");
  flags.String("k", &ks, "coding group sizes to compare, e.g. 2,3,4");
  flags.Int("instances", &setup.instances, "m: instances of the deployed model (default 12; torch: 4)");
  flags.Double("rate", &setup.rate, "Poisson arrival rate, requests/s (default 270; torch: 1000)");
  flags.Int64("requests", &setup.requests, "requests per setup (default 100,000; torch: 20,000)");
  flags.Double("latency-ms", &latency_ms, "emulated: the query latency");
  flags.Int("slowdowns", &setup.slowdowns.concurrent, "slowdown episodes under way at any time (default 4; torch: 1)");
  flags.Double("slow-factor", &setup.slowdowns.factor, "latency multiplier of a slowed instance (its mean with exp)");
  flags.String("slow-shape", &slow_shape,
               "exp: a slowed batch takes 1 + (factor - 1)·Exp(1) times as long (most a little, a few a lot); "
               "fixed: exactly factor times");
  flags.Double("slow-min-ms", &slow_min_ms, "shortest slowdown episode");
  flags.Double("slow-max-ms", &slow_max_ms, "longest slowdown episode");
  flags.Int64("seed", &seed, "random seed (arrivals and slowdowns)");
  flags.String("repo", &repo_dir, "torch: model repository");
  flags.String("deployed", &deployed, "torch: the deployed model");
  flags.String("data", &data_dir, "torch: directory with the Fashion-MNIST IDX files");
  flags.String("csv", &csv, "also write the table as CSV to this file");
  if (int rc = ParseOrExit(flags, args); rc >= 0) return rc;
  const bool torch = executor == "torch";
  if (!torch && executor != "emulated") return Fail(absl::InvalidArgumentError("--executor: emulated or torch"));
  if (torch && !flags.WasSet("instances")) setup.instances = 4;
  if (torch && !flags.WasSet("rate")) setup.rate = 1000;
  if (torch && !flags.WasSet("requests")) setup.requests = 20000;
  if (torch && !flags.WasSet("slowdowns")) setup.slowdowns.concurrent = 1;
  setup.slowdowns.min_duration = Millis(slow_min_ms);
  setup.slowdowns.max_duration = Millis(slow_max_ms);
  setup.slowdowns.seed = setup.seed = static_cast<uint64_t>(seed);
  if (slow_shape != "exp" && slow_shape != "fixed") {
    return Fail(absl::InvalidArgumentError(absl::StrCat("--slow-shape: exp or fixed, got '", slow_shape, "'")));
  }
  setup.slowdowns.random = slow_shape == "exp";
  std::vector<int> k_values;
  for (absl::string_view part : absl::StrSplit(ks, ',')) {
    int k = 0;
    if (!absl::SimpleAtoi(part, &k) || k < kMinParityK || k > kMaxParityK) {
      return Fail(absl::InvalidArgumentError(absl::StrCat("--k: expected values in 2..4, got '", part, "'")));
    }
    k_values.push_back(k);
  }
  if (setup.instances < 1 || setup.rate <= 0 || setup.requests < 1 || latency_ms <= 0 ||
      setup.slowdowns.factor < 1 || slow_min_ms <= 0 || slow_max_ms < slow_min_ms) {
    return Fail(absl::InvalidArgumentError("bad experiment parameters (see --help)"));
  }

  // torch: the deployed model and its sum-encoder parity models.
  std::optional<ModelRepository> repo;
  std::optional<ImageSet> test;
  const ModelVersion* deployed_version = nullptr;
  if (torch) {
    absl::StatusOr<ModelRepository> r = ModelRepository::Open(repo_dir);
    if (!r.ok()) return Fail(r.status());
    repo = std::move(*r);
    absl::StatusOr<const ModelVersion*> v = repo->Find(deployed);
    if (!v.ok()) return Fail(v.status());
    deployed_version = *v;
    absl::StatusOr<ImageSet> t = LoadFashionMnist(data_dir, Split::kTest);
    if (!t.ok()) return Fail(t.status());
    test = std::move(*t);
    SetTorchThreads(1);
  }
  auto parity_of = [&](int k) -> absl::StatusOr<const ModelVersion*> {
    for (const ModelVersion& v : repo->versions()) {
      const auto& p = v.config.parity;
      if (p && p->deployed == deployed && p->k == k && p->encoder == ParityEncoder::kSum) return &v;
    }
    return absl::NotFoundError(absl::StrCat("no sum-encoder parity model of '", deployed, "' with k = ", k, " in ",
                                            repo_dir, "; train one with `tutti train-parity --deployed ", deployed,
                                            " --k ", k, "`"));
  };
  const LatencyProfile emulated = *LatencyProfile::Linear(0, Millis(latency_ms), 1);
  auto run = [&](Redundancy redundancy, int k) -> absl::StatusOr<ParmTailResult> {
    ParmTailSetup s = setup;
    s.redundancy = redundancy;
    s.k = k;
    std::cerr << "running " << RedundancyLabel(redundancy, k) << " ...\n";
    if (!torch) return RunParmTailEmulated(s, emulated);
    const ModelVersion* parity = nullptr;
    if (redundancy == Redundancy::kParm) {
      absl::StatusOr<const ModelVersion*> p = parity_of(k);
      if (!p.ok()) return p.status();
      parity = *p;
    }
    return RunParmTailTorch(s, *deployed_version, parity, *test);
  };

  std::cout << absl::StrFormat(
      "ParM tail experiment: %s executors, m = %d, %.0f r/s Poisson, %d requests per setup, %d slowdown(s) under "
      "way (x%.1f %s, %.0f-%.0f ms), seed %d\n",
      executor, setup.instances, setup.rate, setup.requests, setup.slowdowns.concurrent, setup.slowdowns.factor,
      slow_shape, slow_min_ms, slow_max_ms, seed);
  std::cout << absl::StrFormat("%-22s %9s %9s %9s %9s %9s %11s %10s%s %7s\n", "setup", "instances", "requests",
                               "p50 ms", "p99 ms", "p99.9 ms", "p99.9-p50", "rebuilt", torch ? "  accuracy" : "",
                               "errors");
  std::string table = "setup,instances,requests,p50_ms,p99_ms,p999_ms,reconstructed,accuracy,errors\n";
  absl::StatusOr<ParmTailResult> none = run(Redundancy::kNone, k_values[0]);
  if (!none.ok()) return Fail(none.status());
  PrintRow(*none, std::cout);
  table += CsvRow(*none);
  std::string summary;
  for (int k : k_values) {
    absl::StatusOr<ParmTailResult> er = run(Redundancy::kEqualResources, k);
    if (!er.ok()) return Fail(er.status());
    absl::StatusOr<ParmTailResult> parm = run(Redundancy::kParm, k);
    if (!parm.ok()) return Fail(parm.status());
    PrintRow(*er, std::cout);
    PrintRow(*parm, std::cout);
    table += CsvRow(*er) + CsvRow(*parm);
    absl::StrAppendFormat(
        &summary, "k=%d: ParM's p99.9-p50 gap is %.2fx smaller than Equal-Resources'; p99.9 %.0f%% lower; "
                  "median %+.2f ms\n",
        k, static_cast<double>(er->p999 - er->p50) / static_cast<double>(std::max<Duration>(1, parm->p999 - parm->p50)),
        100.0 * (1 - static_cast<double>(parm->p999) / static_cast<double>(er->p999)), ToMillis(parm->p50 - er->p50));
  }
  std::cout << "\n" << summary << "(paper, ParM section 6.2.1: 2.6-3.5x smaller at k=2, p99.9 38-48% lower, median "
               "within 0.5 ms)\n";
  if (!csv.empty()) {
    if (absl::Status s = WriteFileAtomic(csv, table); !s.ok()) return Fail(s);
    std::cerr << "wrote " << csv << "\n";
  }
  return 0;
}

}  // namespace tutti::cli
