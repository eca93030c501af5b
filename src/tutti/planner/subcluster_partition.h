// Symphony's sub-cluster partitioning (§4.4, Appendix A): which models each
// sub-cluster serves, so that every backend of a sub-cluster can hold all of
// its models in memory and the sub-clusters carry similar request rates and
// memory. Pure functions: same problem, same partition.
//
// The MILP of Appendix A.1, for m models and l sub-clusters, x_ij = 1 when
// model i goes to sub-cluster j:
//
//   minimise   ΔR + w·ΔS                                             (3)
//   subject to Σ_i r_i·x_ij ≤ R_max                       for every j  (4)
//              Σ_i s_i·x_ij + max_i d_i·x_ij ≤ S_max      for every j  (5)
//              |Σ_i r_i·x_ij − R̄| ≤ ΔR                    for every j  (6)
//              |Σ_i s_i·x_ij − S̄| ≤ ΔS                    for every j  (7)
//              Σ_j x_ij = 1                               for every i  (8)
//              x_ij ∈ {0, 1}                                           (9)
//   and, from a current assignment X' (disruption minimisation),
//              Σ_ij c_ij·|x_ij − x'_ij| ≤ C_max                        (10)
//
// with r_i the request rate, s_i the static memory, d_i the dynamic
// (runtime) memory of model i, R̄ = Σ r_i / l and S̄ = Σ s_i / l. The max in
// (5) becomes a variable D_j ≥ d_i·x_ij; (10) is linear because X' is
// given (|x − 1| = 1 − x). c_ij is the model's move cost c_i for every j
// (symmetric, as the paper assumes): a model that moves costs 2·c_i, its
// unload and its load.
//
// SolvePartitionMilp solves it with COIN-OR CBC under a time limit (the
// paper: CPLEX, 10 s for 400 models in 4 sub-clusters), started from the
// greedy partition; GreedyPartition places models by decreasing rate, each
// where it leaves the objective smallest (feasible placements only);
// RandomPartition is Appendix A.2's random solver (the best of n feasible
// random assignments); BruteForcePartition enumerates every assignment (small
// problems: tests).
#ifndef TUTTI_PLANNER_SUBCLUSTER_PARTITION_H_
#define TUTTI_PLANNER_SUBCLUSTER_PARTITION_H_

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tutti/core/time.h"

namespace tutti {

struct PartitionModel {
  std::string name;
  double rate = 0;            // r_i, requests/s
  double static_memory = 0;   // s_i (any unit, the same for every model and S_max)
  double dynamic_memory = 0;  // d_i
  double move_cost = 1;       // c_i: loading or unloading it once
};

struct PartitionProblem {
  std::vector<PartitionModel> models;
  int sub_clusters = 1;                                         // l
  double max_rate = std::numeric_limits<double>::infinity();    // R_max per sub-cluster
  double max_memory = std::numeric_limits<double>::infinity();  // S_max per backend
  // w; negative: R̄ / S̄, so that a deviation of one average rate weighs as
  // much as one of average memory.
  double memory_weight = -1;
  std::vector<int> current;  // X' as each model's sub-cluster; empty: the first partition
  double max_move_cost = std::numeric_limits<double>::infinity();  // C_max (with `current`)
};

struct Partition {
  std::vector<int> sub_cluster;  // per model
  double objective = 0;          // ΔR + w·ΔS
  bool optimal = false;          // proven optimal (CBC within its limit, or brute force)
};

// w as the problem resolves it (see memory_weight).
double PartitionMemoryWeight(const PartitionProblem& problem);
// (3) for `assignment` (no feasibility check). REQUIRES: one sub-cluster in
// [0, l) per model.
double PartitionObjective(const PartitionProblem& problem, const std::vector<int>& assignment);
// Whether `assignment` meets (4), (5), (8), (9) and (10).
bool PartitionFeasible(const PartitionProblem& problem, const std::vector<int>& assignment);
// Σ_ij c_ij·|x_ij − x'_ij| against the problem's current assignment (0 without one).
double PartitionMoveCost(const PartitionProblem& problem, const std::vector<int>& assignment);
// Appendix A.2's imbalance factor of per-sub-cluster totals: (max − min) / avg
// (0 for an empty or all-zero list).
double ImbalanceFactor(const std::vector<double>& totals);
// The per-sub-cluster totals of the rates (memory = false) or static memory.
std::vector<double> SubClusterTotals(const PartitionProblem& problem, const std::vector<int>& assignment,
                                     bool memory);

// Appendix A.2's workload, as far as the paper gives it: m models with
// request rates drawn from an exponential distribution (mean 100 r/s); the
// memory, which the paper does not give, log-uniform static memory in
// [0.1, 2] GB with a dynamic memory of 10–50% of it, and a move cost of its
// static memory (loading time grows with size). Deterministic in `seed`.
PartitionProblem RandomPartitionProblem(uint64_t seed, int models, int sub_clusters);

// The MILP's optimum, by CBC within `time_limit` (the best partition found
// when the limit ends first: optimal = false). Errors: InvalidArgument (no
// models, l < 1, a negative or non-finite rate, memory or cost, a current
// assignment of the wrong size or out of range), ResourceExhausted (no
// partition meets the caps: a model larger than S_max, say), DeadlineExceeded
// (none found within the limit).
absl::StatusOr<Partition> SolvePartitionMilp(const PartitionProblem& problem, Duration time_limit = 10 * kSecond);
// Greedy: models by decreasing rate, each to the sub-cluster that keeps the
// objective of the models placed so far smallest among those where it fits
// ((4), (5), and (10) counting only what is placed); a model that fits
// nowhere fails it (ResourceExhausted). With a current assignment, a model
// stays where it is when that is no worse.
absl::StatusOr<Partition> GreedyPartition(const PartitionProblem& problem);
// Appendix A.2's random solver: the best of `tries` uniformly random
// assignments that are feasible (ResourceExhausted if none is).
absl::StatusOr<Partition> RandomPartition(const PartitionProblem& problem, int tries, uint64_t seed);
// Every assignment. REQUIRES: l^m ≤ 10^7.
absl::StatusOr<Partition> BruteForcePartition(const PartitionProblem& problem);

}  // namespace tutti

#endif  // TUTTI_PLANNER_SUBCLUSTER_PARTITION_H_
