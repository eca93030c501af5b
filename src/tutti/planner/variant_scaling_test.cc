#include "tutti/planner/variant_scaling.h"

#include <random>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tutti {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// INFaaS Table 2: three ResNet50 variants.
VariantScalingProblem Table2(double qps, Duration slo) {
  VariantScalingProblem p;
  p.variants = {{"A (4 CPUs, TensorFlow)", 5, Millis(200), 1},
                {"B (1 Inferentia core)", 100, Millis(20), 3},
                {"C (1 V100, TensorRT)", 800, Millis(15), 16}};
  p.load_qps = qps;
  p.slo = slo;
  p.slack = 1;  // Table 3's configurations carry exactly the load
  return p;
}

// INFaaS Table 3: the cheapest configuration for each load and objective.
TEST(VariantScalingTest, IlpFindsInfaasTable3) {
  struct Row {
    double qps;
    Duration slo;
    std::vector<int> instances;
    double cost;
  };
  for (const Row& row : {Row{10, Millis(300), {2, 0, 0}, 2}, Row{10, Millis(50), {0, 1, 0}, 3},
                         Row{1000, Millis(300), {0, 2, 1}, 22}}) {
    const VariantScalingProblem p = Table2(row.qps, row.slo);
    absl::StatusOr<VariantScalingPlan> plan = SolveVariantScaling(p);
    ASSERT_TRUE(plan.ok()) << plan.status();
    EXPECT_EQ(plan->instances, row.instances) << row.qps << " q/s within " << ToMillis(row.slo) << " ms";
    EXPECT_DOUBLE_EQ(plan->cost, row.cost);
    EXPECT_TRUE(plan->optimal);
    absl::StatusOr<VariantScalingPlan> brute = BruteForceVariantScaling(p);
    ASSERT_TRUE(brute.ok());
    EXPECT_EQ(brute->instances, row.instances);
  }
}

// The greedy heuristic moves the whole load to one variant: right for the
// first two rows, but it misses the mix of the third (10×B, cost 30, where
// 2×B + 1×C costs 22) — why INFaaS formulates the ILP.
TEST(VariantScalingTest, GreedyMissesTheMixOfTable3sLastRow) {
  absl::StatusOr<VariantScalingPlan> low = GreedyVariantScaling(Table2(10, Millis(300)));
  ASSERT_TRUE(low.ok());
  EXPECT_THAT(low->instances, ElementsAre(2, 0, 0));
  absl::StatusOr<VariantScalingPlan> strict = GreedyVariantScaling(Table2(10, Millis(50)));
  ASSERT_TRUE(strict.ok());
  EXPECT_THAT(strict->instances, ElementsAre(0, 1, 0));
  absl::StatusOr<VariantScalingPlan> high = GreedyVariantScaling(Table2(1000, Millis(300)));
  ASSERT_TRUE(high.ok());
  EXPECT_THAT(high->instances, ElementsAre(0, 10, 0));
  EXPECT_DOUBLE_EQ(high->cost, 30);
}

// Running instances, loading time and resources: replicating what runs can
// beat a cheaper variant that must be loaded; a resource cap forbids a mix.
TEST(VariantScalingTest, LoadingTimeAndResourcesShapeThePlan) {
  VariantScalingProblem p = Table2(1000, Millis(300));
  p.variants[1].running = 9;  // 9×B serve 900 q/s
  p.variants[2].load_latency = Seconds(30);
  p.lambda = 0.1;  // loading C costs 16 × 0.1 × 30 = 48 more
  absl::StatusOr<VariantScalingPlan> plan = SolveVariantScaling(p);
  ASSERT_TRUE(plan.ok());
  EXPECT_THAT(plan->instances, ElementsAre(0, 10, 0)) << "one more B rather than loading C";

  // One accelerator type: B uses one core each, C one GPU; no GPUs left.
  VariantScalingProblem capped = Table2(1000, Millis(300));
  capped.capacity = {16, 0};  // Inferentia cores, GPUs
  capped.variants[0].resources = {0, 0};
  capped.variants[1].resources = {1, 0};
  capped.variants[2].resources = {0, 1};
  plan = SolveVariantScaling(capped);
  ASSERT_TRUE(plan.ok());
  EXPECT_THAT(plan->instances, ElementsAre(0, 10, 0));
  capped.capacity = {9, 0};  // 9 cores carry 900 q/s of B, no C, and A is too slow
  capped.variants[0].latency = Millis(400);
  EXPECT_EQ(SolveVariantScaling(capped).status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(GreedyVariantScaling(capped).status().code(), absl::StatusCode::kResourceExhausted);
}

// Scaling down: with the load gone to 150 q/s, 2×B remain (the slack of
// 1.05 needs 157.5), and the C instance goes.
TEST(VariantScalingTest, ScalingDownKeepsWhatCarriesTheLoadWithItsSlack) {
  VariantScalingProblem p = Table2(150, Millis(300));
  p.slack = 1.05;
  p.variants[1].running = 2;
  p.variants[2].running = 1;
  absl::StatusOr<VariantScalingPlan> ilp = SolveVariantScaling(p);
  ASSERT_TRUE(ilp.ok());
  EXPECT_THAT(ilp->instances, ElementsAre(0, 2, 0));
  absl::StatusOr<VariantScalingPlan> greedy = GreedyVariantScaling(p);
  ASSERT_TRUE(greedy.ok());
  EXPECT_THAT(greedy->instances, ElementsAre(0, 2, 0));
}

// A variant too slow for the objective may keep running but gets no new
// instances (constraint 2).
TEST(VariantScalingTest, ASlowVariantKeepsItsInstancesButGetsNoNewOnes) {
  VariantScalingProblem p = Table2(12, Millis(50));
  p.variants[0].cost = 0.4;
  p.variants[0].running = 2;  // 10 q/s of A, which is too slow for 50 ms
  p.variants.push_back({"D", 2, Millis(10), 0.5});
  absl::StatusOr<VariantScalingPlan> plan = SolveVariantScaling(p);
  ASSERT_TRUE(plan.ok());
  // 2×A kept and 1×D (1.3); a third A (1.2 in all) would be cheaper, but
  // new instances must meet the objective.
  EXPECT_THAT(plan->instances, ElementsAre(2, 0, 0, 1));
  EXPECT_DOUBLE_EQ(plan->cost, 1.3);
}

TEST(VariantScalingTest, BadProblemsAreErrors) {
  VariantScalingProblem p = Table2(10, Millis(300));
  p.variants[1].saturation_qps = 0;
  EXPECT_THAT(SolveVariantScaling(p).status().message(), HasSubstr("saturation throughput must be positive"));
  p = Table2(10, Millis(300));
  p.slack = 0.5;
  EXPECT_THAT(GreedyVariantScaling(p).status().message(), HasSubstr("slack 0.5 must be at least 1"));
  p = Table2(10, Millis(300));
  p.capacity = {4};
  EXPECT_THAT(SolveVariantScaling(p).status().message(), HasSubstr("names 0 resource types, the problem 1"));
  EXPECT_EQ(SolveVariantScaling(VariantScalingProblem{}).status().code(), absl::StatusCode::kInvalidArgument);
  p = Table2(10, Millis(10));  // nothing is fast enough
  EXPECT_THAT(SolveVariantScaling(p).status().message(), HasSubstr("a worker must be added"));
}

// The ILP against brute force on 200 random small problems: running
// instances, loading times, λ, one or two resource types, SLOs that rule
// variants out, and loads no plan meets.
TEST(VariantScalingTest, IlpMatchesBruteForceOn200RandomProblems) {
  std::mt19937 rng(20261124);
  std::uniform_real_distribution<double> unit(0, 1);
  int infeasible = 0, mixes = 0;
  for (int k = 0; k < 200; ++k) {
    VariantScalingProblem p;
    const int n = 2 + static_cast<int>(rng() % 3);
    const int types = static_cast<int>(rng() % 3);
    for (int t = 0; t < types; ++t) p.capacity.push_back(2 + rng() % 8);
    for (int j = 0; j < n; ++j) {
      ScalingVariant v;
      v.name = std::string(1, static_cast<char>('A' + j));
      v.saturation_qps = 5 + 200 * unit(rng);
      v.latency = Millis(5 + 95 * unit(rng));
      v.cost = 0.5 + 10 * unit(rng);
      v.load_latency = Seconds(20 * unit(rng));
      v.running = static_cast<int>(rng() % 3);
      for (int t = 0; t < types; ++t) v.resources.push_back(static_cast<double>(rng() % 3));
      p.variants.push_back(v);
    }
    p.load_qps = 20 + 600 * unit(rng);
    p.slo = Millis(20 + 80 * unit(rng));
    p.slack = 1 + 0.1 * unit(rng);
    p.lambda = 0.2 * unit(rng);
    absl::StatusOr<VariantScalingPlan> ilp = SolveVariantScaling(p);
    absl::StatusOr<VariantScalingPlan> brute = BruteForceVariantScaling(p);
    ASSERT_EQ(ilp.ok(), brute.ok()) << "problem " << k << ": " << ilp.status() << " / " << brute.status();
    if (!ilp.ok()) {
      EXPECT_EQ(ilp.status().code(), absl::StatusCode::kResourceExhausted);
      ++infeasible;
      continue;
    }
    EXPECT_TRUE(VariantScalingFeasible(p, ilp->instances)) << k;
    EXPECT_NEAR(ilp->cost, brute->cost, 1e-6 * (1 + brute->cost)) << "problem " << k;
    absl::StatusOr<VariantScalingPlan> greedy = GreedyVariantScaling(p);
    if (greedy.ok()) EXPECT_GE(greedy->cost, ilp->cost - 1e-6) << k;
    int used = 0;
    for (int x : ilp->instances) used += x > 0;
    mixes += used > 1;
  }
  // The instances are varied enough to mean something.
  EXPECT_GT(infeasible, 5);
  EXPECT_LT(infeasible, 150);
  EXPECT_GT(mixes, 20);
}

}  // namespace
}  // namespace tutti
