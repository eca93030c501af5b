#include "tutti/planner/batching_bounds.h"

namespace tutti {
namespace {

BatchingBound Bound(const LatencyProfile& p, Duration budget, int gpus) {
  BatchingBound out;
  out.batch = p.MaxBatchWithin(budget);
  if (out.batch > 0) out.throughput = gpus * p.Throughput(out.batch);
  return out;
}

}  // namespace

BatchingBound UncoordinatedBound(const LatencyProfile& profile, Duration slo, int gpus) {
  return Bound(profile, slo / 2, gpus);
}

BatchingBound StaggeredBound(const LatencyProfile& profile, Duration slo, int gpus) {
  // (1 + 1/N)ℓ(b) <= slo  ⇔  ℓ(b) <= slo·N/(N + 1)
  return Bound(profile, slo * gpus / (gpus + 1), gpus);
}

}  // namespace tutti
