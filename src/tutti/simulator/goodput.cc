#include "tutti/simulator/goodput.h"

#include "tutti/core/status_macros.h"
#include "tutti/simulator/experiment.h"

namespace tutti {

absl::StatusOr<GoodputResult> FindGoodput(const SimConfig& base, double rel_tolerance,
                                          const std::function<void(double, bool)>& progress) {
  GoodputResult out;
  auto probe = [&](double rate) -> absl::StatusOr<bool> {
    SimConfig c = base;
    c.workload = ScaleWorkload(base.workload, rate / base.workload.rate);
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

}  // namespace tutti
