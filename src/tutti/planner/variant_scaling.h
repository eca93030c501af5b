// INFaaS model-level autoscaling (INFaaS §4.2): how many instances of each
// variant of a model to run so that the load is served within the objective
// at the lowest cost — horizontal scaling (more instances of a variant) and
// vertical scaling (switching to a cheaper or faster variant) in one
// decision. Pure functions: same problem, same plan.
//
// The ILP of INFaaS §4.2.1, for the variants j of one application, with
// x_j = N_j + δ_j the instances after the action:
//
//   minimise   Σ_j C_j·x_j + λ·C_j·T^load_j·max(x_j − N_j, 0)
//   subject to Σ_j Q_j·x_j ≥ slack·L                      (1) the load
//              x_j ≤ N_j   where T^inf_j > S              (2) new instances meet the SLO
//              Σ_j R^t_j·x_j ≤ R^t_total   for every t    (3) the resources
//              x_j ≥ 0, integer                           (4)
//
// (the paper's objective Σ C_j(δ_j + λT^load_j max(δ_j, 0)) less the
// constant Σ C_j N_j). slack is INFaaS's slack-threshold, a headroom ratio
// (1.05 in the paper; Table 3's configurations are those of slack 1). Like
// the paper, (2) only stops *new* instances of a variant too slow for the
// objective; the caller leaves out variants that must not serve at all
// (too inaccurate, say).
//
// SolveVariantScaling solves it exactly with COIN-OR CBC under a time limit;
// GreedyVariantScaling is INFaaS §4.2.2's heuristic (replicate the running
// variant, or move to one other variant, whichever the objective prefers),
// which can miss mixes (Table 3's 2×B + 1×C); BruteForceVariantScaling
// enumerates every plan (small problems: tests).
#ifndef TUTTI_PLANNER_VARIANT_SCALING_H_
#define TUTTI_PLANNER_VARIANT_SCALING_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tutti/core/time.h"

namespace tutti {

struct ScalingVariant {
  std::string name;
  double saturation_qps = 0;        // Q_j: what one instance sustains within its latency
  Duration latency = 0;             // T^inf_j
  double cost = 0;                  // C_j per instance and second (normalised)
  Duration load_latency = 0;        // T^load_j
  int running = 0;                  // N_j
  std::vector<double> resources;    // R^t_j, per resource type (as many as VariantScalingProblem::capacity)
};

struct VariantScalingProblem {
  std::vector<ScalingVariant> variants;
  double load_qps = 0;              // L
  Duration slo = 0;                 // S
  double slack = 1.05;              // capacity ≥ slack·L
  double lambda = 0;                // per second: the weight of loading time (load unpredictability)
  std::vector<double> capacity;     // R^t_total per resource type
};

struct VariantScalingPlan {
  std::vector<int> instances;       // x_j, per variant
  double cost = 0;                  // the objective
  bool optimal = true;              // false: CBC's time limit ran out first (the best plan found)
};

// The objective of `instances` for `problem` (no feasibility check).
double VariantScalingCost(const VariantScalingProblem& problem, const std::vector<int>& instances);
// Whether `instances` meets constraints (1)–(4).
bool VariantScalingFeasible(const VariantScalingProblem& problem, const std::vector<int>& instances);

// The ILP's optimum, by CBC within `time_limit`. Errors: InvalidArgument
// (no variants, Q ≤ 0, a negative cost, load or resource, slack < 1,
// resources not one per capacity type), ResourceExhausted (no plan meets
// the load within the objective and the resources: INFaaS then adds a
// worker), DeadlineExceeded (no plan found within the time limit).
absl::StatusOr<VariantScalingPlan> SolveVariantScaling(const VariantScalingProblem& problem,
                                                       Duration time_limit = kSecond);

// INFaaS's greedy heuristic: the cheaper (by the ILP's objective) of
// replicating the running variants and moving the whole load to one other
// variant that meets the objective; scaling down keeps the fewest instances
// of the running variants that carry the load. Same errors as above, but no
// time limit.
absl::StatusOr<VariantScalingPlan> GreedyVariantScaling(const VariantScalingProblem& problem);

// Every plan with x_j ≤ ⌈slack·L / Q_j⌉ (no optimum needs more), for tests.
// REQUIRES: a small problem (the product of those bounds ≤ 10^7).
absl::StatusOr<VariantScalingPlan> BruteForceVariantScaling(const VariantScalingProblem& problem);

}  // namespace tutti

#endif  // TUTTI_PLANNER_VARIANT_SCALING_H_
