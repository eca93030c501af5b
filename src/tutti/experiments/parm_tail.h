// ParM's tail-latency experiment (ParM, SOSP 2019 §6): m instances of a
// deployed model under injected slowdowns (§6.1's background shuffles),
// served three ways through the same InferenceCore and scheduler:
//   none             m instances, no redundancy;
//   equal-resources  m + m/k instances of the deployed model, one queue;
//   parm             m instances + m/k instances of a parity model, coding
//                    groups of k (serving/inference_core.h).
// Requests arrive as a Poisson process, one per query (batch size 1, as in
// the paper), and are dispatched as a pull-based single queue: the `eager`
// policy with await_completion, so an instance takes a query only once it
// is actually free. Latency is measured from submission to the answer
// (original or reconstruction), as the paper measures at the frontend.
//
// Two executor kinds: emulated instances on a virtual clock (fast,
// deterministic for a seed) and real libtorch CPU instances on the real
// clock, sending Fashion-MNIST test images and scoring the answers.
#ifndef TUTTI_EXPERIMENTS_PARM_TAIL_H_
#define TUTTI_EXPERIMENTS_PARM_TAIL_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "tutti/core/latency_profile.h"
#include "tutti/datasets/fashion_mnist.h"
#include "tutti/executors/slowdown_executor.h"
#include "tutti/repository/model_repository.h"

namespace tutti {

enum class Redundancy { kNone, kEqualResources, kParm };

struct ParmTailSetup {
  Redundancy redundancy = Redundancy::kParm;
  int k = 2;
  int instances = 12;             // m: instances of the deployed model
  double rate = 270;              // Poisson arrivals, requests/s
  int64_t requests = 100000;
  Duration objective = 10 * kSecond;  // generous: the experiment measures, never drops
  SlowdownOptions slowdowns;
  uint64_t seed = 1;
};

struct ParmTailResult {
  std::string label;  // "none", "equal-resources k=2", "parm k=2"
  int instances = 0;  // executors in all
  int64_t requests = 0;
  int64_t errors = 0;
  int64_t reconstructed = 0;
  Duration p50 = 0, p99 = 0, p999 = 0;
  double accuracy = -1;  // real models only: answers (reconstructions included) matching the labels
};

std::string RedundancyLabel(Redundancy redundancy, int k);

// Emulated instances with `profile` (the parity model gets the same) on a
// virtual clock. Deterministic for a seed.
ParmTailResult RunParmTailEmulated(const ParmTailSetup& setup, const LatencyProfile& profile);

// libtorch CPU instances of `deployed` and (for parm) `parity`, on the real
// clock, sending images of `test` in order. Errors: models that do not load
// or do not take the images.
absl::StatusOr<ParmTailResult> RunParmTailTorch(const ParmTailSetup& setup, const ModelVersion& deployed,
                                                const ModelVersion* parity, const ImageSet& test);

}  // namespace tutti

#endif  // TUTTI_EXPERIMENTS_PARM_TAIL_H_
