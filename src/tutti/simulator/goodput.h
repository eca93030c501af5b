// Goodput search: the largest offered rate at which every model's p99
// latency stays within its SLO (Symphony's and Nexus's definition). A
// request that is dropped counts as infinitely late, so "p99 within SLO" is
// exactly "at most 1% of the model's requests are late or dropped".
#ifndef TUTTI_SIMULATOR_GOODPUT_H_
#define TUTTI_SIMULATOR_GOODPUT_H_

#include <functional>

#include "absl/status/statusor.h"
#include "tutti/simulator/simulator.h"

namespace tutti {

// True iff every model that received requests has at most (1 − quantile)
// of them late or dropped.
bool MeetsSlo(const std::vector<ModelMetrics>& models, double quantile = 0.99);
inline bool MeetsSlo(const SimResult& result, double quantile = 0.99) { return MeetsSlo(result.models, quantile); }

// The search both goodput finders use: doubles `rate` from `start` while
// `meets(rate)` holds, then bisects between the last good and the first bad
// rate to `rel_tolerance`. Returns the highest rate that met (0 if none).
absl::StatusOr<double> SearchHighestRate(double start, double rel_tolerance,
                                         const std::function<absl::StatusOr<bool>(double rate)>& meets);

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
