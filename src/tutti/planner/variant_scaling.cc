#include "tutti/planner/variant_scaling.h"

#include <coin/Cbc_C_Interface.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>

#include "absl/strings/str_cat.h"

namespace tutti {
namespace {

constexpr double kEps = 1e-9;


absl::Status Validate(const VariantScalingProblem& p) {
  if (p.variants.empty()) return absl::InvalidArgumentError("no variants to scale");
  if (!(p.load_qps >= 0) || !std::isfinite(p.load_qps)) {
    return absl::InvalidArgumentError(absl::StrCat("bad load ", p.load_qps, " queries/s"));
  }
  if (!(p.slack >= 1)) return absl::InvalidArgumentError(absl::StrCat("slack ", p.slack, " must be at least 1"));
  if (!(p.lambda >= 0)) return absl::InvalidArgumentError(absl::StrCat("lambda ", p.lambda, " must not be negative"));
  for (double c : p.capacity) {
    if (!(c >= 0)) return absl::InvalidArgumentError("a resource capacity is negative");
  }
  for (const ScalingVariant& v : p.variants) {
    if (!(v.saturation_qps > 0) || !std::isfinite(v.saturation_qps)) {
      return absl::InvalidArgumentError(absl::StrCat("variant ", v.name, ": saturation throughput must be positive"));
    }
    if (!(v.cost >= 0) || v.running < 0 || v.latency < 0 || v.load_latency < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("variant ", v.name, ": cost, instances and latencies must not be negative"));
    }
    if (v.resources.size() != p.capacity.size()) {
      return absl::InvalidArgumentError(absl::StrCat("variant ", v.name, " names ", v.resources.size(),
                                                     " resource types, the problem ", p.capacity.size()));
    }
    for (double r : v.resources) {
      if (!(r >= 0)) return absl::InvalidArgumentError(absl::StrCat("variant ", v.name, ": a negative resource"));
    }
  }
  return absl::OkStatus();
}

double Target(const VariantScalingProblem& p) { return p.slack * p.load_qps; }

// No optimum runs more instances of a variant than carry the whole load
// alone (one fewer would still be feasible and cost no more), nor, for a
// variant too slow for the objective, more than run now.
int UpperBound(const VariantScalingProblem& p, const ScalingVariant& v) {
  int bound = static_cast<int>(std::ceil(Target(p) / v.saturation_qps - kEps));
  bound = std::max(bound, 0);
  return v.latency > p.slo ? std::min(bound, v.running) : bound;
}

absl::Status NoPlan(const VariantScalingProblem& p) {
  return absl::ResourceExhaustedError(absl::StrCat("no mix of the ", p.variants.size(),
                                                   " variants serves ", p.load_qps, " queries/s (slack ", p.slack,
                                                   ") within ", ToSeconds(p.slo) * 1e3,
                                                   " ms and the resources: a worker must be added"));
}

}  // namespace

double VariantScalingCost(const VariantScalingProblem& p, const std::vector<int>& x) {
  double cost = 0;
  for (size_t j = 0; j < p.variants.size(); ++j) {
    const ScalingVariant& v = p.variants[j];
    cost += v.cost * x[j] + p.lambda * v.cost * ToSeconds(v.load_latency) * std::max(x[j] - v.running, 0);
  }
  return cost;
}

bool VariantScalingFeasible(const VariantScalingProblem& p, const std::vector<int>& x) {
  if (x.size() != p.variants.size()) return false;
  double capacity = 0;
  std::vector<double> used(p.capacity.size(), 0.0);
  for (size_t j = 0; j < x.size(); ++j) {
    const ScalingVariant& v = p.variants[j];
    if (x[j] < 0) return false;
    if (v.latency > p.slo && x[j] > v.running) return false;
    capacity += v.saturation_qps * x[j];
    for (size_t t = 0; t < used.size(); ++t) used[t] += v.resources[t] * x[j];
  }
  for (size_t t = 0; t < used.size(); ++t) {
    if (used[t] > p.capacity[t] + kEps) return false;
  }
  return capacity + kEps >= Target(p);
}

absl::StatusOr<VariantScalingPlan> SolveVariantScaling(const VariantScalingProblem& p, Duration time_limit) {
  if (absl::Status s = Validate(p); !s.ok()) return s;
  const int n = static_cast<int>(p.variants.size());
  const int types = static_cast<int>(p.capacity.size());
  // Columns: x_0..x_{n-1} (integer), then u_0..u_{n-1} ≥ max(x_j − N_j, 0)
  // (the instances loaded). Rows: (1), (3) per type, then u_j − x_j ≥ −N_j.
  const int rows = 1 + types + n;
  std::vector<CoinBigIndex> start;
  std::vector<int> index;
  std::vector<double> value, col_lb, col_ub, obj;
  for (int j = 0; j < n; ++j) {  // x_j
    const ScalingVariant& v = p.variants[j];
    start.push_back(static_cast<CoinBigIndex>(index.size()));
    index.push_back(0);
    value.push_back(v.saturation_qps);
    for (int t = 0; t < types; ++t) {
      if (v.resources[t] == 0) continue;
      index.push_back(1 + t);
      value.push_back(v.resources[t]);
    }
    index.push_back(1 + types + j);
    value.push_back(-1);
    col_lb.push_back(0);
    col_ub.push_back(UpperBound(p, v));
    obj.push_back(v.cost);
  }
  for (int j = 0; j < n; ++j) {  // u_j
    const ScalingVariant& v = p.variants[j];
    start.push_back(static_cast<CoinBigIndex>(index.size()));
    index.push_back(1 + types + j);
    value.push_back(1);
    col_lb.push_back(0);
    col_ub.push_back(std::max(UpperBound(p, v) - v.running, 0));
    obj.push_back(p.lambda * v.cost * ToSeconds(v.load_latency));
  }
  start.push_back(static_cast<CoinBigIndex>(index.size()));
  std::vector<double> row_lb(rows), row_ub(rows);
  row_lb[0] = Target(p);
  row_ub[0] = std::numeric_limits<double>::max();
  for (int t = 0; t < types; ++t) {
    row_lb[1 + t] = -std::numeric_limits<double>::max();
    row_ub[1 + t] = p.capacity[t];
  }
  for (int j = 0; j < n; ++j) {
    row_lb[1 + types + j] = -p.variants[j].running;
    row_ub[1 + types + j] = std::numeric_limits<double>::max();
  }

  std::unique_ptr<Cbc_Model, void (*)(Cbc_Model*)> model(Cbc_newModel(), Cbc_deleteModel);
  Cbc_loadProblem(model.get(), 2 * n, rows, start.data(), index.data(), value.data(), col_lb.data(), col_ub.data(),
                  obj.data(), row_lb.data(), row_ub.data());
  for (int j = 0; j < n; ++j) Cbc_setInteger(model.get(), j);
  Cbc_setParameter(model.get(), "log", "0");
  Cbc_setParameter(model.get(), "sec", absl::StrCat(std::max(ToSeconds(time_limit), 0.001)).c_str());
  Cbc_solve(model.get());
  if (Cbc_isProvenInfeasible(model.get())) return NoPlan(p);

  VariantScalingPlan plan;
  const double* solution = Cbc_getColSolution(model.get());
  for (int j = 0; j < n; ++j) plan.instances.push_back(solution ? static_cast<int>(std::llround(solution[j])) : 0);
  if (solution == nullptr || !VariantScalingFeasible(p, plan.instances)) {
    return absl::DeadlineExceededError(absl::StrCat("CBC found no scaling plan within ", ToSeconds(time_limit), " s"));
  }
  plan.cost = VariantScalingCost(p, plan.instances);
  plan.optimal = Cbc_isProvenOptimal(model.get()) != 0;
  return plan;
}

absl::StatusOr<VariantScalingPlan> GreedyVariantScaling(const VariantScalingProblem& p) {
  if (absl::Status s = Validate(p); !s.ok()) return s;
  const size_t n = p.variants.size();
  std::optional<VariantScalingPlan> best;
  const auto consider = [&](std::vector<int> x) {
    if (!VariantScalingFeasible(p, x)) return;
    const double cost = VariantScalingCost(p, x);
    if (!best || cost < best->cost - kEps) best = VariantScalingPlan{std::move(x), cost, false};
  };
  std::vector<int> running(n);
  double capacity = 0;
  for (size_t j = 0; j < n; ++j) {
    running[j] = p.variants[j].running;
    capacity += p.variants[j].saturation_qps * running[j];
  }
  const double target = Target(p);
  if (capacity + kEps >= target) {
    // Scale down: drop instances, dearest per query first, while the rest
    // carry the load.
    std::vector<size_t> order;
    for (size_t j = 0; j < n; ++j) order.push_back(j);
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return p.variants[a].cost / p.variants[a].saturation_qps > p.variants[b].cost / p.variants[b].saturation_qps;
    });
    std::vector<int> x = running;
    for (size_t j : order) {
      while (x[j] > 0 && capacity - p.variants[j].saturation_qps + kEps >= target) {
        --x[j];
        capacity -= p.variants[j].saturation_qps;
      }
    }
    consider(x);
  } else {
    // Replicate: the running variant (that meets the objective) with the
    // cheapest query gets the instances that are missing.
    std::optional<size_t> grow;
    for (size_t j = 0; j < n; ++j) {
      const ScalingVariant& v = p.variants[j];
      if (running[j] == 0 || v.latency > p.slo) continue;
      if (!grow || v.cost / v.saturation_qps < p.variants[*grow].cost / p.variants[*grow].saturation_qps) grow = j;
    }
    if (grow) {
      std::vector<int> x = running;
      x[*grow] += static_cast<int>(std::ceil((target - capacity) / p.variants[*grow].saturation_qps - kEps));
      consider(x);
    }
  }
  // Upgrade or downgrade: the whole load on one variant that meets the objective.
  for (size_t j = 0; j < n; ++j) {
    if (p.variants[j].latency > p.slo) continue;
    std::vector<int> x(n, 0);
    x[j] = std::max(static_cast<int>(std::ceil(target / p.variants[j].saturation_qps - kEps)), 0);
    consider(x);
  }
  if (!best) return NoPlan(p);
  return *best;
}

absl::StatusOr<VariantScalingPlan> BruteForceVariantScaling(const VariantScalingProblem& p) {
  if (absl::Status s = Validate(p); !s.ok()) return s;
  const size_t n = p.variants.size();
  std::vector<int> bound(n);
  double plans = 1;
  for (size_t j = 0; j < n; ++j) {
    bound[j] = UpperBound(p, p.variants[j]);
    plans *= bound[j] + 1;
  }
  if (plans > 1e7) return absl::InvalidArgumentError(absl::StrCat("too many plans to enumerate: ", plans));
  std::optional<VariantScalingPlan> best;
  std::vector<int> x(n, 0);
  while (true) {
    if (VariantScalingFeasible(p, x)) {
      const double cost = VariantScalingCost(p, x);
      if (!best || cost < best->cost - kEps) best = VariantScalingPlan{x, cost, true};
    }
    size_t j = 0;  // the next plan, as a mixed-radix counter
    while (j < n && x[j] == bound[j]) x[j++] = 0;
    if (j == n) break;
    ++x[j];
  }
  if (!best) return NoPlan(p);
  return *best;
}

}  // namespace tutti
