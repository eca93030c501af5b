// Goodput of a simulated workload: the largest offered rate at which every
// model's p99 latency stays within its SLO (workload/rate_search.h).
#ifndef TUTTI_SIMULATOR_GOODPUT_H_
#define TUTTI_SIMULATOR_GOODPUT_H_

#include <functional>

#include "absl/status/statusor.h"
#include "tutti/simulator/simulator.h"
#include "tutti/workload/rate_search.h"

namespace tutti {

inline bool MeetsSlo(const SimResult& result, double quantile = 0.99) { return MeetsSlo(result.models, quantile); }

struct GoodputResult {
  double rate = 0;       // the offered rate found (requests/s)
  SimResult at_rate;     // the simulation at that rate
  int simulations = 0;
};

// Scales the workload (all phases alike): doubles from the config's rate
// until the SLO breaks, then bisects to `rel_tolerance`. `progress`, if set,
// hears each probed rate and whether it met the SLO.
absl::StatusOr<GoodputResult> FindGoodput(
    const SimConfig& base, double rel_tolerance = 0.01,
    const std::function<void(double rate, bool ok)>& progress = nullptr);

}  // namespace tutti

#endif  // TUTTI_SIMULATOR_GOODPUT_H_
