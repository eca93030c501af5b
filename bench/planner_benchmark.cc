// INFaaS's decisions, timed (Google Benchmark): per-query variant selection
// over 100 registered variants (INFaaS Table 7: 2.2–3.5 ms median; our goal
// ≤ 50 µs), and the variant-scaling ILP by CBC against the greedy heuristic
// (INFaaS §4.2.2: Gurobi took 23 s for 50 model architectures, 50 s for 100).
//   build/bench/planner_benchmark
#include <random>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "tutti/planner/variant_scaling.h"
#include "tutti/planner/variant_selection.h"

namespace tutti {
namespace {

std::vector<SelectableVariant> RandomVariants(int n, std::mt19937* rng) {
  std::uniform_real_distribution<double> unit(0, 1);
  std::vector<SelectableVariant> v;
  for (int i = 0; i < n; ++i) {
    v.push_back({"variant-" + std::to_string(i), 0.7 + 0.25 * unit(*rng), Millis(1 + 99 * unit(*rng)),
                 Millis(100 + 2000 * unit(*rng)), 1 + 15 * unit(*rng),
                 static_cast<VariantState>((*rng)() % 4), unit(*rng)});
  }
  return v;
}

void BM_SelectVariant(benchmark::State& state) {
  std::mt19937 rng(7);
  const std::vector<SelectableVariant> variants = RandomVariants(static_cast<int>(state.range(0)), &rng);
  std::uniform_real_distribution<double> unit(0, 1);
  std::vector<VariantRequirements> queries;
  for (int i = 0; i < 1024; ++i) queries.push_back({0.7 + 0.3 * unit(rng), Millis(5 + 95 * unit(rng))});
  size_t q = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(SelectVariant(variants, queries[q++ % queries.size()]));
  }
}
BENCHMARK(BM_SelectVariant)->Arg(10)->Arg(100)->Arg(1000);

VariantScalingProblem RandomScaling(int n) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> unit(0, 1);
  VariantScalingProblem p;
  p.capacity = {64, 8};  // CPU cores, GPUs
  for (int j = 0; j < n; ++j) {
    ScalingVariant v{"v" + std::to_string(j), 5 + 800 * unit(rng), Millis(5 + 200 * unit(rng)), 1 + 15 * unit(rng),
                     Seconds(1 + 30 * unit(rng)), static_cast<int>(rng() % 2)};
    v.resources = {static_cast<double>(rng() % 5), static_cast<double>(rng() % 2)};
    p.variants.push_back(v);
  }
  p.load_qps = 2000;
  p.slo = Millis(100);
  p.lambda = 0.05;
  return p;
}

void BM_SolveVariantScaling(benchmark::State& state) {
  const VariantScalingProblem p = RandomScaling(static_cast<int>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(SolveVariantScaling(p, Seconds(10)));
}
BENCHMARK(BM_SolveVariantScaling)->Arg(10)->Arg(50)->Arg(100)->Unit(benchmark::kMillisecond);

void BM_GreedyVariantScaling(benchmark::State& state) {
  const VariantScalingProblem p = RandomScaling(static_cast<int>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(GreedyVariantScaling(p));
}
BENCHMARK(BM_GreedyVariantScaling)->Arg(10)->Arg(50)->Arg(100)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace tutti

BENCHMARK_MAIN();
