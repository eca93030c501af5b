// The stateful graph HAMS's experiments need: a stateful step between two
// stateless ones. `<graph>_clamp` (TorchScript: clamps the 4 rows a request
// carries to the pixel range [0, 1], an input guard) → the GRU model (gru_rows's
// shapes) → `<graph>_softmax` (TorchScript: logits to probabilities). The
// TorchScript modules are written from their source by libtorch (no
// Python); the graph is a Triton ensemble that passes each request's
// sequence to its steps. `tutti demo` builds it as `gru_pipeline`; the
// distributed fault test and `tutti bench stateful --model gru_pipeline`
// serve it.
#ifndef TUTTI_EXPERIMENTS_STATEFUL_PIPELINE_H_
#define TUTTI_EXPERIMENTS_STATEFUL_PIPELINE_H_

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "tutti/core/latency_profile.h"

namespace tutti {

// Writes the two TorchScript models and the graph `graph` into `repo_dir`
// around the stateful model `gru`, with `objective_ms`. `profile`, if set,
// becomes the stateless steps' cpu profile (else profile them before
// serving). Errors: files that cannot be written.
absl::Status WriteStatefulPipeline(const std::string& repo_dir, const std::string& graph, const std::string& gru,
                                   double objective_ms, const std::optional<LatencyProfile>& profile);

}  // namespace tutti

#endif  // TUTTI_EXPERIMENTS_STATEFUL_PIPELINE_H_
