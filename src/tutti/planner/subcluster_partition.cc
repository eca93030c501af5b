#include "tutti/planner/subcluster_partition.h"

#include <coin/Cbc_C_Interface.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>
#include <optional>
#include <random>
#include <tuple>

#include "absl/strings/str_cat.h"

namespace tutti {
namespace {

constexpr double kEps = 1e-6;

bool NonNegativeFinite(double v) { return v >= 0 && std::isfinite(v); }

absl::Status Validate(const PartitionProblem& p) {
  if (p.models.empty()) return absl::InvalidArgumentError("no models to partition");
  if (p.sub_clusters < 1) return absl::InvalidArgumentError(absl::StrCat(p.sub_clusters, " sub-clusters: need at least 1"));
  if (!(p.max_rate > 0) || !(p.max_memory > 0) || !(p.max_move_cost >= 0)) {
    return absl::InvalidArgumentError("the caps on rate and memory must be positive, the cap on moves not negative");
  }
  for (const PartitionModel& m : p.models) {
    if (!NonNegativeFinite(m.rate) || !NonNegativeFinite(m.static_memory) || !NonNegativeFinite(m.dynamic_memory) ||
        !NonNegativeFinite(m.move_cost)) {
      return absl::InvalidArgumentError(
          absl::StrCat("model ", m.name, ": rate, memory and move cost must be finite and not negative"));
    }
  }
  if (!p.current.empty()) {
    if (p.current.size() != p.models.size()) {
      return absl::InvalidArgumentError(absl::StrCat("the current assignment names ", p.current.size(),
                                                     " models, the problem ", p.models.size()));
    }
    for (int j : p.current) {
      if (j < 0 || j >= p.sub_clusters) {
        return absl::InvalidArgumentError(absl::StrCat("the current assignment names sub-cluster ", j, " of ",
                                                       p.sub_clusters));
      }
    }
  }
  return absl::OkStatus();
}

double Sum(const PartitionProblem& p, double PartitionModel::*field) {
  double s = 0;
  for (const PartitionModel& m : p.models) s += m.*field;
  return s;
}

// Per-sub-cluster totals of a (possibly partial: -1 unplaced) assignment.
struct Totals {
  std::vector<double> rate, memory, dynamic;
  double moves = 0;
  Totals(const PartitionProblem& p) : rate(p.sub_clusters), memory(p.sub_clusters), dynamic(p.sub_clusters) {}
  void Add(const PartitionProblem& p, int i, int j, double sign = 1) {
    const PartitionModel& m = p.models[i];
    rate[j] += sign * m.rate;
    memory[j] += sign * m.static_memory;
    if (!p.current.empty() && p.current[i] != j) moves += sign * 2 * m.move_cost;
  }
};

Totals TotalsOf(const PartitionProblem& p, const std::vector<int>& a) {
  Totals t(p);
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] < 0) continue;
    t.Add(p, static_cast<int>(i), a[i]);
    t.dynamic[a[i]] = std::max(t.dynamic[a[i]], p.models[i].dynamic_memory);
  }
  return t;
}

// (3) with R̄, S̄ and w computed once.
struct Objective {
  const PartitionProblem& p;
  double w, mean_rate, mean_memory;
  explicit Objective(const PartitionProblem& problem)
      : p(problem),
        w(PartitionMemoryWeight(problem)),
        mean_rate(Sum(problem, &PartitionModel::rate) / problem.sub_clusters),
        mean_memory(Sum(problem, &PartitionModel::static_memory) / problem.sub_clusters) {}
  double operator()(const Totals& t) const {
    double dr = 0, ds = 0;
    for (int j = 0; j < p.sub_clusters; ++j) {
      dr = std::max(dr, std::abs(t.rate[j] - mean_rate));
      ds = std::max(ds, std::abs(t.memory[j] - mean_memory));
    }
    return dr + w * ds;
  }
};

bool Fits(const PartitionProblem& p, const Totals& t) {
  for (int j = 0; j < p.sub_clusters; ++j) {
    if (t.rate[j] > p.max_rate * (1 + kEps)) return false;
    if (t.memory[j] + t.dynamic[j] > p.max_memory * (1 + kEps)) return false;
  }
  return t.moves <= p.max_move_cost * (1 + kEps) + kEps;
}

absl::Status Infeasible(const PartitionProblem& p) {
  return absl::ResourceExhaustedError(absl::StrCat(
      "no partition of the ", p.models.size(), " models into ", p.sub_clusters,
      " sub-clusters meets the caps (rate ", p.max_rate, " per sub-cluster, memory ", p.max_memory,
      " per backend", p.current.empty() ? "" : absl::StrCat(", moves costing at most ", p.max_move_cost),
      "): add sub-clusters or raise a cap"));
}

Partition Make(const PartitionProblem& p, std::vector<int> a, bool optimal) {
  Partition out;
  out.objective = PartitionObjective(p, a);
  out.sub_cluster = std::move(a);
  out.optimal = optimal;
  return out;
}

// The largest dynamic memory of sub-cluster j's models other than model
// `except` (-1: none excepted).
double LargestDynamic(const PartitionProblem& p, const std::vector<int>& a, int j, int except) {
  double d = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] == j && static_cast<int>(i) != except) d = std::max(d, p.models[i].dynamic_memory);
  }
  return d;
}

// Moves one model at a time, the move that lowers the objective most, while
// one does and the result stays feasible.
void ImproveByMoves(const PartitionProblem& p, std::vector<int>* a) {
  const Objective objective(p);
  const int m = static_cast<int>(a->size());
  Totals t = TotalsOf(p, *a);
  double best = objective(t);
  // Per sub-cluster: the model with the largest dynamic memory, and the
  // largest without it (what the sub-cluster needs once that model leaves).
  std::vector<int> top(p.sub_clusters, -1);
  std::vector<double> second(p.sub_clusters, 0);
  const auto refresh = [&](int j) {
    top[j] = -1;
    for (int i = 0; i < m; ++i) {
      if ((*a)[i] == j && (top[j] < 0 || p.models[i].dynamic_memory > p.models[top[j]].dynamic_memory)) top[j] = i;
    }
    second[j] = LargestDynamic(p, *a, j, top[j]);
  };
  for (int j = 0; j < p.sub_clusters; ++j) refresh(j);
  for (int round = 0; round < 10 * m; ++round) {
    std::optional<std::pair<int, int>> move;
    double move_objective = best;
    for (int i = 0; i < m; ++i) {
      const int from = (*a)[i];
      for (int j = 0; j < p.sub_clusters; ++j) {
        if (j == from) continue;
        Totals u = t;
        u.Add(p, i, from, -1);
        u.Add(p, i, j);
        if (top[from] == i) u.dynamic[from] = second[from];
        u.dynamic[j] = std::max(u.dynamic[j], p.models[i].dynamic_memory);
        const double o = objective(u);
        if (o < move_objective - kEps * std::max(1.0, move_objective) && Fits(p, u)) {
          move_objective = o;
          move = {i, j};
        }
      }
    }
    if (!move) return;
    const auto [i, j] = *move;
    const int from = (*a)[i];
    t.Add(p, i, from, -1);
    t.Add(p, i, j);
    (*a)[i] = j;
    refresh(from);
    refresh(j);
    t.dynamic[from] = top[from] < 0 ? 0 : p.models[top[from]].dynamic_memory;
    t.dynamic[j] = p.models[top[j]].dynamic_memory;
    best = move_objective;
  }
}

}  // namespace

double PartitionMemoryWeight(const PartitionProblem& p) {
  if (p.memory_weight >= 0) return p.memory_weight;
  const double memory = Sum(p, &PartitionModel::static_memory);
  return memory > 0 ? Sum(p, &PartitionModel::rate) / memory : 0;
}

double PartitionObjective(const PartitionProblem& p, const std::vector<int>& a) {
  return Objective(p)(TotalsOf(p, a));
}

bool PartitionFeasible(const PartitionProblem& p, const std::vector<int>& a) {
  if (a.size() != p.models.size()) return false;
  for (int j : a) {
    if (j < 0 || j >= p.sub_clusters) return false;
  }
  return Fits(p, TotalsOf(p, a));
}

double PartitionMoveCost(const PartitionProblem& p, const std::vector<int>& a) { return TotalsOf(p, a).moves; }

double ImbalanceFactor(const std::vector<double>& totals) {
  if (totals.empty()) return 0;
  const auto [lo, hi] = std::minmax_element(totals.begin(), totals.end());
  const double mean = std::accumulate(totals.begin(), totals.end(), 0.0) / static_cast<double>(totals.size());
  return mean > 0 ? (*hi - *lo) / mean : 0;
}

std::vector<double> SubClusterTotals(const PartitionProblem& p, const std::vector<int>& a, bool memory) {
  const Totals t = TotalsOf(p, a);
  return memory ? t.memory : t.rate;
}

PartitionProblem RandomPartitionProblem(uint64_t seed, int models, int sub_clusters) {
  std::mt19937_64 rng(seed);
  PartitionProblem p;
  p.sub_clusters = sub_clusters;
  std::exponential_distribution<double> rate(1.0 / 100);
  std::uniform_real_distribution<double> log_memory(std::log(0.1), std::log(2.0)), share(0.1, 0.5);
  for (int i = 0; i < models; ++i) {
    PartitionModel m;
    m.name = absl::StrCat("model", i);
    m.rate = rate(rng);
    m.static_memory = std::exp(log_memory(rng));
    m.dynamic_memory = share(rng) * m.static_memory;
    m.move_cost = m.static_memory;
    p.models.push_back(std::move(m));
  }
  return p;
}

absl::StatusOr<Partition> GreedyPartition(const PartitionProblem& p) {
  if (absl::Status s = Validate(p); !s.ok()) return s;
  const int m = static_cast<int>(p.models.size());
  std::vector<int> a;
  if (!p.current.empty() && PartitionFeasible(p, p.current)) {
    a = p.current;
  } else {
    // Largest rate first, each where rate + w·memory is then least.
    const double w = PartitionMemoryWeight(p);
    std::vector<int> order(m);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int x, int y) {
      return std::tie(p.models[x].rate, p.models[x].static_memory) > std::tie(p.models[y].rate, p.models[y].static_memory);
    });
    a.assign(m, -1);
    Totals t(p);
    for (int i : order) {
      int best = -1;
      double best_key = 0;
      for (int j = 0; j < p.sub_clusters; ++j) {
        t.Add(p, i, j);
        const double dynamic = t.dynamic[j];
        t.dynamic[j] = std::max(dynamic, p.models[i].dynamic_memory);
        const double key = t.rate[j] + w * t.memory[j];
        if (Fits(p, t) && (best < 0 || key < best_key)) {
          best = j;
          best_key = key;
        }
        t.dynamic[j] = dynamic;
        t.Add(p, i, j, -1);
      }
      if (best < 0) return Infeasible(p);
      a[i] = best;
      t.Add(p, i, best);
      t.dynamic[best] = std::max(t.dynamic[best], p.models[i].dynamic_memory);
    }
  }
  ImproveByMoves(p, &a);
  return Make(p, std::move(a), false);
}

absl::StatusOr<Partition> RandomPartition(const PartitionProblem& p, int tries, uint64_t seed) {
  if (absl::Status s = Validate(p); !s.ok()) return s;
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> pick(0, p.sub_clusters - 1);
  std::optional<Partition> best;
  std::vector<int> a(p.models.size());
  for (int t = 0; t < tries; ++t) {
    for (int& j : a) j = pick(rng);
    if (!PartitionFeasible(p, a)) continue;
    const double o = PartitionObjective(p, a);
    if (!best || o < best->objective) best = Partition{a, o, false};
  }
  if (!best) return Infeasible(p);
  return *best;
}

absl::StatusOr<Partition> BruteForcePartition(const PartitionProblem& p) {
  if (absl::Status s = Validate(p); !s.ok()) return s;
  const int m = static_cast<int>(p.models.size());
  std::optional<Partition> best;
  std::vector<int> a(m, 0);
  while (true) {
    if (PartitionFeasible(p, a)) {
      const double o = PartitionObjective(p, a);
      if (!best || o < best->objective - kEps) best = Partition{a, o, true};
    }
    int i = 0;
    while (i < m && ++a[i] == p.sub_clusters) a[i++] = 0;
    if (i == m) break;
  }
  if (!best) return Infeasible(p);
  return *best;
}

absl::StatusOr<Partition> SolvePartitionMilp(const PartitionProblem& p, Duration time_limit) {
  if (absl::Status s = Validate(p); !s.ok()) return s;
  const int m = static_cast<int>(p.models.size());
  const int l = p.sub_clusters;
  const Objective objective(p);  // w, R̄ and S̄
  // Columns: x_ij at i·l + j (binary), ΔR, ΔS, then D_j (the largest
  // dynamic memory of sub-cluster j's models).
  const auto x = [l](int i, int j) { return i * l + j; };
  const int delta_r = m * l, delta_s = delta_r + 1, d0 = delta_s + 1, columns = d0 + l;
  constexpr double kInf = std::numeric_limits<double>::max();
  std::vector<std::tuple<int, int, double>> entries;  // (column, row, value)
  std::vector<double> row_lb, row_ub;
  const auto add_row = [&](double lb, double ub) {
    row_lb.push_back(lb);
    row_ub.push_back(ub);
    return static_cast<int>(row_lb.size()) - 1;
  };
  for (int i = 0; i < m; ++i) {  // (8)
    const int r = add_row(1, 1);
    for (int j = 0; j < l; ++j) entries.emplace_back(x(i, j), r, 1);
  }
  for (int j = 0; j < l; ++j) {
    if (std::isfinite(p.max_rate)) {  // (4)
      const int r = add_row(-kInf, p.max_rate);
      for (int i = 0; i < m; ++i) entries.emplace_back(x(i, j), r, p.models[i].rate);
    }
    if (std::isfinite(p.max_memory)) {  // (5), with D_j ≥ d_i·x_ij
      const int r = add_row(-kInf, p.max_memory);
      for (int i = 0; i < m; ++i) entries.emplace_back(x(i, j), r, p.models[i].static_memory);
      entries.emplace_back(d0 + j, r, 1);
      for (int i = 0; i < m; ++i) {
        if (p.models[i].dynamic_memory <= 0) continue;
        const int ri = add_row(0, kInf);
        entries.emplace_back(d0 + j, ri, 1);
        entries.emplace_back(x(i, j), ri, -p.models[i].dynamic_memory);
      }
    }
    // (6) and (7): mean − Δ ≤ total ≤ mean + Δ.
    for (const auto& [field, delta, mean] :
         {std::tuple{&PartitionModel::rate, delta_r, objective.mean_rate},
          std::tuple{&PartitionModel::static_memory, delta_s, objective.mean_memory}}) {
      const int above = add_row(-kInf, mean), below = add_row(mean, kInf);
      for (int i = 0; i < m; ++i) {
        entries.emplace_back(x(i, j), above, p.models[i].*field);
        entries.emplace_back(x(i, j), below, p.models[i].*field);
      }
      entries.emplace_back(delta, above, -1);
      entries.emplace_back(delta, below, 1);
    }
  }
  if (!p.current.empty() && std::isfinite(p.max_move_cost)) {  // (10)
    double staying = 0;
    const int r = add_row(-kInf, 0);
    for (int i = 0; i < m; ++i) {
      const double c = p.models[i].move_cost;
      staying += c;
      for (int j = 0; j < l; ++j) entries.emplace_back(x(i, j), r, j == p.current[i] ? -c : c);
    }
    row_ub[r] = p.max_move_cost - staying;
  }
  std::sort(entries.begin(), entries.end());
  std::vector<CoinBigIndex> start(columns + 1, 0);
  std::vector<int> index;
  std::vector<double> value;
  for (const auto& [c, r, v] : entries) {
    ++start[c + 1];
    index.push_back(r);
    value.push_back(v);
  }
  for (int c = 0; c < columns; ++c) start[c + 1] += start[c];
  std::vector<double> col_lb(columns, 0), col_ub(columns, kInf), obj(columns, 0);
  for (int c = 0; c < m * l; ++c) col_ub[c] = 1;
  // The first partition: sub-clusters are interchangeable, so model 0 goes
  // to sub-cluster 0 (one of l symmetric optima kept).
  if (p.current.empty()) col_lb[x(0, 0)] = 1;
  obj[delta_r] = 1;
  obj[delta_s] = objective.w;

  std::unique_ptr<Cbc_Model, void (*)(Cbc_Model*)> model(Cbc_newModel(), Cbc_deleteModel);
  Cbc_loadProblem(model.get(), columns, static_cast<int>(row_lb.size()), start.data(), index.data(), value.data(),
                  col_lb.data(), col_ub.data(), obj.data(), row_lb.data(), row_ub.data());
  for (int c = 0; c < m * l; ++c) Cbc_setInteger(model.get(), c);
  // Start from the greedy partition when it is feasible (as relabelled so
  // that model 0 sits in sub-cluster 0).
  if (absl::StatusOr<Partition> greedy = GreedyPartition(p); greedy.ok()) {
    std::vector<int> a = greedy->sub_cluster;
    if (p.current.empty() && a[0] != 0) {
      const int other = a[0];
      for (int& j : a) j = j == 0 ? other : j == other ? 0 : j;
    }
    std::vector<int> cols(m * l);
    std::vector<double> vals(m * l, 0);
    std::iota(cols.begin(), cols.end(), 0);
    for (int i = 0; i < m; ++i) vals[x(i, a[i])] = 1;
    Cbc_setMIPStartI(model.get(), m * l, cols.data(), vals.data());
  }
  Cbc_setParameter(model.get(), "log", "0");
  Cbc_setParameter(model.get(), "sec", absl::StrCat(std::max(ToSeconds(time_limit), 0.001)).c_str());
  Cbc_solve(model.get());
  if (Cbc_isProvenInfeasible(model.get())) return Infeasible(p);
  const double* solution = Cbc_getColSolution(model.get());
  std::vector<int> a(m, -1);
  for (int i = 0; solution != nullptr && i < m; ++i) {
    for (int j = 0; j < l; ++j) {
      if (solution[x(i, j)] > 0.5) a[i] = j;
    }
  }
  if (solution == nullptr || !PartitionFeasible(p, a)) {
    return absl::DeadlineExceededError(
        absl::StrCat("CBC found no partition within ", ToSeconds(time_limit), " s"));
  }
  return Make(p, std::move(a), Cbc_isProvenOptimal(model.get()) != 0);
}

}  // namespace tutti
