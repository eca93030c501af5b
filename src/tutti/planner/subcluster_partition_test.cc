#include "tutti/planner/subcluster_partition.h"

#include <limits>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tutti {
namespace {

using ::testing::HasSubstr;

// The MILP proves the optimum that enumerating every assignment finds, with
// and without caps on rate and memory; the greedy and the random solver
// never beat it.
TEST(SubClusterPartitionTest, MilpMatchesBruteForceOnSmallProblems) {
  int compared = 0, capped = 0, binding = 0;
  for (int k = 0; k < 40; ++k) {
    PartitionProblem p = RandomPartitionProblem(k, 7, 3);
    if (k % 2 == 1) {  // caps that bind: half the rate, 55% of the memory per sub-cluster
      double rate = 0, memory = 0;
      for (const PartitionModel& m : p.models) rate += m.rate, memory += m.static_memory;
      p.max_rate = 0.5 * rate;
      p.max_memory = 0.55 * memory;
    }
    absl::StatusOr<Partition> brute = BruteForcePartition(p);
    absl::StatusOr<Partition> milp = SolvePartitionMilp(p, 20 * kSecond);
    if (!brute.ok()) {
      EXPECT_EQ(brute.status().code(), absl::StatusCode::kResourceExhausted);
      EXPECT_EQ(milp.status().code(), absl::StatusCode::kResourceExhausted) << k;
      continue;
    }
    ASSERT_TRUE(milp.ok()) << k << ": " << milp.status();
    ++compared;
    capped += k % 2;
    if (k % 2 == 1) {  // would the uncapped optimum break a cap?
      PartitionProblem uncapped = p;
      uncapped.max_rate = uncapped.max_memory = std::numeric_limits<double>::infinity();
      binding += !PartitionFeasible(p, BruteForcePartition(uncapped)->sub_cluster);
    }
    EXPECT_TRUE(milp->optimal) << k;
    EXPECT_TRUE(PartitionFeasible(p, milp->sub_cluster)) << k;
    EXPECT_NEAR(milp->objective, brute->objective, 1e-6 * std::max(1.0, brute->objective)) << k;
    absl::StatusOr<Partition> greedy = GreedyPartition(p);
    if (greedy.ok()) {
      EXPECT_TRUE(PartitionFeasible(p, greedy->sub_cluster));
      EXPECT_GE(greedy->objective, brute->objective - 1e-9);
    }
    absl::StatusOr<Partition> random = RandomPartition(p, 100, k);
    if (random.ok()) EXPECT_GE(random->objective, brute->objective - 1e-9);
  }
  EXPECT_GE(compared, 30);
  EXPECT_GE(capped, 10);  // the caps left a partition
  EXPECT_GE(binding, 1);  // and changed the optimum
}

// The objective is (3) exactly: ΔR + w·ΔS, the largest deviations of the
// sub-clusters' totals from their averages.
TEST(SubClusterPartitionTest, TheObjectiveIsTheLargestDeviations) {
  PartitionProblem p;
  p.sub_clusters = 2;
  p.memory_weight = 10;
  p.models = {{"a", 30, 1, 0}, {"b", 10, 3, 0}, {"c", 20, 2, 0}};
  // Totals {a, b} = (40, 4), {c} = (20, 2); averages (30, 3): ΔR 10, ΔS 1.
  EXPECT_DOUBLE_EQ(PartitionObjective(p, {0, 0, 1}), 10 + 10 * 1);
  EXPECT_EQ(SubClusterTotals(p, {0, 0, 1}, false), (std::vector<double>{40, 20}));
  EXPECT_DOUBLE_EQ(ImbalanceFactor({40, 20}), 20.0 / 30);
  p.memory_weight = -1;  // R̄ / S̄ = 30 / 3
  EXPECT_DOUBLE_EQ(PartitionMemoryWeight(p), 10);
}

// A backend holds every model of its sub-cluster: the static memory of all
// of them plus the largest dynamic memory among them.
TEST(SubClusterPartitionTest, MemoryCountsTheLargestDynamicMemory) {
  PartitionProblem p;
  p.sub_clusters = 2;
  p.max_memory = 10;
  p.models = {{"big_runtime", 1, 2, 6}, {"x", 1, 2, 1}, {"y", 1, 2, 1}, {"z", 1, 2, 1}};
  // With big_runtime: 2 + 6 = 8, so it has room for one more model (8 + 2 = 10), not two.
  EXPECT_TRUE(PartitionFeasible(p, {0, 0, 1, 1}));
  EXPECT_FALSE(PartitionFeasible(p, {0, 0, 0, 1}));
  absl::StatusOr<Partition> milp = SolvePartitionMilp(p);
  ASSERT_TRUE(milp.ok()) << milp.status();
  EXPECT_TRUE(PartitionFeasible(p, milp->sub_cluster));
  EXPECT_DOUBLE_EQ(milp->objective, 0);  // two models each
  p.max_memory = 7.5;  // big_runtime alone needs 8
  EXPECT_EQ(SolvePartitionMilp(p).status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(GreedyPartition(p).status().message(), HasSubstr("no partition of the 4 models into 2 sub-clusters"));
}

// Re-partitioning from a current assignment stays within the budget for
// loading and unloading (10): none lets nothing move, one move's worth
// moves at most one model (the one that helps most), an unbounded budget
// reaches the optimum.
TEST(SubClusterPartitionTest, TheMoveBudgetBoundsTheChange) {
  PartitionProblem p = RandomPartitionProblem(3, 8, 3);
  for (PartitionModel& m : p.models) m.move_cost = 1;
  p.current = {0, 0, 0, 0, 0, 1, 1, 2};  // unbalanced
  const double before = PartitionObjective(p, p.current);
  p.max_move_cost = 0;
  absl::StatusOr<Partition> none = SolvePartitionMilp(p);
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ(none->sub_cluster, p.current);
  p.max_move_cost = 2;  // one unload and one load
  absl::StatusOr<Partition> one = SolvePartitionMilp(p);
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_LE(PartitionMoveCost(p, one->sub_cluster), 2);
  EXPECT_LT(one->objective, before);
  absl::StatusOr<Partition> brute_one = BruteForcePartition(p);
  ASSERT_TRUE(brute_one.ok());
  EXPECT_NEAR(one->objective, brute_one->objective, 1e-6);
  absl::StatusOr<Partition> greedy_one = GreedyPartition(p);
  ASSERT_TRUE(greedy_one.ok());
  EXPECT_LE(PartitionMoveCost(p, greedy_one->sub_cluster), 2);
  p.max_move_cost = std::numeric_limits<double>::infinity();
  absl::StatusOr<Partition> any = SolvePartitionMilp(p);
  PartitionProblem fresh = p;
  fresh.current.clear();
  absl::StatusOr<Partition> optimum = BruteForcePartition(fresh);
  ASSERT_TRUE(any.ok() && optimum.ok());
  EXPECT_NEAR(any->objective, optimum->objective, 1e-6);
  EXPECT_LE(optimum->objective, one->objective);
}

TEST(SubClusterPartitionTest, BadProblemsAreErrors) {
  PartitionProblem p;
  EXPECT_THAT(SolvePartitionMilp(p).status().message(), HasSubstr("no models"));
  p.models = {{"a", 1, 1, 0}};
  p.sub_clusters = 0;
  EXPECT_THAT(GreedyPartition(p).status().message(), HasSubstr("need at least 1"));
  p.sub_clusters = 2;
  p.models[0].rate = -1;
  EXPECT_THAT(RandomPartition(p, 10, 1).status().message(), HasSubstr("model a"));
  p.models[0].rate = 1;
  p.current = {0, 1};
  EXPECT_THAT(BruteForcePartition(p).status().message(), HasSubstr("names 2 models, the problem 1"));
  p.current = {2};
  EXPECT_THAT(SolvePartitionMilp(p).status().message(), HasSubstr("sub-cluster 2 of 2"));
}

}  // namespace
}  // namespace tutti
