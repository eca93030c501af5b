// Latency split: how a query's objective is shared among the models of a
// tree-shaped service graph — Nexus's query analyzer (Nexus §4.2, §6.2).
//
// Each stage v runs at rate R_v = R_parent · γ_v (γ: the items v gets per
// item of its parent; the root gets the query rate). Given a budget k, a
// stage batches as much as its profile allows within k, and needs
// R_v / T_v(k) GPUs, where T_v(k) = max { b / ℓ_v(b) : ℓ_v(b) ≤ k } is the
// per-GPU throughput within k. A split gives each stage a budget so that
// along every root-to-leaf path the budgets sum to at most the objective L;
// the best split needs the fewest GPUs (fractional, as in the paper):
//
//   f(u, t) = min over k ≤ t of  R_u / T_u(k) + Σ_{children v} f(v, t − k)
//
// over budgets in steps of ε (time O(n·(L/ε)²)). The even split, the
// baseline, gives every stage L / (the number of stages on the longest
// root-to-leaf path). Pure functions: same input, same split.
#ifndef TUTTI_PLANNER_LATENCY_SPLIT_H_
#define TUTTI_PLANNER_LATENCY_SPLIT_H_

#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "tutti/core/latency_profile.h"
#include "tutti/core/time.h"

namespace tutti {

struct SplitStage {
  int parent = -1;     // -1: the root (exactly one stage)
  double gamma = 1.0;  // items per item of its parent (the root's is ignored)
  // Per-GPU throughput (items/s) within a budget; 0 when no batch fits.
  // Must not decrease as the budget grows.
  std::function<double(Duration budget)> throughput;
};

struct LatencySplitResult {
  std::vector<Duration> budgets;  // per stage
  double gpus = 0;                // Σ R_v / T_v(budget_v); +inf if infeasible
};

// T(k) of a profile: max b / ℓ(b) over the batches with ℓ(b) ≤ budget.
double ThroughputWithin(const LatencyProfile& profile, Duration budget);

// The GPUs `budgets` need at query rate `rate` (+inf if a stage cannot meet
// its budget). REQUIRES: a valid tree (see SplitLatency).
double GpusForSplit(const std::vector<SplitStage>& stages, double rate, const std::vector<Duration>& budgets);

// The split that needs the fewest GPUs, budgets in multiples of `epsilon`.
// Errors: not a tree (no single root, a parent out of range or a cycle), a
// negative γ or rate, epsilon ≤ 0 or objective < epsilon. An objective no
// split can meet gives gpus = +inf.
absl::StatusOr<LatencySplitResult> SplitLatency(const std::vector<SplitStage>& stages, double rate,
                                                Duration objective, Duration epsilon);

// Nexus's DP counts GPUs fractionally, as if stages could share them
// without loss; on a small cluster whole GPUs decide. The split over
// budgets in multiples of `epsilon` that serves the highest query rate
// when each stage gets whole GPUs of its own, `gpus` in all: the DP with
// each stage's GPUs rounded up, at the highest rate (to a thousandth)
// where it fits. rate 0: no split fits even the lowest rate.
struct WholeGpuSplit {
  LatencySplitResult split;  // gpus: the whole GPUs it needs at `rate`
  double rate = 0;           // queries/s
};
absl::StatusOr<WholeGpuSplit> SplitLatencyOnWholeGpus(const std::vector<SplitStage>& stages, int gpus,
                                                      Duration objective, Duration epsilon);

// The baseline: objective / (stages on the longest root-to-leaf path) each.
absl::StatusOr<LatencySplitResult> EvenLatencySplit(const std::vector<SplitStage>& stages, double rate,
                                                    Duration objective);

// A graph whose stage v runs a model with `profiles[v]` (T(k) =
// ThroughputWithin of the budget less `overhead`: what a stage costs beyond
// its compute, on a real clock), reads `parents[v]` (-1: the query) and gets
// `gammas[v]` items per item of its parent: SplitLatency in steps of
// `epsilon`, or with `even`, EvenLatencySplit. With `duty_cycle`, a batch
// must fit half of that (Nexus's runtime: a request may wait out one duty
// cycle, as long as a batch, and then run in the next). The profiles must
// outlive the call. With `whole_gpus` > 0 and not `even`: the split of
// SplitLatencyOnWholeGpus on that many GPUs (gpus = +inf if none fits).
absl::StatusOr<LatencySplitResult> SplitOverProfiles(const std::vector<const LatencyProfile*>& profiles,
                                                     const std::vector<int>& parents,
                                                     const std::vector<double>& gammas, double rate,
                                                     Duration objective, Duration epsilon, bool even,
                                                     Duration overhead = 0, bool duty_cycle = false,
                                                     int whole_gpus = 0);

// Each stage's share plus its ancestors': what the path from the root to
// it takes of the objective. REQUIRES: parents come before children.
std::vector<double> PathShares(const std::vector<int>& parents, const std::vector<double>& shares);

// When each stage is due, as a share of the objective after the query's
// arrival: its parent's due share plus its own `shares[v]`, except that a
// stage no other reads (a leaf) is due at the end (1.0): what the stages
// before it left unused is its too. REQUIRES: parents come before children.
std::vector<double> DueShares(const std::vector<int>& parents, const std::vector<double>& shares);

}  // namespace tutti

#endif  // TUTTI_PLANNER_LATENCY_SPLIT_H_
