#include "tutti/repository/model_repository.h"

#include <algorithm>
#include <filesystem>
#include <system_error>
#include <tuple>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "tutti/core/file_util.h"
#include "tutti/core/status_macros.h"
#include "tutti/repository/ensemble.h"

namespace tutti {
namespace fs = std::filesystem;
namespace {

absl::Status WithPath(const std::string& path, const absl::Status& s) {
  return absl::Status(s.code(), absl::StrCat(path, ": ", s.message()));
}

// Appends the version directories of one model directory to `out`, or the
// problems found to `errors`.
void ScanModel(const fs::path& model_dir, std::vector<ModelVersion>* out,
               std::vector<std::string>* errors) {
  const std::string name = model_dir.filename().string();
  int subdirs = 0;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(model_dir, ec)) {
    if (!e.is_directory()) continue;
    ++subdirs;
    const std::string vname = e.path().filename().string();
    int64_t version = 0;
    if (!absl::SimpleAtoi(vname, &version) || version < 1) {
      errors->push_back(absl::StrCat(e.path().string(), ": version directory '", vname,
                                     "' is not a positive integer; name versions 1, 2, …"));
      continue;
    }
    absl::StatusOr<ModelVersion> v = LoadModelVersion(e.path().string(), name, version);
    if (v.ok()) {
      out->push_back(*std::move(v));
    } else {
      errors->push_back(std::string(v.status().message()));
    }
  }
  if (ec) errors->push_back(absl::StrCat(model_dir.string(), ": cannot list: ", ec.message()));
  if (subdirs == 0 && !ec) {
    errors->push_back(absl::StrCat(model_dir.string(), ": model '", name,
                                   "' has no version directories (expected ", name, "/1/",
                                   kConfigFileName, ")"));
  }
}

}  // namespace

std::string VersionDir(absl::string_view root, absl::string_view name, int64_t version) {
  return absl::StrCat(root, "/", name, "/", version);
}

const char* WeightsFileName(Platform platform) {
  return platform == Platform::kOnnx ? kOnnxFileName : kWeightsFileName;
}

absl::StatusOr<ModelVersion> LoadModelVersion(const std::string& dir, absl::string_view model_name,
                                              int64_t version) {
  const std::string config_path = (fs::path(dir) / kConfigFileName).string();
  absl::StatusOr<std::string> text = ReadFile(config_path);
  if (!text.ok()) return text.status();
  absl::StatusOr<ModelConfig> config = ParseModelConfig(*text);
  if (!config.ok()) return WithPath(config_path, config.status());
  if (config->name != model_name) {
    return absl::InvalidArgumentError(absl::StrCat(config_path, ": name '", config->name,
                                                   "' does not match its directory '", model_name,
                                                   "'"));
  }
  const std::string weights = (fs::path(dir) / WeightsFileName(config->platform)).string();
  ModelVersion v{*std::move(config), version, dir, weights};
  std::error_code ec;
  if (v.config.platform == Platform::kEmulated || v.config.platform == Platform::kEnsemble) {
    v.weights_path.clear();
  } else if (!fs::is_regular_file(v.weights_path, ec)) {
    return absl::NotFoundError(absl::StrCat(dir, ": weights file ", WeightsFileName(v.config.platform),
                                            " not found (train the model with `tutti train` or copy a ",
                                            v.config.platform == Platform::kOnnx ? "model.onnx" : "TorchScript archive",
                                            " there)"));
  }
  return v;
}

absl::Status WriteModelConfig(const std::string& dir, const ModelConfig& config) {
  TUTTI_RETURN_IF_ERROR(ValidateModelConfig(config));
  return WriteFileAtomic((fs::path(dir) / kConfigFileName).string(), ModelConfigToYaml(config));
}

namespace {

// A parity model must protect a model of the repository with the same input
// and output tensors.
void CheckParityModels(const std::vector<ModelVersion>& versions, std::vector<std::string>* errors) {
  for (const ModelVersion& v : versions) {
    if (!v.config.parity) continue;
    const std::string& deployed = v.config.parity->deployed;
    const ModelVersion* found = nullptr;
    for (const ModelVersion& d : versions) {
      if (d.config.name == deployed && (found == nullptr || d.version > found->version)) found = &d;
    }
    const std::string where = (fs::path(v.dir) / kConfigFileName).string();
    if (found == nullptr) {
      errors->push_back(absl::StrCat(where, ": parity.deployed names '", deployed, "', which is not in the repository"));
    } else if (found->config.inputs[0].shape != v.config.inputs[0].shape ||
               found->config.outputs[0].shape != v.config.outputs[0].shape) {
      errors->push_back(absl::StrCat(where, ": a parity model must take and return the tensor shapes of its "
                                     "deployed model '", deployed, "'"));
    }
  }
}

}  // namespace

absl::StatusOr<ModelRepository> ModelRepository::With(std::vector<ModelVersion> extra) const {
  ModelRepository out = *this;
  for (ModelVersion& v : extra) {
    if (Find(v.config.name).ok()) {
      return absl::InvalidArgumentError(absl::StrCat("model '", v.config.name, "' is in the repository already"));
    }
    out.versions_.push_back(std::move(v));
  }
  std::sort(out.versions_.begin(), out.versions_.end(), [](const ModelVersion& a, const ModelVersion& b) {
    return std::tie(a.config.name, a.version) < std::tie(b.config.name, b.version);
  });
  return out;
}

absl::StatusOr<ModelRepository> ModelRepository::Open(const std::string& root) {
  std::error_code ec;
  if (!fs::is_directory(root, ec)) {
    return absl::NotFoundError(absl::StrCat("model repository not found: ", root,
                                            " is not a directory"));
  }
  ModelRepository repo;
  repo.root_ = root;
  std::vector<std::string> errors;
  for (const fs::directory_entry& e : fs::directory_iterator(root, ec)) {
    if (e.is_directory()) ScanModel(e.path(), &repo.versions_, &errors);
  }
  if (ec) return absl::UnavailableError(absl::StrCat("cannot list ", root, ": ", ec.message()));
  CheckParityModels(repo.versions_, &errors);
  for (const ModelVersion& v : repo.versions_) {
    if (v.config.platform != Platform::kEnsemble) continue;
    if (absl::StatusOr<EnsemblePlan> plan = PlanEnsemble(v.config, repo.versions_); !plan.ok()) {
      errors.push_back(absl::StrCat((fs::path(v.dir) / kConfigFileName).string(), ": ", plan.status().message()));
    }
  }
  if (!errors.empty()) {
    std::sort(errors.begin(), errors.end());
    return absl::InvalidArgumentError(absl::StrCat("model repository ", root, " has ",
                                                   errors.size(), " error(s):\n  ",
                                                   absl::StrJoin(errors, "\n  ")));
  }
  std::sort(repo.versions_.begin(), repo.versions_.end(),
            [](const ModelVersion& a, const ModelVersion& b) {
              return std::tie(a.config.name, a.version) < std::tie(b.config.name, b.version);
            });
  return repo;
}

std::vector<std::string> ModelRepository::ModelNames() const {
  std::vector<std::string> names;
  for (const ModelVersion& v : versions_) {
    if (names.empty() || names.back() != v.config.name) names.push_back(v.config.name);
  }
  return names;
}

absl::StatusOr<const ModelVersion*> ModelRepository::Find(absl::string_view name,
                                                          int64_t version) const {
  const ModelVersion* best = nullptr;
  std::vector<int64_t> have;
  for (const ModelVersion& v : versions_) {
    if (v.config.name != name) continue;
    have.push_back(v.version);
    if (version == kLatest ? (!best || v.version > best->version) : v.version == version) best = &v;
  }
  if (best) return best;
  if (have.empty()) {
    return absl::NotFoundError(absl::StrCat("unknown model '", name, "' in repository ", root_));
  }
  return absl::NotFoundError(absl::StrCat("model '", name, "' has no version ", version,
                                          " (available: ", absl::StrJoin(have, ", "), ")"));
}

}  // namespace tutti
