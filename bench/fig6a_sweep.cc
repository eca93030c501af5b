// Symphony Figure 6a: eager versus deferred goodput as batching gets
// stronger. α = 1 ms, β = 1 … 15 ms, SLO = 2ℓ(8), 32 GPUs, 10 identical
// models, Poisson arrivals. The paper: eager ≈ deferred at β/α = 1, and
// eager's share of deferred goodput falls as β/α grows.
//
//   build/bench/fig6a_sweep [--csv FILE]
#include <cstring>
#include <fstream>
#include <iostream>

#include "absl/strings/str_format.h"
#include "tutti/simulator/experiment.h"
#include "tutti/simulator/goodput.h"

namespace tutti {
namespace {

SimConfig Config(double beta_ms, const std::string& policy) {
  SimConfig c;
  LatencyProfile p = *LatencyProfile::Linear(Millis(1), Millis(beta_ms), 64);
  for (int m = 0; m < 10; ++m) {
    c.cluster.models.push_back({absl::StrFormat("m%d", m), p, 2 * p.Latency(8)});
  }
  c.cluster.gpus = 32;
  c.workload.arrival = ArrivalKind::kPoisson;
  c.workload.rate = 10000;
  c.policy = policy;
  c.duration = Seconds(6);
  c.warmup = Seconds(1);
  c.options.nexus_initial_rates = InitialModelRates(c.workload, 10);
  return c;
}

}  // namespace
}  // namespace tutti

int main(int argc, char** argv) {
  std::string csv_path;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--csv") == 0 && i + 1 < argc) csv_path = argv[++i];
  }
  std::string csv = "beta_over_alpha,eager_goodput,deferred_goodput,eager_share\n";
  std::cout << absl::StrFormat("%8s %14s %14s %12s\n", "beta/a", "eager r/s", "deferred r/s", "eager/defer");
  for (int beta = 1; beta <= 15; beta += 2) {
    double goodput[2];
    const char* policies[2] = {"eager", "deferred"};
    for (int i = 0; i < 2; ++i) {
      absl::StatusOr<tutti::GoodputResult> g = tutti::FindGoodput(tutti::Config(beta, policies[i]), 0.01);
      if (!g.ok()) {
        std::cerr << g.status() << "\n";
        return 1;
      }
      goodput[i] = g->rate;
    }
    std::cout << absl::StrFormat("%8d %14.0f %14.0f %12.3f\n", beta, goodput[0], goodput[1],
                                 goodput[0] / goodput[1]);
    absl::StrAppendFormat(&csv, "%d,%.1f,%.1f,%.4f\n", beta, goodput[0], goodput[1], goodput[0] / goodput[1]);
  }
  if (!csv_path.empty()) std::ofstream(csv_path) << csv;
  return 0;
}
