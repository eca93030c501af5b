// Graph models (platform ensemble, model_config.h's EnsembleStep): checking
// a graph against the repository's models and ordering its steps.
#ifndef TUTTI_REPOSITORY_ENSEMBLE_H_
#define TUTTI_REPOSITORY_ENSEMBLE_H_

#include <vector>

#include "absl/status/statusor.h"
#include "tutti/repository/model_config.h"

namespace tutti {

struct ModelVersion;

// A valid graph: its steps in an order in which every step comes after the
// steps whose outputs it reads, and the model version each step runs.
struct EnsemblePlan {
  std::vector<int> order;                   // step indices
  std::vector<const ModelVersion*> models;  // by step index
};

// Checks `graph` against `versions` (the repository's) and orders its
// steps. InvalidArgument, naming the step and tensor: an unknown model or
// version, a graph as a step, a step model's input left unmapped, a mapped
// input or output the model does not have, a tensor produced twice (but by
// routed steps that exclude each other, or the graph's output under a
// merge) or by nothing, a tensor whose datatype or shape differs from what its consumer
// (or the graph's output) declares, steps that form a cycle.
// REQUIRES: graph.platform is kEnsemble and ValidateModelConfig passed.
absl::StatusOr<EnsemblePlan> PlanEnsemble(const ModelConfig& graph, const std::vector<ModelVersion>& versions);

}  // namespace tutti

#endif  // TUTTI_REPOSITORY_ENSEMBLE_H_
