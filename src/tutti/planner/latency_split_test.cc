#include "tutti/planner/latency_split.h"

#include <cmath>
#include <limits>
#include <random>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tutti {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// A stage whose per-GPU throughput is a step function of its budget:
// `points` of (latency ms, requests/s), as in Nexus's Figure 3.
SplitStage Table(int parent, double gamma, std::vector<std::pair<double, double>> points) {
  return {parent, gamma, [points](Duration budget) {
            double best = 0;
            for (const auto& [ms, rps] : points) {
              if (Millis(ms) <= budget) best = std::max(best, rps);
            }
            return best;
          }};
}

// A stage running a model with ℓ(b) = α·b + β (ms) up to batches of 32.
SplitStage LinearStage(int parent, double gamma, double alpha_ms, double beta_ms) {
  const LatencyProfile profile = *LatencyProfile::Linear(Millis(alpha_ms), Millis(beta_ms), 32);
  return {parent, gamma, [profile](Duration b) { return ThroughputWithin(profile, b); }};
}

// Nexus §4.2: models X → Y with Figure 3's profiles, a 100 ms objective.
std::vector<SplitStage> NexusFigure3(double gamma) {
  return {Table(-1, 1, {{40, 200}, {50, 250}, {60, 300}}), Table(0, gamma, {{40, 300}, {50, 400}, {60, 500}})};
}

// Figure 4: the average throughput (query rate / GPUs) of each plan at each
// γ, and the plan the DP picks is the best one, in bold in the paper.
TEST(LatencySplitTest, ReproducesNexusFigure4) {
  const double rate = 1000;
  const std::vector<double> gammas = {0.1, 1, 10};
  const std::vector<std::vector<double>> figure4 = {  // rows: plans 40/60, 50/50, 60/40
      {192.3, 142.9, 40.0},
      {235.3, 153.8, 34.5},
      {272.7, 150.0, 27.3}};
  const std::vector<std::vector<Duration>> plans = {
      {Millis(40), Millis(60)}, {Millis(50), Millis(50)}, {Millis(60), Millis(40)}};
  for (size_t g = 0; g < gammas.size(); ++g) {
    const std::vector<SplitStage> stages = NexusFigure3(gammas[g]);
    for (size_t p = 0; p < plans.size(); ++p) {
      EXPECT_NEAR(rate / GpusForSplit(stages, rate, plans[p]), figure4[p][g], 0.05)
          << "plan " << p << ", gamma " << gammas[g];
    }
    absl::StatusOr<LatencySplitResult> best = SplitLatency(stages, rate, Millis(100), Millis(10));
    ASSERT_TRUE(best.ok()) << best.status();
    EXPECT_EQ(best->budgets, plans[2 - g]) << "gamma " << gammas[g];  // 60/40, 50/50, 40/60
    EXPECT_NEAR(rate / best->gpus, figure4[2 - g][g], 0.05);
  }
}

// The fewest GPUs over every assignment of budgets in steps whose paths
// fit the objective: the brute force the DP must agree with.
double BruteForce(const std::vector<SplitStage>& stages, double rate, int steps, Duration epsilon) {
  const int n = static_cast<int>(stages.size());
  std::vector<double> rates(n);
  std::vector<std::vector<double>> cost(n, std::vector<double>(steps + 1));
  for (int v = 0; v < n; ++v) {  // parents come first in the random trees
    rates[v] = stages[v].parent == -1 ? rate : rates[stages[v].parent] * stages[v].gamma;
    for (int s = 1; s <= steps; ++s) {
      const double t = stages[v].throughput(s * epsilon);
      cost[v][s] = t > 0 ? rates[v] / t : std::numeric_limits<double>::infinity();
    }
  }
  std::vector<int> share(n, 1);
  double best = std::numeric_limits<double>::infinity();
  for (;;) {
    bool fits = true;
    for (int v = 0; v < n && fits; ++v) {  // the path from v up to the root
      int sum = 0;
      for (int u = v; u != -1; u = stages[u].parent) sum += share[u];
      fits = sum <= steps;
    }
    if (fits) {
      double total = 0;
      for (int v = 0; v < n; ++v) total += cost[v][share[v]];
      best = std::min(best, total);
    }
    int v = 0;
    while (v < n && ++share[v] > steps) share[v++] = 1;
    if (v == n) return best;
  }
}

// The DP against brute force on random trees of 2–6 stages with random
// linear profiles and random γ: the same fewest GPUs.
TEST(LatencySplitTest, MatchesBruteForceOnRandomTrees) {
  std::mt19937_64 rng(7);
  const Duration epsilon = Millis(10);
  const int steps = 8;  // an 80 ms objective
  int feasible = 0;
  for (int trial = 0; trial < 200; ++trial) {
    const int n = std::uniform_int_distribution<int>(2, 6)(rng);
    std::vector<SplitStage> stages;
    for (int v = 0; v < n; ++v) {
      const int parent = v == 0 ? -1 : std::uniform_int_distribution<int>(0, v - 1)(rng);
      const double alpha = std::uniform_real_distribution<double>(0.2, 5)(rng);
      const double beta = std::uniform_real_distribution<double>(1, 15)(rng);
      const double gamma = std::vector<double>{0.1, 0.5, 1, 2, 10}[std::uniform_int_distribution<int>(0, 4)(rng)];
      stages.push_back(LinearStage(parent, gamma, alpha, beta));
    }
    absl::StatusOr<LatencySplitResult> dp = SplitLatency(stages, 500, steps * epsilon, epsilon);
    ASSERT_TRUE(dp.ok()) << dp.status();
    const double brute = BruteForce(stages, 500, steps, epsilon);
    if (std::isinf(brute)) {
      EXPECT_TRUE(std::isinf(dp->gpus)) << "trial " << trial;
      continue;
    }
    ++feasible;
    EXPECT_NEAR(dp->gpus, brute, 1e-9 * brute) << "trial " << trial;
    EXPECT_NEAR(GpusForSplit(stages, 500, dp->budgets), dp->gpus, 1e-9 * brute) << "trial " << trial;
    for (int v = 0; v < n; ++v) {  // and its split keeps every path within the objective
      Duration path = 0;
      for (int u = v; u != -1; u = stages[u].parent) path += dp->budgets[u];
      EXPECT_LE(path, steps * epsilon) << "trial " << trial;
    }
  }
  EXPECT_GT(feasible, 150);  // the trees test something
}

TEST(LatencySplitTest, EvenSplitSharesByTheLongestPath) {
  // 0 → 1 → 2 and 0 → 3: three levels.
  const LatencyProfile p = *LatencyProfile::Linear(Millis(1), Millis(2), 16);
  auto stage = [&](int parent) { return SplitStage{parent, 1, [p](Duration b) { return ThroughputWithin(p, b); }}; };
  absl::StatusOr<LatencySplitResult> even = EvenLatencySplit({stage(-1), stage(0), stage(1), stage(0)}, 100, Millis(90));
  ASSERT_TRUE(even.ok()) << even.status();
  EXPECT_THAT(even->budgets, ElementsAre(Millis(30), Millis(30), Millis(30), Millis(30)));
  EXPECT_NEAR(even->gpus, 4 * 100 / ThroughputWithin(p, Millis(30)), 1e-9);
}

TEST(LatencySplitTest, DueSharesAddUpAlongPathsAndLeavesEndAtTheObjective) {
  // 0 → 1 → 2 and 0 → 3.
  const std::vector<double> due = DueShares({-1, 0, 1, 0}, {0.25, 0.25, 0.25, 0.5});
  EXPECT_THAT(due, ElementsAre(0.25, 0.5, 1.0, 1.0));
  // Before the leaves are moved to the end: the sums along the paths.
  EXPECT_THAT(PathShares({-1, 0, 1, 0}, {0.25, 0.25, 0.25, 0.5}), ElementsAre(0.25, 0.5, 0.75, 0.75));
}

TEST(LatencySplitTest, ThroughputWithinTakesTheBestBatchThatFits) {
  const LatencyProfile p = *LatencyProfile::Linear(Millis(1), Millis(2), 16);  // ℓ(b) = b + 2 ms
  EXPECT_EQ(ThroughputWithin(p, Millis(2.5)), 0);
  EXPECT_NEAR(ThroughputWithin(p, Millis(3)), 1 / 0.003, 1e-6);
  EXPECT_NEAR(ThroughputWithin(p, Millis(10)), 8 / 0.010, 1e-6);
  EXPECT_NEAR(ThroughputWithin(p, kSecond), 16 / 0.018, 1e-6);  // the largest batch
}

// Under Nexus's duty cycles a stage's batch fits half its budget: the same
// split, planned for the throughput of half the time.
TEST(LatencySplitTest, DutyCyclesPlanABatchWithinHalfTheBudget) {
  const LatencyProfile p = *LatencyProfile::Linear(Millis(1), Millis(2), 16);  // ℓ(b) = b + 2 ms
  const std::vector<const LatencyProfile*> one = {&p};
  absl::StatusOr<LatencySplitResult> whole = SplitOverProfiles(one, {-1}, {1}, 100, Millis(12), Millis(1), false);
  absl::StatusOr<LatencySplitResult> half =
      SplitOverProfiles(one, {-1}, {1}, 100, Millis(12), Millis(1), false, 0, /*duty_cycle=*/true);
  ASSERT_TRUE(whole.ok() && half.ok());
  EXPECT_DOUBLE_EQ(whole->gpus, 100 / ThroughputWithin(p, Millis(12)));  // b = 10 in 12 ms
  EXPECT_DOUBLE_EQ(half->gpus, 100 / ThroughputWithin(p, Millis(6)));    // b = 4 in 6 ms
  EXPECT_GT(half->gpus, whole->gpus);
}

// The highest query rate of a two-stage chain on `gpus` whole GPUs with
// these budgets: every number of GPUs for the first stage, the rest
// serving the second.
double RateOnWholeGpus(const std::vector<SplitStage>& chain, int gpus, Duration first, Duration second) {
  const double t0 = chain[0].throughput(first), t1 = chain[1].throughput(second);
  double best = 0;
  for (int p = 1; p < gpus; ++p) best = std::max(best, std::min(p * t0, (gpus - p) * t1 / chain[1].gamma));
  return best;
}
// … and over every split in steps of `epsilon`, by brute force.
double BruteForceWholeGpus(const std::vector<SplitStage>& chain, int gpus, int steps, Duration epsilon) {
  double best = 0;
  for (int s = 1; s < steps; ++s) {
    best = std::max(best, RateOnWholeGpus(chain, gpus, s * epsilon, (steps - s) * epsilon));
  }
  return best;
}

TEST(LatencySplitTest, OnWholeGpusTheSplitServesTheHighestRateABruteForceFinds) {
  std::mt19937_64 rng(11);
  const Duration epsilon = Millis(5);
  const int steps = 40;  // a 200 ms objective
  int fractional_worse = 0;
  for (int trial = 0; trial < 100; ++trial) {
    std::vector<SplitStage> chain;
    for (int v = 0; v < 2; ++v) {
      const double alpha = std::uniform_real_distribution<double>(0.5, 10)(rng);
      const double beta = std::uniform_real_distribution<double>(2, 40)(rng);
      const double gamma = std::vector<double>{0.1, 1, 10}[std::uniform_int_distribution<int>(0, 2)(rng)];
      chain.push_back(LinearStage(v - 1, gamma, alpha, beta));
    }
    const int gpus = std::uniform_int_distribution<int>(2, 12)(rng);
    absl::StatusOr<WholeGpuSplit> whole = SplitLatencyOnWholeGpus(chain, gpus, steps * epsilon, epsilon);
    ASSERT_TRUE(whole.ok()) << whole.status();
    const double brute = BruteForceWholeGpus(chain, gpus, steps, epsilon);
    EXPECT_NEAR(whole->rate, brute, 2e-3 * brute) << "trial " << trial;
    EXPECT_LE(whole->split.gpus, gpus) << "trial " << trial;
    EXPECT_LE(whole->split.budgets[0] + whole->split.budgets[1], steps * epsilon) << "trial " << trial;
    // The fractional DP's split, given whole GPUs: never more, often less.
    absl::StatusOr<LatencySplitResult> dp = SplitLatency(chain, 1, steps * epsilon, epsilon);
    ASSERT_TRUE(dp.ok());
    const double dp_rate = RateOnWholeGpus(chain, gpus, dp->budgets[0], dp->budgets[1]);
    EXPECT_LE(dp_rate, brute * (1 + 1e-9)) << "trial " << trial;
    if (dp_rate < 0.97 * brute) ++fractional_worse;
  }
  EXPECT_GT(fractional_worse, 5);  // whole GPUs change the best split
  // No split fits: rate 0, at once.
  absl::StatusOr<WholeGpuSplit> none =
      SplitLatencyOnWholeGpus({LinearStage(-1, 1, 10, 100)}, 4, Millis(50), Millis(5));
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ(none->rate, 0);
}

TEST(LatencySplitTest, BadTreesAreClearErrors) {
  const SplitStage any = Table(-1, 1, {{1, 1}});
  SplitStage child = any;
  child.parent = 0;
  EXPECT_THAT(SplitLatency({any, any}, 1, Millis(10), Millis(1)).status().message(), HasSubstr("both roots"));
  SplitStage loop = any;
  loop.parent = 2;
  SplitStage loop2 = any;
  loop2.parent = 1;
  EXPECT_THAT(SplitLatency({any, loop, loop2}, 1, Millis(10), Millis(1)).status().message(), HasSubstr("cycle"));
  SplitStage stray = any;
  stray.parent = 9;
  EXPECT_THAT(SplitLatency({any, stray}, 1, Millis(10), Millis(1)).status().message(), HasSubstr("no stage 9"));
  EXPECT_FALSE(SplitLatency({any, child}, 1, Millis(10), 0).ok());
  EXPECT_FALSE(SplitLatency({any, child}, -1, Millis(10), Millis(1)).ok());
  // An objective no split meets: infinitely many GPUs, not an error.
  absl::StatusOr<LatencySplitResult> tight = SplitLatency({any, child}, 1, Millis(1), Millis(1));
  ASSERT_TRUE(tight.ok());
  EXPECT_TRUE(std::isinf(tight->gpus));
}

}  // namespace
}  // namespace tutti
