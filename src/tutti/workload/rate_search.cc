#include "tutti/workload/rate_search.h"

#include "tutti/core/status_macros.h"

namespace tutti {

bool MeetsSlo(const std::vector<ModelMetrics>& models, double quantile) {
  for (const ModelMetrics& m : models) {
    if (m.ended() > 0 && static_cast<double>(m.bad()) > (1 - quantile) * m.ended()) return false;
  }
  return true;
}

absl::StatusOr<double> SearchHighestRate(double start, double rel_tolerance,
                                         const std::function<absl::StatusOr<bool>(double rate)>& meets) {
  double lo = 0, hi = start;
  for (int i = 0; i < 40; ++i) {  // find a failing upper bound
    TUTTI_ASSIGN_OR_RETURN(bool ok, meets(hi));
    if (!ok) break;
    lo = hi;
    hi *= 2;
  }
  while (hi - lo > rel_tolerance * hi) {
    const double mid = (lo + hi) / 2;
    TUTTI_ASSIGN_OR_RETURN(bool ok, meets(mid));
    (ok ? lo : hi) = mid;
  }
  return lo;
}

}  // namespace tutti
