#include "tutti/experiments/stateful_pipeline.h"

#include <torch/script.h>

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "tutti/core/status_macros.h"
#include "tutti/repository/model_repository.h"

namespace tutti {
namespace {

// A parameterless TorchScript model with `forward` written in TorchScript.
absl::Status WriteScriptModel(const std::string& repo_dir, const std::string& name, const std::string& forward,
                              const TensorSpec& input, const TensorSpec& output,
                              const std::optional<LatencyProfile>& profile) {
  const std::string dir = VersionDir(repo_dir, name, 1);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return absl::InternalError(absl::StrCat("cannot create ", dir, ": ", ec.message()));
  try {
    torch::jit::Module m(name);
    m.define(forward);
    m.save(dir + "/model.pt");
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("cannot write the TorchScript model ", name, ": ", e.what()));
  }
  ModelConfig c;
  c.name = name;
  c.platform = Platform::kTorchScript;
  c.task = "fashion-mnist";
  c.max_batch_size = 64;
  c.inputs = {input};
  c.outputs = {output};
  if (profile) c.profiles["cpu"] = *profile;
  return WriteModelConfig(dir, c);
}

}  // namespace

absl::Status WriteStatefulPipeline(const std::string& repo_dir, const std::string& graph, const std::string& gru,
                                   double objective_ms, const std::optional<LatencyProfile>& profile) {
  const TensorSpec rows{"rows", DataType::kFp32, {4, 28}};
  const TensorSpec logits{"logits", DataType::kFp32, {10}};
  const TensorSpec probabilities{"probabilities", DataType::kFp32, {10}};
  const std::string clamp = absl::StrCat(graph, "_clamp"), softmax = absl::StrCat(graph, "_softmax");
  TUTTI_RETURN_IF_ERROR(WriteScriptModel(repo_dir, clamp, "def forward(self, x):\n  return torch.clamp(x, 0.0, 1.0)\n",
                                         rows, rows, profile));
  TUTTI_RETURN_IF_ERROR(WriteScriptModel(repo_dir, softmax, "def forward(self, x):\n  return torch.softmax(x, 1)\n",
                                         logits, probabilities, profile));
  ModelConfig g;
  g.name = graph;
  g.platform = Platform::kEnsemble;
  g.task = "fashion-mnist";
  g.max_batch_size = 64;
  g.inputs = {rows};
  g.outputs = {probabilities};
  g.latency_objective_ms = objective_ms;
  g.steps.push_back({clamp, -1, {{"rows", "rows"}}, {{"rows", "clamped"}}});
  g.steps.push_back({gru, -1, {{"rows", "clamped"}}, {{"logits", "logits"}}});
  g.steps.push_back({softmax, -1, {{"logits", "logits"}}, {{"probabilities", "probabilities"}}});
  return WriteModelConfig(VersionDir(repo_dir, graph, 1), g);
}

}  // namespace tutti
