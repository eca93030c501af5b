// Closed-form batching bounds for one model on N GPUs (Symphony §3.3 and
// Table 2). Pure functions of a latency profile.
//
// Without coordination a request may just miss a batch and wait for the next
// one, so the batch must satisfy 2ℓ(b) <= SLO. With staggered execution
// across N GPUs a new batch starts every ℓ(b)/N, so (1 + 1/N)·ℓ(b) <= SLO.
// Either way the cluster serves at most N·b/ℓ(b) requests per second.
#ifndef TUTTI_PLANNER_BATCHING_BOUNDS_H_
#define TUTTI_PLANNER_BATCHING_BOUNDS_H_

#include "tutti/core/latency_profile.h"

namespace tutti {

struct BatchingBound {
  int batch = 0;            // 0: even a batch of one misses the SLO
  double throughput = 0;    // requests/s over all GPUs
};

// Largest b with 2ℓ(b) <= slo, and N·b/ℓ(b).
BatchingBound UncoordinatedBound(const LatencyProfile& profile, Duration slo, int gpus);

// Largest b with (1 + 1/N)·ℓ(b) <= slo, and N·b/ℓ(b).
BatchingBound StaggeredBound(const LatencyProfile& profile, Duration slo, int gpus);

}  // namespace tutti

#endif  // TUTTI_PLANNER_BATCHING_BOUNDS_H_
