#include "tutti/planner/latency_split.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"

namespace tutti {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// The tree of `stages`: children per stage and an order with every child
// before its parent, or why it is not a tree.
struct Tree {
  int root = -1;
  std::vector<std::vector<int>> children;
  std::vector<int> bottom_up;
  std::vector<double> rates;  // per stage, at the query rate given
};

absl::StatusOr<Tree> MakeTree(const std::vector<SplitStage>& stages, double rate) {
  const int n = static_cast<int>(stages.size());
  if (!(rate >= 0)) return absl::InvalidArgumentError("the query rate must not be negative");
  Tree tree;
  tree.children.resize(n);
  for (int v = 0; v < n; ++v) {
    const int parent = stages[v].parent;
    if (parent == -1) {
      if (tree.root != -1) return absl::InvalidArgumentError(absl::StrCat("stages ", tree.root, " and ", v, " are both roots"));
      tree.root = v;
      continue;
    }
    if (parent < 0 || parent >= n || parent == v) {
      return absl::InvalidArgumentError(absl::StrCat("stage ", v, " has no stage ", parent, " for a parent"));
    }
    if (!(stages[v].gamma >= 0)) return absl::InvalidArgumentError(absl::StrCat("stage ", v, ": negative gamma"));
    tree.children[parent].push_back(v);
  }
  if (tree.root == -1) return absl::InvalidArgumentError("no root stage (one stage has parent -1)");
  // Top-down from the root; a stage it never reaches sits on a cycle.
  std::vector<int> top_down = {tree.root};
  tree.rates.assign(n, 0);
  tree.rates[tree.root] = rate;
  for (size_t i = 0; i < top_down.size(); ++i) {
    for (int c : tree.children[top_down[i]]) {
      tree.rates[c] = tree.rates[top_down[i]] * stages[c].gamma;
      top_down.push_back(c);
    }
  }
  if (static_cast<int>(top_down.size()) != n) return absl::InvalidArgumentError("the stages' parents form a cycle");
  tree.bottom_up.assign(top_down.rbegin(), top_down.rend());
  return tree;
}

// GPUs for `rate` items/s at a per-GPU throughput.
double Gpus(double rate, double throughput) {
  if (rate == 0) return 0;
  return throughput > 0 ? rate / throughput : kInf;
}

int Levels(const Tree& tree, int v) {
  int deepest = 0;
  for (int c : tree.children[v]) deepest = std::max(deepest, Levels(tree, c));
  return deepest + 1;
}

// The DP of SplitLatency over `steps` budget steps of `epsilon`; with
// `whole`, each stage's GPUs are rounded up to whole ones.
LatencySplitResult SplitByDp(const std::vector<SplitStage>& stages, const Tree& tree, int steps, Duration epsilon,
                             bool whole) {
  const int n = static_cast<int>(stages.size());
  // f[v][t]: the fewest GPUs for v's subtree within t steps; k[v][t]: v's own share.
  std::vector<std::vector<double>> f(n, std::vector<double>(steps + 1, kInf));
  std::vector<std::vector<int>> k(n, std::vector<int>(steps + 1, 0));
  for (int v : tree.bottom_up) {
    std::vector<double> own(steps + 1);
    for (int s = 1; s <= steps; ++s) {
      own[s] = Gpus(tree.rates[v], stages[v].throughput(s * epsilon));
      if (whole && own[s] < kInf) own[s] = std::ceil(own[s] - 1e-9);
    }
    for (int t = 1; t <= steps; ++t) {
      for (int s = 1; s <= t; ++s) {
        double total = own[s];
        for (int c : tree.children[v]) total += f[c][t - s];
        if (total < f[v][t]) {
          f[v][t] = total;
          k[v][t] = s;
        }
      }
    }
  }
  LatencySplitResult out;
  out.budgets.assign(n, 0);
  out.gpus = f[tree.root][steps];
  if (out.gpus == kInf) return out;
  // Top-down: each stage takes its share; its children split what is left.
  std::vector<std::pair<int, int>> todo = {{tree.root, steps}};
  while (!todo.empty()) {
    const auto [v, t] = todo.back();
    todo.pop_back();
    out.budgets[v] = k[v][t] * epsilon;
    for (int c : tree.children[v]) todo.push_back({c, t - k[v][t]});
  }
  return out;
}

absl::Status CheckSteps(Duration objective, Duration epsilon) {
  if (epsilon <= 0 || objective < epsilon) {
    return absl::InvalidArgumentError("the budget step must be positive and at most the objective");
  }
  return absl::OkStatus();
}

}  // namespace

double ThroughputWithin(const LatencyProfile& profile, Duration budget) {
  double best = 0;
  for (int b = 1; b <= profile.max_batch(); ++b) {
    const Duration l = profile.Latency(b);
    if (l > 0 && l <= budget) best = std::max(best, b / ToSeconds(l));
  }
  return best;
}

double GpusForSplit(const std::vector<SplitStage>& stages, double rate, const std::vector<Duration>& budgets) {
  absl::StatusOr<Tree> tree = MakeTree(stages, rate);
  if (!tree.ok()) return kInf;
  double gpus = 0;
  for (size_t v = 0; v < stages.size(); ++v) gpus += Gpus(tree->rates[v], stages[v].throughput(budgets[v]));
  return gpus;
}

absl::StatusOr<LatencySplitResult> SplitLatency(const std::vector<SplitStage>& stages, double rate,
                                                Duration objective, Duration epsilon) {
  if (absl::Status s = CheckSteps(objective, epsilon); !s.ok()) return s;
  absl::StatusOr<Tree> tree = MakeTree(stages, rate);
  if (!tree.ok()) return tree.status();
  return SplitByDp(stages, *tree, static_cast<int>(objective / epsilon), epsilon, /*whole=*/false);
}

absl::StatusOr<WholeGpuSplit> SplitLatencyOnWholeGpus(const std::vector<SplitStage>& stages, int gpus,
                                                      Duration objective, Duration epsilon) {
  if (absl::Status s = CheckSteps(objective, epsilon); !s.ok()) return s;
  if (gpus < 1) return absl::InvalidArgumentError("at least one GPU is needed");
  const int steps = static_cast<int>(objective / epsilon);
  auto at = [&](double rate) -> absl::StatusOr<LatencySplitResult> {
    absl::StatusOr<Tree> tree = MakeTree(stages, rate);
    if (!tree.ok()) return tree.status();
    return SplitByDp(stages, *tree, steps, epsilon, /*whole=*/true);
  };
  // The rate where the fewest whole GPUs first exceed `gpus`: doubled, then
  // halved to within a thousandth (below a millionth of a query per
  // second, nothing fits).
  double lo = 0, hi = 1;
  for (;;) {
    absl::StatusOr<LatencySplitResult> r = at(hi);
    if (!r.ok()) return r.status();
    if (r->gpus > gpus) break;
    lo = hi;
    hi *= 2;
    if (hi > 1e9) break;
  }
  while (hi - lo > 1e-3 * hi && hi > 1e-6) {
    const double mid = (lo + hi) / 2;
    absl::StatusOr<LatencySplitResult> r = at(mid);
    if (!r.ok()) return r.status();
    (r->gpus <= gpus ? lo : hi) = mid;
  }
  WholeGpuSplit out;
  out.rate = lo;
  absl::StatusOr<LatencySplitResult> r = at(std::max(lo, 1e-9));
  if (!r.ok()) return r.status();
  out.split = *std::move(r);
  return out;
}

absl::StatusOr<LatencySplitResult> EvenLatencySplit(const std::vector<SplitStage>& stages, double rate,
                                                    Duration objective) {
  absl::StatusOr<Tree> tree = MakeTree(stages, rate);
  if (!tree.ok()) return tree.status();
  LatencySplitResult out;
  out.budgets.assign(stages.size(), objective / Levels(*tree, tree->root));
  out.gpus = GpusForSplit(stages, rate, out.budgets);
  return out;
}

absl::StatusOr<LatencySplitResult> SplitOverProfiles(const std::vector<const LatencyProfile*>& profiles,
                                                     const std::vector<int>& parents,
                                                     const std::vector<double>& gammas, double rate,
                                                     Duration objective, Duration epsilon, bool even,
                                                     Duration overhead, bool duty_cycle, int whole_gpus) {
  std::vector<SplitStage> stages;
  for (size_t v = 0; v < profiles.size(); ++v) {
    const LatencyProfile* profile = profiles[v];
    stages.push_back({parents[v], gammas[v], [profile, overhead, duty_cycle](Duration budget) {
                        return ThroughputWithin(*profile, (budget - overhead) / (duty_cycle ? 2 : 1));
                      }});
  }
  if (even) return EvenLatencySplit(stages, rate, objective);
  if (whole_gpus > 0) {
    absl::StatusOr<WholeGpuSplit> whole = SplitLatencyOnWholeGpus(stages, whole_gpus, objective, epsilon);
    if (!whole.ok()) return whole.status();
    if (whole->rate == 0) whole->split.gpus = kInf;
    return whole->split;
  }
  return SplitLatency(stages, rate, objective, epsilon);
}

std::vector<double> PathShares(const std::vector<int>& parents, const std::vector<double>& shares) {
  std::vector<double> path;
  for (size_t v = 0; v < parents.size(); ++v) path.push_back((parents[v] < 0 ? 0.0 : path[parents[v]]) + shares[v]);
  return path;
}

std::vector<double> DueShares(const std::vector<int>& parents, const std::vector<double>& shares) {
  std::vector<double> due = PathShares(parents, shares);
  std::vector<bool> read(parents.size(), false);
  for (int parent : parents) {
    if (parent >= 0) read[parent] = true;
  }
  for (size_t v = 0; v < parents.size(); ++v) {
    if (!read[v]) due[v] = 1.0;
  }
  return due;
}

}  // namespace tutti
