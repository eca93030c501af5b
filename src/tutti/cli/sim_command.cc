// tutti sim run | compare | goodput.
#include <iostream>
#include <optional>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "tutti/cli/command_util.h"
#include "tutti/console/console_assets.h"
#include "tutti/core/status_macros.h"
#include "tutti/cli/simulated_cluster.h"
#include "tutti/simulator/experiment.h"
#include "tutti/simulator/goodput.h"
#include "tutti/simulator/report.h"

namespace tutti::cli {
namespace {

constexpr char kSimHelp[] =
    "usage: tutti sim <run|compare|goodput> EXPERIMENT.yaml [flags]\n"
    "       tutti sim <run|compare|goodput> [EXPERIMENT.yaml] --repo DIR --config FILE [flags]\n\n"
    "Runs the deterministic discrete-event cluster simulator: the same scheduler\n"
    "objects the server uses, over emulated GPUs, in virtual time.\n\n"
    "  run      simulate one policy at the experiment's rate\n"
    "  compare  every policy on the same workload, with goodput ratios\n"
    "  goodput  search the highest rate whose p99 meets every SLO\n\n"
    "With --repo and --config, the cluster is the one `tutti serve` would run from\n"
    "that repository and serve config (its models, objectives, executor groups,\n"
    "policy, drop, margins and delay model; every executor emulated by the\n"
    "profile the config names); the experiment, if any, gives the workload and\n"
    "the run (without one: Poisson arrivals at --rate, equal shares).\n\n"
    "See `tutti sim <action> --help` for flags and the README for the YAML format.\n";

struct SimFlags {
  std::string policy, csv, plot_dir, repo, config, html;
  int64_t seed = 0;
  double rate = 0, duration_s = 0, tolerance = 0.01, html_interval_s = 0;
  bool goodput = false, timeline = false, check = false;
  bool series = false;  // keep SimResult::series (run with --html or --plot-dir)
};

FlagSet MakeFlags(const std::string& action, SimFlags* f) {
  FlagSet flags(absl::StrCat("tutti sim ", action, " EXPERIMENT.yaml [flags]\n       tutti sim ", action,
                             " [EXPERIMENT.yaml] --repo DIR --config FILE [flags]"),
                action == "run"       ? "Simulates one policy at the experiment's rate and prints per-model metrics."
                : action == "compare" ? "Runs every policy of the experiment on the same workload and seed;\n"
                                        "with --goodput, searches each policy's goodput first."
                                      : "Searches the highest offered rate at which every model's p99 latency\n"
                                        "stays within its SLO (drops count as misses).");
  if (action != "compare") {
    flags.String("policy", &f->policy,
                 "policy, with +early for early drop, e.g. deferred+early; for loads also +lru, +on_demand or "
                 "+first_request (default: the experiment's)");
  }
  flags.String("repo", &f->repo, "model repository: simulate the cluster `tutti serve` would run (with --config)");
  flags.String("config", &f->config, "serve config over --repo (\"\": its defaults, as tutti serve)");
  flags.Int64("seed", &f->seed, "random seed (0: the experiment's)");
  flags.Double("rate", &f->rate, "total offered rate in requests/s (0: the experiment's)");
  flags.Double("duration-s", &f->duration_s, "virtual seconds of arrivals (0: the experiment's)");
  if (action == "compare") flags.Bool("goodput", &f->goodput, "compare goodput searched per policy");
  flags.Bool("check", &f->check,
             "simulate nothing: name the policies it would run and the keys it would not read (exit 1 if any)");
  if (action != "run") flags.Double("tolerance", &f->tolerance, "relative precision of goodput search");
  if (action == "run") {
    flags.Bool("timeline", &f->timeline, "record every batch (plot a GPU timeline)");
    flags.String("html", &f->html,
                 "write a self-contained HTML report to this file: goodput per model, GPUs used, autoscaling "
                 "advice and bad rate over time (Symphony Figure 15's panels)");
    flags.Double("html-interval-s", &f->html_interval_s,
                 "the time step of the report and of --plot-dir's series plot, in virtual seconds (0: the "
                 "run's duration / 360, at least 1 s)");
  }
  flags.String("csv", &f->csv, "write per-model results as CSV to this file");
  flags.String("plot-dir", &f->plot_dir,
               "write PNG plots (gnuplot) into this directory (with `run`, also Figure 15's panels over time)");
  return flags;
}

void Apply(const SimFlags& f, SimConfig* c) {
  if (!f.policy.empty()) c->policy = f.policy;
  if (f.seed) c->seed = static_cast<uint64_t>(f.seed);
  if (f.rate > 0) {
    c->workload = c->workload.rate > 0 ? ScaleWorkload(c->workload, f.rate / c->workload.rate)
                                       : WorkloadSpec{.arrival = c->workload.arrival, .rate = f.rate};
  }
  if (f.duration_s > 0) c->duration = Seconds(f.duration_s);
  c->record_timeline = f.timeline;
  if (f.series) {
    c->series_interval = f.html_interval_s > 0 ? Seconds(f.html_interval_s) : std::max(kSecond, c->duration / 360);
  }
}

absl::StatusOr<PolicyRun> RunPolicy(const SimConfig& base, const std::string& label, bool search,
                                    double tolerance) {
  if (!search) {
    PolicyRun run{label, 0, {}};
    absl::StatusOr<SimResult> r = RunSimulation(base);
    if (!r.ok()) return r.status();
    run.result = *std::move(r);
    run.goodput = run.result.Goodput();
    return run;
  }
  std::cerr << "  " << label << ": searching goodput";
  absl::StatusOr<GoodputResult> g =
      FindGoodput(base, tolerance, [](double, bool) { std::cerr << "." << std::flush; });
  if (!g.ok()) return g.status();
  std::cerr << absl::StrFormat(" %.1f r/s (%d simulations)\n", g->rate, g->simulations);
  return PolicyRun{label, g->rate, std::move(g->at_rate)};
}

// Every policy of the experiment, each family (timeout delays, early-drop
// windows) at its best variant.
absl::StatusOr<std::vector<PolicyRun>> RunAll(const Experiment& e, bool search, double tolerance) {
  std::vector<PolicyRun> runs;
  for (const std::string& entry : e.policies) {
    std::optional<PolicyRun> best;
    for (const auto& [label, config] : PolicyVariants(e, entry)) {
      absl::StatusOr<PolicyRun> run = RunPolicy(config, label, search, tolerance);
      if (!run.ok()) return run.status();
      if (!best || run->goodput > best->goodput) best = *std::move(run);
    }
    runs.push_back(*std::move(best));
  }
  return runs;
}

int Finish(const std::vector<PolicyRun>& runs, const SimFlags& f, const std::string& source, int gpus) {
  if (!f.html.empty()) {
    if (runs[0].result.series.gpus_used.empty()) {
      return Fail(absl::InvalidArgumentError("--html draws a run of models over time, not of a graph's queries"));
    }
    if (absl::Status s = WriteReport(f.html, absl::StrCat("Tutti simulation: ", source),
                                     absl::StrFormat("policy %s, %d GPUs, %s of virtual time", runs[0].label, gpus,
                                                     absl::StrFormat("%.0f s", ToSeconds(runs[0].result.window))),
                                     "simulation", SimReportJson(runs[0].result, runs[0].label, gpus));
        !s.ok()) {
      return Fail(s);
    }
    std::cout << "wrote " << f.html << "\n";
  }
  if (!f.csv.empty()) {
    if (absl::Status s = WriteCsv(runs, f.csv); !s.ok()) return Fail(s);
    std::cout << "wrote " << f.csv << "\n";
  }
  if (!f.plot_dir.empty()) {
    if (absl::Status s = WritePlots(runs, f.plot_dir); !s.ok()) return Fail(s);
    std::cout << "wrote plots to " << f.plot_dir << "/\n";
  }
  return 0;
}

// The cluster `tutti serve --repo --config` would run, as the simulator
// sees it (deployment/cluster_layout.h).
absl::StatusOr<SimConfig> ServeCluster(const SimFlags& f) {
  TUTTI_ASSIGN_OR_RETURN(ModelRepository repo, ModelRepository::Open(f.repo));
  TUTTI_ASSIGN_OR_RETURN(ServerConfig config, ReadServerConfigFile(f.config));
  TUTTI_ASSIGN_OR_RETURN(config, ResolveServerConfig(std::move(config), repo));
  TUTTI_ASSIGN_OR_RETURN(ClusterLayout layout, LayOutCluster(repo, config));
  std::cout << "cluster of " << (f.config.empty() ? "the default serve config" : f.config) << " over " << f.repo
            << ":\n" << layout.description;
  return SimulatedCluster(layout, config);
}

}  // namespace

int SimCommand(const Args& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::cout << kSimHelp;
    return args.empty() ? 2 : 0;
  }
  const std::string action = args[0];
  if (action != "run" && action != "compare" && action != "goodput") {
    std::cerr << "tutti sim: unknown action '" << action << "'\n\n" << kSimHelp;
    return 2;
  }
  SimFlags f;
  FlagSet flags = MakeFlags(action, &f);
  const bool has_file = args.size() > 1 && args[1].rfind("--", 0) != 0;
  absl::Status parsed = flags.Parse(Args(args.begin() + (has_file ? 2 : 1), args.end()));
  if (parsed.ok() && flags.help_requested()) {
    std::cout << flags.Help();
    return 0;
  }
  if (parsed.ok() && f.repo.empty() && !f.config.empty()) parsed = absl::InvalidArgumentError("--config needs --repo");
  if (!parsed.ok() || (!has_file && f.repo.empty())) {
    std::cerr << "error: " << (parsed.ok() ? "missing EXPERIMENT.yaml (or --repo and --config)" : parsed.message())
              << "\n\n"
              << flags.Help();
    return 2;
  }
  std::optional<SimConfig> cluster;
  if (!f.repo.empty()) {
    absl::StatusOr<SimConfig> c = ServeCluster(f);
    if (!c.ok()) return Fail(c.status());
    cluster = *std::move(c);
  }
  const SimConfig* base = cluster ? &*cluster : nullptr;
  const std::string source = has_file ? args[1] : f.config;
  absl::StatusOr<Experiment> e = has_file ? LoadExperiment(args[1], base) : ParseExperiment("{}", ".", base);
  if (!e.ok()) return Fail(e.status());
  // A key the action does not read says something that will not happen.
  // (With --policy, the keys that say which policies run, and their
  // variants, are overridden, not unread.)
  std::vector<std::string> unread = UnreadKeys(*e, action);
  if (!f.policy.empty()) {
    std::erase_if(unread, [](const std::string& key) {
      return key.rfind("polic", 0) == 0 || key.rfind("timeout_delays_ms", 0) == 0 ||
             key.rfind("early_drop_windows", 0) == 0;
    });
  }
  for (const std::string& key : unread) {
    std::cerr << (f.check ? "error: " : "warning: ") << source << ": `tutti sim " << action << "` does not read " << key
              << "\n";
  }
  if (f.check) {
    const std::string policy = f.policy.empty() ? e->config.policy : f.policy;
    std::cout << source << ": `tutti sim " << action << "` runs "
              << (action == "compare" ? absl::StrJoin(e->policies, ", ") : policy) << "\n";
    return unread.empty() ? 0 : 1;
  }
  f.series = action == "run" && (!f.html.empty() || !f.plot_dir.empty());
  Apply(f, &e->config);
  if (e->config.workload.rate <= 0 && e->config.workload.arrival != ArrivalKind::kTrace) {
    return Fail(absl::InvalidArgumentError("no arrival rate: give --rate or an experiment with a workload"));
  }

  std::vector<PolicyRun> runs;
  if (action == "compare") {
    absl::StatusOr<std::vector<PolicyRun>> all = RunAll(*e, f.goodput, f.tolerance);
    if (!all.ok()) return Fail(all.status());
    runs = *std::move(all);
    std::cout << absl::StrFormat("%s: %d models, %d GPUs, %s\n", source, e->config.cluster.models.size(),
                                 e->config.cluster.num_gpus(),
                                 f.goodput ? "goodput = highest rate with every p99 within SLO"
                                           : absl::StrFormat("offered %.0f r/s", e->config.workload.rate));
    PrintComparison(runs, std::cout);
  } else {
    const std::string policy = e->config.policy;
    absl::StatusOr<PolicyRun> run =
        RunPolicy(ConfigForPolicy(e->config, policy), policy, action == "goodput", f.tolerance);
    if (!run.ok()) return Fail(run.status());
    runs.push_back(*std::move(run));
    if (action == "goodput") std::cout << absl::StrFormat("goodput: %.1f r/s\n", runs[0].goodput);
    PrintSimResult(runs[0].result, std::cout);
  }
  for (const auto& [who, goodput] : e->paper_goodput) {
    std::cout << absl::StrFormat("paper: %-10s %8.0f r/s", who, goodput);
    for (const PolicyRun& r : runs) std::cout << absl::StrFormat("   %s %.2fx", r.label, r.goodput / goodput);
    std::cout << "\n";
  }
  return Finish(runs, f, source, e->config.cluster.num_gpus());
}

}  // namespace tutti::cli
