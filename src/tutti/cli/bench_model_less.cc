// tutti bench model-less: INFaaS's model-less serving (experiments/model_less.h).
#include <iostream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "tutti/cli/bench_commands.h"
#include "tutti/cli/command_util.h"
#include "tutti/experiments/model_less.h"
#include "tutti/planner/latency_split.h"

namespace tutti::cli {

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
                                 tutti > 0 ? r.cost / tutti : 0, r.total.arrived, 100 * r.total.rate(),
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

}  // namespace tutti::cli
