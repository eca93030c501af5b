// tutti bench parm: ParM's tail-latency experiment (experiments/parm_tail.h); tutti bench prefix:
// Nexus's prefix batching (experiments/prefix_batching.h); tutti bench partition: Symphony's
// sub-cluster partitioning MILP (planner/subcluster_partition.h).
#include <chrono>
#include <cmath>
#include <iostream>
#include <random>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "tutti/cli/command_util.h"
#include "tutti/core/file_util.h"
#include "tutti/models/torch_model.h"
#include "tutti/experiments/model_less.h"
#include "tutti/experiments/parm_tail.h"
#include "tutti/experiments/prefix_batching.h"
#include "tutti/experiments/stateful_serving.h"
#include "tutti/planner/latency_split.h"
#include "tutti/planner/subcluster_partition.h"
#include "tutti/simulator/report.h"

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

}  // namespace

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

// A hand-off this slow counts in `tutti bench stateful`'s ">100us %" (one
// of DelayHistogram's bounds).
constexpr Duration kSlowHandOff = 100 * kMicrosecond;

int BenchStateful(const Args& args) {
  std::string repo_dir = kDefaultRepo, data_dir = kDefaultFashionMnistDir, modes = "none,remus,nspb";
  double duration_s = 5, kill_at_s = 0, hang_at_s = 0, detect_ms = 500, objective_ms = 100, link_us = 0, think_us = 0,
         planned_dispatch_us = 0, turn_ms = 0, accelerator_us = 0;
  int threads = 1;
  bool side_by_side = false;
  StatefulServingSetup setup;
  setup.policy = "eager";  // deferred holds each request near its deadline: latency would be the objective
  FlagSet flags("tutti bench stateful [--repo DIR] [--modes none,remus,nspb] [flags]",
                "Stateful serving (HAMS) on this CPU: the stateful model --model (the demo's gru_rows,\n"
                "which reads an image 4 rows per request of a sequence) on one torch executor whose\n"
                "states a backup replicates, for each replication mode of --modes: none, nspb (HAMS's\n"
                "non-stop primary-backup), remus (stop-and-buffer), checkpoint (checkpoint-replay).\n"
                "Requests go straight to the serving engine in this process (no HTTP, no client):\n"
                "--sequences clients, each classifying test images one after another, sending a\n"
                "step when the last is answered. Prints throughput, latency, the images' accuracy,\n"
                "and what the replication cost (proxy us/bat: the proxies' time per stateful batch,\n"
                "on every thread; release us: from the primary's answer to the batch's release, its\n"
                "update stage and any wait for the backup; queued %: the stateful batches whose hand-off\n"
                "found the slot's lock held through its spin, taken in by the lock's holder; >100us %: the\n"
                "batches, of every step, whose hand-off to their executor took over 100 us: the tail the\n"
                "measured plan is taken from (at 0.1%, its p99.9 is 100 us); plan us: the dispatch delay\n"
                "the scheduler planned each batch's start with, its mean over the run).\n"
                "With --kill-at-s, the primary dies then (what it held is lost) and the backup takes\n"
                "over: prints the failover time, the batches run again, the answers that read a state\n"
                "not descended from the previous answer's (inconsistent), and checks that every\n"
                "request was answered exactly once. With\n"
                "--hang-at-s, the primary stops answering instead, unannounced: the failure detector\n"
                "(a batch overdue by --detect-ms) finds it; prints how long that took too. With\n"
                "--side-by-side, the modes run at the same time instead of one after another, each\n"
                "with executors, backup and clients of its own: they share the machine's every\n"
                "moment, so their difference does not depend on when each ran (`--modes none,none`\n"
                "shows what the method reads when there is nothing to find). With --turn-ms too, they\n"
                "take turns instead: each mode's clients start images only in its turns of that\n"
                "length, so each serves nearly alone, yet all sample the whole run's drift.");
  flags.String("repo", &repo_dir, "model repository");
  flags.String("model", &setup.model, "the stateful model, or a graph with stateful steps (the demo's gru_pipeline)");
  flags.String("modes", &modes, "replication modes to compare");
  flags.Int("sequences", &setup.sequences, "concurrent clients");
  flags.Double("duration-s", &duration_s, "seconds of load per mode");
  flags.Double("kill-at-s", &kill_at_s, "kill the primary this many seconds in (0: never)");
  flags.Double("hang-at-s", &hang_at_s, "the primary stops answering this many seconds in, unannounced (0: never)");
  flags.Double("detect-ms", &detect_ms, "the failure detector's limit: a batch overdue this long means the primary died");
  flags.Double("think-us", &think_us, "a client's mean pause between an answer and its next request (exponential; 0: none)");
  flags.Double("link-us", &link_us, "the backup's link: a message is delivered this long after it is sent (0: shared memory)");
  flags.Double("planned-dispatch-us", &planned_dispatch_us,
               "plan every batch's dispatch at this delay, not at the measured tail (0: measured)");
  flags.Int("checkpoint-every", &setup.replication.checkpoint_every, "checkpoint mode: stateful batches between checkpoints");
  flags.Bool("nondeterminism", &setup.nondeterminism, "sum the model's recurrent products in a random order");
  flags.Double("slo-ms", &objective_ms, "latency objective of every request");
  flags.String("policy", &setup.policy, "scheduling policy: deferred | adaptive | eager | timeout | nexus");
  flags.Int("max-batches-in-flight", &setup.max_in_flight,
            "an executor takes a new batch only while it holds fewer not done (0: no limit)");
  flags.Int("threads", &threads, "libtorch intra-op threads");
  flags.Bool("side-by-side", &side_by_side, "run the modes at the same time, each with clients of its own");
  flags.Double("turn-ms", &turn_ms, "with --side-by-side: the modes take turns this long each (0: all at once)");
  flags.Double("accelerator-us", &accelerator_us,
               "the stateful steps' batches take at least this long, as on an accelerator (emulated time over the "
               "real model's outputs; the scheduler plans with it; 0: the CPU's own time)");
  flags.String("data", &data_dir, "directory with the Fashion-MNIST IDX files");
  if (int rc = ParseOrExit(flags, args); rc >= 0) return rc;
  SetTorchThreads(threads);
  setup.duration = static_cast<Duration>(duration_s * kSecond);
  setup.kill_at = static_cast<Duration>(kill_at_s * kSecond);
  setup.hang_at = static_cast<Duration>(hang_at_s * kSecond);
  setup.replication.detect_after = Millis(detect_ms);
  setup.replication.link_rtt = static_cast<Duration>(link_us * kMicrosecond);
  setup.think = static_cast<Duration>(think_us * kMicrosecond);
  setup.planned_dispatch = static_cast<Duration>(planned_dispatch_us * kMicrosecond);
  if (turn_ms < 0 || (turn_ms > 0 && !side_by_side)) {
    return Fail(absl::InvalidArgumentError("--turn-ms: a length > 0 with --side-by-side (0: all at once)"));
  }
  setup.turn = Millis(turn_ms);
  if (accelerator_us < 0) return Fail(absl::InvalidArgumentError("--accelerator-us: a time >= 0"));
  setup.accelerator = static_cast<Duration>(accelerator_us * kMicrosecond);
  const bool fault = setup.kill_at > 0 || setup.hang_at > 0;
  setup.objective = Millis(objective_ms);
  absl::StatusOr<ModelRepository> repo = ModelRepository::Open(repo_dir);
  if (!repo.ok()) return Fail(repo.status());
  absl::StatusOr<ImageSet> test = LoadFashionMnist(data_dir, Split::kTest);
  if (!test.ok()) return Fail(test.status());
  std::cout << absl::StrFormat("%-10s %9s %8s %8s %8s %7s %10s %11s %8s %8s %10s", "mode", "req/s", "p50 ms",
                               "p99 ms", "errors", "acc", "state KB/s", "proxy us/bat", "held %", "hold us",
                               "release us");
  if (fault) {
    std::cout << absl::StrFormat(" %11s %6s %14s %6s %12s", "failover ms", "rerun", "inconsistent", "once",
                                 "detection ms");
  }
  std::cout << absl::StrFormat(" %8s %8s %8s\n", "queued %", ">100us %", "plan us");
  std::vector<std::string> names = absl::StrSplit(modes, ',', absl::SkipEmpty());
  std::vector<ReplicationMode> parsed;
  for (const std::string& name : names) {
    absl::StatusOr<ReplicationMode> mode = ParseReplicationMode(name);
    if (!mode.ok()) return Fail(mode.status());
    parsed.push_back(*mode);
  }
  auto print = [fault](const std::string& name, const StatefulServingResult& r) {
    const ReplicationStats& st = r.replication;
    const double seconds = static_cast<double>(r.answers) / std::max(1e-9, r.throughput);
    auto per_batch_us = [](Duration total, int64_t batches) {
      return batches == 0 ? 0.0 : ToMillis(total) * 1000 / static_cast<double>(batches);
    };
    auto percent = [](int64_t part, int64_t whole) {
      return whole == 0 ? 0.0 : 100.0 * static_cast<double>(part) / static_cast<double>(whole);
    };
    std::cout << absl::StrFormat(
        "%-10s %9.0f %8.4f %8.3f %8d %7.4f %10.1f %11.2f %8.1f %8.1f %10.2f", name, r.throughput, r.p50_ms, r.p99_ms,
        r.errors, r.accuracy, (st.state_bytes + st.log_bytes) / 1024.0 / std::max(1e-9, seconds),
        per_batch_us(st.proxy_time, st.stateful_batches),
        percent(st.held_batches, st.stateful_batches),
        per_batch_us(st.held_time, st.held_batches), per_batch_us(st.release_time, st.stateful_batches));
    if (fault) {
      const bool once = r.duplicates == 0 && r.answers == r.requests;
      std::cout << absl::StrFormat(" %11.2f %6d %7d/%-6d %6s %12.1f", ToMillis(st.failover_time), st.rerun_batches,
                                   st.inconsistent, st.audited, once ? "yes" : "NO", ToMillis(st.detection_time));
    }
    std::cout << absl::StrFormat(" %8.3f %8.3f %8.1f\n", percent(st.queued_batches, st.stateful_batches),
                                 percent(r.dispatch.Over(kSlowHandOff), r.dispatch.count()), r.planned_dispatch_us);
    std::cout.flush();
    if (r.errors > 0) std::cerr << name << ": the first error: " << r.first_error << "\n";
  };
  // One measurement per mode, each printed when done; or one for them all.
  for (size_t m = 0; m < parsed.size(); m += side_by_side ? parsed.size() : 1) {
    absl::StatusOr<std::vector<StatefulServingResult>> r = MeasureStatefulServing(
        *repo, setup, side_by_side ? parsed : std::vector<ReplicationMode>{parsed[m]}, *test);
    if (!r.ok()) return Fail(r.status());
    for (size_t i = 0; i < r->size(); ++i) print(names[m + i], (*r)[i]);
  }
  return 0;
}

int BenchPartition(const Args& args) {
  int models = 400, sub_clusters = 4, instances = 5, random_tries = 1000;
  int64_t seed = 1;
  double time_limit_s = 10, move_budget = 0.1, drift = 0.5;
  FlagSet flags("tutti bench partition [--models 400] [--sub-clusters 4] [flags]",
                "Symphony's sub-cluster partitioning (section 4.4, Appendix A): --instances random\n"
                "problems of Appendix A.2's kind (exponential request rates; memory, which the paper\n"
                "does not give, log-uniform 0.1-2 GB static plus 10-50% dynamic), each partitioned by\n"
                "the MILP (COIN-OR CBC, --time-limit-s), the greedy, and the best of --random feasible\n"
                "random assignments (Appendix A.2's random solver). Prints the objective (3) and the\n"
                "imbalance factors (max - min) / avg of the sub-clusters' rates and static memory\n"
                "(Figure 16's measure). Then the rates drift (each times e^N(0, --drift)) and the MILP\n"
                "partitions again from its partition, moving at most --move-budget of the static\n"
                "memory (constraint 10: a move unloads and loads, so it costs twice the model's size).");
  flags.Int("models", &models, "models per problem (m)");
  flags.Int("sub-clusters", &sub_clusters, "sub-clusters (l)");
  flags.Int("instances", &instances, "random problems");
  flags.Int("random", &random_tries, "random assignments the random solver tries");
  flags.Double("time-limit-s", &time_limit_s, "CBC's time limit per problem");
  flags.Double("move-budget", &move_budget, "re-partitioning: the share of all static memory that may move");
  flags.Double("drift", &drift, "re-partitioning: the standard deviation of each rate's log change");
  flags.Int64("seed", &seed, "the first problem's seed (problem k: seed + k)");
  if (int rc = ParseOrExit(flags, args); rc >= 0) return rc;
  if (models < 1 || sub_clusters < 1 || instances < 1 || random_tries < 1 || !(time_limit_s > 0) ||
      !(move_budget >= 0) || !(drift >= 0)) {
    return Fail(absl::InvalidArgumentError("--models, --sub-clusters, --instances, --random and --time-limit-s must "
                                           "be positive, --move-budget and --drift not negative"));
  }
  using WallClock = std::chrono::steady_clock;
  const auto seconds_since = [](WallClock::time_point t0) {
    return std::chrono::duration<double>(WallClock::now() - t0).count();
  };
  std::cout << absl::StrFormat("%d models into %d sub-clusters, %d problems; objective = rate deviation + w * memory "
                               "deviation (w = total rate / total memory)\n",
                               models, sub_clusters, instances);
  std::cout << absl::StrFormat("%-8s %-22s %12s %10s %10s %9s %8s\n", "problem", "solver", "objective",
                               "rate imb.", "mem. imb.", "seconds", "optimal");
  const auto row = [&](int k, const std::string& solver, const PartitionProblem& p, const Partition& r, double secs) {
    std::cout << absl::StrFormat("%-8d %-22s %12.2f %10.4f %10.4f %9.2f %8s\n", k, solver, r.objective,
                                 ImbalanceFactor(SubClusterTotals(p, r.sub_cluster, false)),
                                 ImbalanceFactor(SubClusterTotals(p, r.sub_cluster, true)), secs,
                                 r.optimal ? "yes" : "no");
    std::cout.flush();
  };
  std::vector<double> greedy_ratio, random_ratio;
  for (int k = 0; k < instances; ++k) {
    PartitionProblem p = RandomPartitionProblem(static_cast<uint64_t>(seed + k), models, sub_clusters);
    WallClock::time_point t0 = WallClock::now();
    absl::StatusOr<Partition> milp = SolvePartitionMilp(p, static_cast<Duration>(time_limit_s * kSecond));
    const double milp_s = seconds_since(t0);
    if (!milp.ok()) return Fail(milp.status());
    row(k, "milp (cbc)", p, *milp, milp_s);
    t0 = WallClock::now();
    absl::StatusOr<Partition> greedy = GreedyPartition(p);
    if (!greedy.ok()) return Fail(greedy.status());
    row(k, "greedy", p, *greedy, seconds_since(t0));
    t0 = WallClock::now();
    absl::StatusOr<Partition> random = RandomPartition(p, random_tries, static_cast<uint64_t>(seed + k));
    if (!random.ok()) return Fail(random.status());
    row(k, absl::StrCat("best of ", random_tries, " random"), p, *random, seconds_since(t0));
    greedy_ratio.push_back(greedy->objective / std::max(milp->objective, 1e-12));
    random_ratio.push_back(random->objective / std::max(milp->objective, 1e-12));
    // The rates drift; the MILP starts from its partition with a budget.
    PartitionProblem next = p;
    std::mt19937_64 rng(static_cast<uint64_t>(seed + k) * 7919);
    std::normal_distribution<double> change(0, drift);
    double memory = 0;
    for (PartitionModel& m : next.models) {
      m.rate *= std::exp(change(rng));
      memory += m.static_memory;
    }
    next.current = milp->sub_cluster;
    next.max_move_cost = 2 * move_budget * memory;
    Partition stay{next.current, PartitionObjective(next, next.current), false};
    row(k, "drifted, unchanged", next, stay, 0);
    t0 = WallClock::now();
    absl::StatusOr<Partition> moved = SolvePartitionMilp(next, static_cast<Duration>(time_limit_s * kSecond));
    if (!moved.ok()) return Fail(moved.status());
    row(k, absl::StrFormat("drifted, milp <=%.0f%% mv", 100 * move_budget), next, *moved, seconds_since(t0));
    std::cout << absl::StrFormat("%-8s moved %.1f%% of the static memory\n", "",
                                 100 * PartitionMoveCost(next, moved->sub_cluster) / 2 / memory);
  }
  const auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[(v.size() - 1) / 2];
  };
  std::cout << absl::StrFormat("objective over the MILP's, medians: greedy %.2fx, best of %d random %.1fx\n",
                               median(greedy_ratio), random_tries, median(random_ratio));
  return 0;
}

int BenchModelLess(const Args& args) {
  std::string repo_dir = kDefaultRepo, pools = "cpu=2,inf1=4,v100=2";
  double objective_ms = 10, duration_s = 240, timeline_s = 0;
  int64_t seed = 1;
  ModelLessSetup setup;
  FlagSet flags("tutti bench model-less [--repo DIR] [flags]",
                "INFaaS's model-less serving (INFaaS section 6.2, a fluctuating load) with the\n"
                "repository's real models: queries name only --task with --accuracy and --slo-ms; the\n"
                "task's variants are generated (each stateless model with a measured accuracy and cpu\n"
                "profile, on cpu, inf1 and v100: INFaaS Table 2's speed-ups and costs) and their\n"
                "instances simulated in virtual time (deterministic) under --policy while the load\n"
                "rises from --base-rps to --peak-rps and falls back over --duration-s. Tutti picks a\n"
                "variant per query and scales the variants every second (the ILP, by CBC; and INFaaS's\n"
                "greedy heuristic), against fixed-variant baselines that scale only horizontally.\n"
                "Prints the variants, then per run: cost (instance-seconds x cost), queries late or\n"
                "dropped, p99 latency, the answers' accuracy (the serving variants' measured test\n"
                "accuracy, weighted by answers) and where the instance-seconds went.");
  flags.String("repo", &repo_dir, "model repository");
  flags.String("task", &setup.task, "the task the queries name");
  flags.Double("accuracy", &setup.min_accuracy, "the queries' least accuracy");
  flags.Double("slo-ms", &objective_ms, "the queries' latency objective");
  flags.Double("base-rps", &setup.base_rps, "queries/s at the start and the end");
  flags.Double("peak-rps", &setup.peak_rps, "queries/s at the peak");
  flags.Double("duration-s", &duration_s, "seconds of virtual time");
  flags.String("pools", &pools, "instances per hardware kind at most, KIND=N,…");
  flags.String("policy", &setup.policy, "scheduling policy: adaptive | deferred | eager | timeout");
  flags.Double("slack", &setup.slack, "INFaaS's slack-threshold: capacity kept above the load");
  flags.Int64("seed", &seed, "random seed of the arrivals");
  flags.Double("timeline-s", &timeline_s, "also print each run's queries, bad share and instances every this many seconds");
  if (int rc = ParseOrExit(flags, args); rc >= 0) return rc;
  setup.objective = Millis(objective_ms);
  setup.series_interval = static_cast<Duration>(timeline_s * kSecond);
  setup.duration = static_cast<Duration>(duration_s * kSecond);
  setup.seed = static_cast<uint64_t>(seed);
  setup.pools.clear();
  for (absl::string_view pool : absl::StrSplit(pools, ',', absl::SkipEmpty())) {
    const std::vector<std::string> kv = absl::StrSplit(pool, '=');
    int n = 0;
    if (kv.size() != 2 || !absl::SimpleAtoi(kv[1], &n) || n < 1) {
      return Fail(absl::InvalidArgumentError(absl::StrCat("--pools: '", pool, "' is not KIND=N with N >= 1")));
    }
    setup.pools[kv[0]] = n;
  }
  if (!(setup.base_rps > 0) || setup.peak_rps < setup.base_rps || setup.duration <= 0) {
    return Fail(absl::InvalidArgumentError("needs 0 < --base-rps <= --peak-rps and --duration-s > 0"));
  }
  absl::StatusOr<ModelRepository> repo = ModelRepository::Open(repo_dir);
  if (!repo.ok()) return Fail(repo.status());
  absl::StatusOr<std::vector<ModelVariant>> variants = GenerateTaskVariants(*repo, setup.task, BuiltinHardwareKinds());
  if (!variants.ok()) return Fail(variants.status());
  std::cout << absl::StrFormat("task %s: accuracy >= %.4g within %.4g ms; load %.0f -> %.0f -> %.0f queries/s over %.0f s\n",
                               setup.task, setup.min_accuracy, objective_ms, setup.base_rps, setup.peak_rps,
                               setup.base_rps, duration_s);
  std::cout << absl::StrFormat("%-20s %9s %9s %14s %6s %6s %6s\n", "variant", "accuracy", "l(1) ms", "saturation q/s",
                               "cost", "load s", "slots");
  for (const ModelVariant& v : *variants) {
    const auto pool = setup.pools.find(v.hardware);
    std::cout << absl::StrFormat("%-20s %9.4f %9.3f %14.0f %6.0f %6.1f %6d\n", v.name, v.accuracy,
                                 ToMillis(v.profile.Latency(1)), ThroughputWithin(v.profile, setup.objective / 2),
                                 v.cost, ToSeconds(v.load_latency), pool == setup.pools.end() ? 4 : pool->second);
  }
  absl::StatusOr<std::vector<ModelLessRun>> runs = RunModelLessExperiment(*variants, setup, &std::cerr);
  if (!runs.ok()) return Fail(runs.status());
  std::cout << absl::StrFormat("\n%-26s %10s %8s %10s %8s %8s %9s %6s  %s\n", "run", "cost", "vs tutti", "queries",
                               "bad %", "p99 ms", "accuracy", "scale", "instance-seconds");
  const double tutti = (*runs)[0].result.cost;
  for (const ModelLessRun& run : *runs) {
    const SimResult& r = run.result;
    std::vector<std::string> used;
    for (size_t j = 0; j < r.instance_seconds.size(); ++j) {
      if (r.instance_seconds[j] > 0) used.push_back(absl::StrFormat("%s %.0f", r.models[j].name, r.instance_seconds[j]));
    }
    std::cout << absl::StrFormat("%-26s %10.0f %7.2fx %10d %8.3f %8.2f %9.4f %3d/%-2d  %s\n", run.label, r.cost,
                                 tutti > 0 ? r.cost / tutti : 0, r.total.arrived, 100 * r.total.BadRate(),
                                 ToMillis(r.total.latency.Quantile(0.99)), r.accuracy, r.scale_ups, r.scale_downs,
                                 absl::StrJoin(used, ", "));
  }
  for (const ModelLessRun& run : *runs) {
    const SimSeries& s = run.result.series;
    if (s.interval <= 0) break;
    std::cout << "\n" << run.label << ": t s, queries/s, bad %, instances per variant\n";
    const auto& allocation = run.result.allocation;
    size_t a = 0;
    for (size_t i = 0; i < s.good.front().size(); ++i) {
      const Time t = static_cast<Time>(i) * s.interval;
      while (a + 1 < allocation.size() && allocation[a + 1].first <= t) ++a;
      std::vector<std::string> up;
      for (size_t j = 0; a < allocation.size() && j < allocation[a].second.size(); ++j) {
        if (allocation[a].second[j] > 0) up.push_back(absl::StrCat(run.result.models[j].name, " x", allocation[a].second[j]));
      }
      std::cout << absl::StrFormat("%6.0f %10.0f %7.2f  %s\n", ToSeconds(t), (s.Good(i) + s.Bad(i)) / ToSeconds(s.interval),
                                   100 * s.BadRate(i), absl::StrJoin(up, ", "));
    }
  }
  return 0;
}

int BenchCommand(const Args& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::cout << "usage: tutti bench <experiment> [flags]\n\nexperiments:\n"
                 "  model-less INFaaS: model-less queries, variants chosen and scaled, vs fixed variants\n"
                 "  parm   ParM's tail-latency experiment: none vs Equal-Resources vs ParM\n"
                 "  partition Symphony's sub-cluster partitioning: the MILP (CBC) vs greedy vs random\n"
                 "  prefix Nexus's prefix batching: N models sharing their leading layers, with and without\n"
                 "  stateful HAMS: a stateful model's states replicated with none, remus, nspb or checkpoint\n";
    return args.empty() ? 2 : 0;
  }
  if (args[0] == "model-less") return BenchModelLess(Args(args.begin() + 1, args.end()));
  if (args[0] == "parm") return BenchParm(Args(args.begin() + 1, args.end()));
  if (args[0] == "partition") return BenchPartition(Args(args.begin() + 1, args.end()));
  if (args[0] == "prefix") return BenchPrefix(Args(args.begin() + 1, args.end()));
  if (args[0] == "stateful") return BenchStateful(Args(args.begin() + 1, args.end()));
  return Fail(absl::InvalidArgumentError(
      absl::StrCat("unknown experiment '", args[0], "' (expected: model-less, parm, partition, prefix, stateful)")));
}

}  // namespace tutti::cli
