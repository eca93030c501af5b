// Workloads for the simulator and the load generator: when requests
// arrive and for which model.
//
// Each model gets its own arrival stream with rate total_rate × share, where
// the shares follow Zipf popularity (share ∝ 1/rank^s; s = 0 is uniform) or
// explicit weights. Streams are constant-rate, Poisson, or Gamma-distributed
// (shape k: coefficient of variation 1/√k; k = 1 is Poisson), and the total
// rate may change piecewise over time. A trace file replays recorded
// arrivals instead. Every stream has its own seeded generator, so a workload
// is a deterministic function of its spec and seed.
#ifndef TUTTI_WORKLOAD_WORKLOAD_H_
#define TUTTI_WORKLOAD_WORKLOAD_H_

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tutti/core/time.h"

namespace tutti {

enum class ArrivalKind { kConstant, kPoisson, kGamma, kTrace };

struct RatePhase {
  Time start = 0;   // from this instant on …
  double rate = 0;  // … the total rate is this (requests/s)
};

struct WorkloadSpec {
  ArrivalKind arrival = ArrivalKind::kPoisson;
  double gamma_shape = 1.0;
  double rate = 0;                // total requests/s at time 0
  std::vector<RatePhase> phases;  // later rate changes, by increasing start
  double zipf_s = 0;              // popularity exponent across models
  std::vector<double> weights;    // explicit shares per model (override zipf)
  std::string trace_path;         // kTrace: CSV lines "time_ms,model_index"
  // Shares of the requests sent at priority 1 (the highest), 2, …; empty:
  // one level. Each request draws its level independently.
  std::vector<double> priority_shares;
};

// Each request's priority level (0: priority 1) by `shares`
// (WorkloadSpec::priority_shares; empty: always 0), drawn from a stream of
// its own seeded by `seed`, so that the simulator and the load generator
// draw alike. Not thread-safe.
class LevelDraw {
 public:
  LevelDraw(const std::vector<double>& shares, uint64_t seed)
      : any_(!shares.empty()), rng_(seed * 977 + 3), pick_(shares.begin(), shares.end()) {}
  int Next() { return any_ ? pick_(rng_) : 0; }

 private:
  bool any_;
  std::mt19937_64 rng_;
  std::discrete_distribution<int> pick_;
};

// How results name a level's requests: "priority 1" for level 0.
std::string PriorityName(int level);

// Shares per model (summing to 1) for `num_models` models.
std::vector<double> ModelShares(const WorkloadSpec& spec, int num_models);

// The total rate in force at `t`.
double RateAt(const WorkloadSpec& spec, Time t);

struct Arrival {
  Time time = 0;
  int model = 0;
};

// Produces arrivals in time order (ties: by model index). Not thread-safe.
class ArrivalSource {
 public:
  virtual ~ArrivalSource() = default;
  // The next arrival, or false when the source is exhausted.
  virtual bool Next(Arrival* arrival) = 0;
};

// Builds the source for `spec` over [0, end). InvalidArgument for a bad
// spec (negative rate, shape <= 0, wrong weight count, unreadable trace …).
absl::StatusOr<std::unique_ptr<ArrivalSource>> MakeArrivalSource(const WorkloadSpec& spec,
                                                                 int num_models, Time end,
                                                                 uint64_t seed);

// The workload with every rate (initial and phases) multiplied by `factor`.
WorkloadSpec ScaleWorkload(const WorkloadSpec& spec, double factor);

// The expected per-model rates of a workload at time 0 (Nexus's first plan).
std::vector<double> InitialModelRates(const WorkloadSpec& spec, int num_models);

}  // namespace tutti

#endif  // TUTTI_WORKLOAD_WORKLOAD_H_
