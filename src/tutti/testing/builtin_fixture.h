// A built-in architecture with seeded random weights, written as a version
// of a test repository: a real network, untrained — for tests that need its
// shapes and its behaviour (a GRU's state), not its accuracy.
#ifndef TUTTI_TESTING_BUILTIN_FIXTURE_H_
#define TUTTI_TESTING_BUILTIN_FIXTURE_H_

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "tutti/core/status_macros.h"
#include "tutti/models/architectures.h"
#include "tutti/repository/model_repository.h"

namespace tutti::testing {

// Writes `config` and weights drawn with `seed` for its architecture to
// `version_dir` (e.g. <repo>/<model>/1). Errors: an unknown architecture,
// an unwritable directory.
inline absl::Status WriteSeededBuiltinModel(const std::string& version_dir, const ModelConfig& config,
                                            uint64_t seed = 5) {
  TUTTI_RETURN_IF_ERROR(WriteModelConfig(version_dir, config));
  torch::manual_seed(seed);
  TUTTI_ASSIGN_OR_RETURN(std::shared_ptr<torch::nn::Module> net, MakeBuiltinNet(config.architecture));
  torch::save(net, version_dir + "/model.pt");
  return absl::OkStatus();
}

}  // namespace tutti::testing

#endif  // TUTTI_TESTING_BUILTIN_FIXTURE_H_
