#include "tutti/simulator/goodput.h"

#include "tutti/core/status_macros.h"
#include "tutti/simulator/experiment.h"

namespace tutti {

bool MeetsSlo(const std::vector<ModelMetrics>& models, double quantile) {
  for (const ModelMetrics& m : models) {
    const int64_t ended = m.good + m.late + m.dropped;
    if (ended > 0 && static_cast<double>(m.late + m.dropped) > (1 - quantile) * ended) return false;
  }
  return true;
}

absl::StatusOr<GoodputResult> FindGoodput(const SimConfig& base, double rel_tolerance,
                                          const std::function<void(double, bool)>& progress) {
  GoodputResult out;
  auto probe = [&](double rate) -> absl::StatusOr<bool> {
    SimConfig c = base;
    c.workload = ScaleWorkload(base.workload, rate / base.workload.rate);
    c.options.nexus_initial_rates =
        InitialModelRates(c.workload, static_cast<int>(c.cluster.models.size()));
    TUTTI_ASSIGN_OR_RETURN(SimResult r, RunSimulation(c));
    ++out.simulations;
    const bool ok = MeetsSlo(r);
    if (progress) progress(rate, ok);
    if (ok && rate > out.rate) {
      out.rate = rate;
      out.at_rate = std::move(r);
    }
    return ok;
  };
  if (base.workload.rate <= 0) {
    return absl::InvalidArgumentError("goodput search needs a workload with a positive rate");
  }
  TUTTI_RETURN_IF_ERROR(SearchHighestRate(base.workload.rate, rel_tolerance, probe).status());
  return out;
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
