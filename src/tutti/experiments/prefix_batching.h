// Prefix batching (Nexus §6.3, Figure 15) measured on this CPU with real
// models: N builtin models that share their leading layer stages (e.g.
// specialists fine-tuned in their last layer from one trunk) on one torch
// executor, served with and without prefix batching through the server's
// own road (ResolveServerConfig, LayOutCluster, the group's executor,
// InferenceCore, GraphEngine for the members), in this process: requests
// are submitted straight to the engine (no HTTP, no client), so the
// figures are what the serving core can do. Arrivals are Poisson, split
// equally over the N models, each a Fashion-MNIST test image.
#ifndef TUTTI_EXPERIMENTS_PREFIX_BATCHING_H_
#define TUTTI_EXPERIMENTS_PREFIX_BATCHING_H_

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tutti/core/time.h"
#include "tutti/datasets/fashion_mnist.h"
#include "tutti/repository/model_repository.h"

namespace tutti {

struct PrefixBatchingSetup {
  std::vector<std::string> models;  // served on one torch executor
  bool prefix_batching = true;
  std::string policy = "deferred";   // the scheduling policy (serve config `policy`)
  Duration objective = 10 * kMillisecond;
  Duration probe = 3 * kSecond;      // sending time per probe rate (the first 0.5 s not judged)
  double max_bad = 0.01;             // a rate meets the objective when at most this share is bad
  double start_rate = 1000;          // requests/s, total
  double tolerance = 0.05;           // relative precision of the search
  uint64_t seed = 1;
};

struct PrefixBatchingResult {
  double goodput = 0;        // the highest rate found that meets the objective
  double bad_at_goodput = 0; // its share of late, dropped or failed requests
  int64_t parameters = 0;    // what the executor holds
  int probes = 0;
};

// Searches the goodput (doubling, then bisecting; a rate fails when two
// probes in a row fail). Errors: the models'
// own (unknown, without a cpu profile, weights that fail to load).
absl::StatusOr<PrefixBatchingResult> MeasurePrefixBatching(const ModelRepository& repo,
                                                           const PrefixBatchingSetup& setup, const ImageSet& images,
                                                           std::ostream* progress);

}  // namespace tutti

#endif  // TUTTI_EXPERIMENTS_PREFIX_BATCHING_H_
