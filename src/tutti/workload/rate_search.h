// Goodput search, shared by the simulator (`tutti sim goodput`) and the load
// generator (`tutti load --find-goodput`): the largest offered rate at which
// every model's p99 latency stays within its SLO (Symphony's and Nexus's
// definition). A request that is dropped counts as infinitely late, so "p99
// within SLO" is exactly "at most 1% of the model's requests are late or
// dropped".
#ifndef TUTTI_WORKLOAD_RATE_SEARCH_H_
#define TUTTI_WORKLOAD_RATE_SEARCH_H_

#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "tutti/workload/metrics.h"

namespace tutti {

// True iff every model that received requests has at most (1 − quantile)
// of them late or dropped.
bool MeetsSlo(const std::vector<ModelMetrics>& models, double quantile = 0.99);

// Doubles `rate` from `start` while `meets(rate)` holds, then bisects
// between the last good and the first bad rate to `rel_tolerance`. Returns
// the highest rate that met (0 if none).
absl::StatusOr<double> SearchHighestRate(double start, double rel_tolerance,
                                         const std::function<absl::StatusOr<bool>(double rate)>& meets);

}  // namespace tutti

#endif  // TUTTI_WORKLOAD_RATE_SEARCH_H_
