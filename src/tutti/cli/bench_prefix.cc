// tutti bench prefix: Nexus's prefix batching (experiments/prefix_batching.h).
#include <iostream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "tutti/cli/bench_commands.h"
#include "tutti/cli/command_util.h"
#include "tutti/models/torch_model.h"
#include "tutti/experiments/prefix_batching.h"

namespace tutti::cli {

int BenchPrefix(const Args& args) {
  std::string repo_dir = "build/prefix_repository_resnet", data_dir = kDefaultFashionMnistDir, prefix = "s", sizes = "2,4,8,16";
  double objective_ms = 10, probe_s = 3;
  int threads = 1;
  PrefixBatchingSetup setup;
  FlagSet flags("tutti bench prefix [--repo DIR] [--sizes 2,4,8,16] [flags]",
                "Prefix batching (Nexus section 6.3, Figure 15) on this CPU: N models sharing their\n"
                "leading layers (PREFIX0 … PREFIX{N-1} of the repository, e.g. specialists made by\n"
                "`tutti train --init-from resnet_small --last-stage-only`, as bench/prefix_batching.sh does)\n"
                "on one torch executor, with and without prefix batching, for each N of --sizes.\n"
                "Requests go straight to the serving engine in this process (no HTTP, no client):\n"
                "Poisson arrivals split equally over the N models, Fashion-MNIST test images. For\n"
                "each, the highest rate at which at most 1% of the requests are late, dropped or\n"
                "failed, and the parameters the executor holds.");
  flags.String("repo", &repo_dir, "model repository");
  flags.String("prefix", &prefix, "the models are named PREFIX0, PREFIX1, …");
  flags.String("sizes", &sizes, "numbers of models to compare");
  flags.Double("slo-ms", &objective_ms, "latency objective of every request");
  flags.String("policy", &setup.policy, "scheduling policy: deferred | adaptive | eager | timeout | nexus");
  flags.Double("probe-s", &probe_s, "seconds per probed rate");
  flags.Double("rate", &setup.start_rate, "the search's first rate, requests/s");
  flags.Double("tolerance", &setup.tolerance, "relative precision of the search");
  flags.Int("threads", &threads, "libtorch intra-op threads");
  flags.String("data", &data_dir, "directory with the Fashion-MNIST IDX files");
  if (int rc = ParseOrExit(flags, args); rc >= 0) return rc;
  SetTorchThreads(threads);
  setup.objective = Millis(objective_ms);
  setup.probe = static_cast<Duration>(probe_s * kSecond);
  absl::StatusOr<ModelRepository> repo = ModelRepository::Open(repo_dir);
  if (!repo.ok()) return Fail(repo.status());
  absl::StatusOr<ImageSet> test = LoadFashionMnist(data_dir, Split::kTest);
  if (!test.ok()) return Fail(test.status());
  std::cout << absl::StrFormat("%-4s %-8s %14s %8s %14s %8s\n", "N", "prefix", "goodput r/s", "bad %", "parameters",
                               "gain");
  for (absl::string_view size : absl::StrSplit(sizes, ',', absl::SkipEmpty())) {
    int n = 0;
    if (!absl::SimpleAtoi(size, &n) || n < 1) {
      return Fail(absl::InvalidArgumentError(absl::StrCat("--sizes: '", size, "' is not a count")));
    }
    setup.models.clear();
    for (int i = 0; i < n; ++i) setup.models.push_back(absl::StrCat(prefix, i));
    double without = 0;
    for (bool on : {false, true}) {
      setup.prefix_batching = on;
      std::cerr << absl::StrFormat("N = %d, prefix batching %s:\n", n, on ? "on" : "off");
      absl::StatusOr<PrefixBatchingResult> r = MeasurePrefixBatching(*repo, setup, *test, &std::cerr);
      if (!r.ok()) return Fail(r.status());
      if (!on) without = r->goodput;
      std::cout << absl::StrFormat("%-4d %-8s %14.0f %8.2f %14d %8s\n", n, on ? "on" : "off", r->goodput,
                                   100 * r->bad_at_goodput, r->parameters,
                                   on && without > 0 ? absl::StrFormat("%+.0f%%", 100 * (r->goodput / without - 1))
                                                     : "");
      std::cout.flush();
    }
  }
  return 0;
}

}  // namespace tutti::cli
