// ModelRepository: the models Tutti can serve, read from a directory laid out
// in the spirit of Triton's model repository:
//
//   <root>/<model>/<version>/config.yaml   the ModelConfig (model_config.h)
//   <root>/<model>/<version>/model.pt      the weights: a TorchScript archive
//                                          (platform torchscript) or Tutti's
//                                          saved module (platform builtin);
//                                          none for platform emulated
//
// Model directory names are the model names; version directories are positive
// integers. Regular files beside them (a README, say) are ignored.
//
// Open() validates everything up front and fails with every problem it found,
// each naming the path and what to fix. It reads only metadata and checks the
// weights file exists; loading the weights is the executors' job.
//
// Immutable after Open(); safe to share across threads.
#ifndef TUTTI_REPOSITORY_MODEL_REPOSITORY_H_
#define TUTTI_REPOSITORY_MODEL_REPOSITORY_H_

#include <cstdint>
#include <string>
#include "absl/strings/string_view.h"
#include <vector>

#include "absl/status/statusor.h"
#include "tutti/repository/model_config.h"

namespace tutti {

inline constexpr char kConfigFileName[] = "config.yaml";
inline constexpr char kWeightsFileName[] = "model.pt";
inline constexpr char kOnnxFileName[] = "model.onnx";
// The file a version of `platform` keeps its weights in: model.onnx for
// platform onnx (as Triton), model.pt for the others.
const char* WeightsFileName(Platform platform);

struct ModelVersion {
  ModelConfig config;
  int64_t version = 0;
  std::string dir;           // <root>/<model>/<version>
  std::string weights_path;  // dir/model.pt (model.onnx); empty for platform emulated and ensemble
  std::string variant_of;    // a generated variant (repository/variants.h): its model; "" for a registered model
};

class ModelRepository {
 public:
  // Version argument of Find() meaning "the highest version".
  static constexpr int64_t kLatest = 0;

  // Scans and validates `root`. NotFound if it does not exist; otherwise
  // InvalidArgument listing every invalid model version found.
  static absl::StatusOr<ModelRepository> Open(const std::string& root);

  const std::string& root() const { return root_; }

  // All versions of all models, sorted by (name, version).
  const std::vector<ModelVersion>& versions() const { return versions_; }

  // Distinct model names, sorted.
  std::vector<std::string> ModelNames() const;

  // One version of a model (kLatest: its highest). NotFound names the model
  // and, for a missing version, the versions that exist.
  absl::StatusOr<const ModelVersion*> Find(absl::string_view name, int64_t version = kLatest) const;

  // This repository with `extra` versions beside its own (generated ones:
  // repository/variants.h). InvalidArgument when a name is taken.
  absl::StatusOr<ModelRepository> With(std::vector<ModelVersion> extra) const;

 private:
  std::string root_;
  std::vector<ModelVersion> versions_;
};

// <root>/<name>/<version>
std::string VersionDir(absl::string_view root, absl::string_view name, int64_t version);

// Reads and validates one version directory. The config's name must equal
// `model_name` (the directory name one level up).
absl::StatusOr<ModelVersion> LoadModelVersion(const std::string& dir, absl::string_view model_name,
                                              int64_t version);

// Validates `config` and writes it to dir/config.yaml atomically.
absl::Status WriteModelConfig(const std::string& dir, const ModelConfig& config);

}  // namespace tutti

#endif  // TUTTI_REPOSITORY_MODEL_REPOSITORY_H_
