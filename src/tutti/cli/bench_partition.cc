// tutti bench partition: Symphony's sub-cluster partitioning MILP (planner/subcluster_partition.h).
#include <chrono>
#include <random>
#include <iostream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "tutti/cli/bench_commands.h"
#include "tutti/cli/command_util.h"
#include "tutti/simulator/report.h"
#include "tutti/planner/subcluster_partition.h"

namespace tutti::cli {

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

}  // namespace tutti::cli
