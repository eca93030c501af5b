#include "tutti/repository/variants.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace tutti {

std::vector<HardwareKind> BuiltinHardwareKinds() {
  return {
      {"cpu", "torch", 1, 1, 1, 500 * kMillisecond},
      {"inf1", "emulated", 10, 20, 3, kSecond},
      {"v100", "emulated", 200.0 / 15.0, 160, 16, 2 * kSecond},
  };
}

absl::StatusOr<LatencyProfile> ScaleProfile(const LatencyProfile& cpu, const HardwareKind& kind) {
  if (kind.latency_speedup <= 0 || kind.throughput_speedup <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("hardware kind '", kind.name, "': speed-ups must be positive"));
  }
  const double one = static_cast<double>(cpu.Latency(1));
  std::vector<ProfilePoint> points;
  for (const ProfilePoint& p : cpu.points()) {
    const double scaled = one / kind.latency_speedup + (static_cast<double>(p.latency) - one) / kind.throughput_speedup;
    points.push_back({p.batch, std::max<Duration>(1, std::llround(scaled))});
  }
  return LatencyProfile::FromPoints(std::move(points), Monotonicity::kEnforce);
}

absl::StatusOr<std::vector<ModelVariant>> GenerateVariants(const ModelConfig& model,
                                                           const std::vector<HardwareKind>& kinds) {
  const auto refuse = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("model '", model.name, "' cannot have variants: ", why));
  };
  if (model.platform == Platform::kEnsemble) return refuse("it is a graph");
  if (model.platform == Platform::kEmulated) return refuse("it is emulated (no weights to run)");
  if (model.stateful()) return refuse("it is stateful");
  if (!model.accuracy) return refuse("no measured accuracy (train or evaluate it first)");
  const auto cpu = model.profiles.find("cpu");
  if (cpu == model.profiles.end()) return refuse("no cpu profile (run `tutti profile` first)");
  std::vector<ModelVariant> variants;
  for (const HardwareKind& kind : kinds) {
    ModelVariant v{absl::StrCat(model.name, "@", kind.name), model.name, model.task, kind.name, kind.executor,
                   *model.accuracy, {}, kind.cost, kind.provision + static_cast<Duration>(model.load_ms.value_or(0) * kMillisecond),
                   4 * model.parameters.value_or(0)};
    if (kind.latency_speedup == 1 && kind.throughput_speedup == 1) {
      v.profile = cpu->second;
    } else {
      absl::StatusOr<LatencyProfile> p = ScaleProfile(cpu->second, kind);
      if (!p.ok()) return p.status();
      v.profile = *std::move(p);
    }
    variants.push_back(std::move(v));
  }
  return variants;
}

absl::StatusOr<std::vector<ModelVariant>> GenerateTaskVariants(const ModelRepository& repo, const std::string& task,
                                                               const std::vector<HardwareKind>& kinds) {
  std::vector<ModelVariant> variants;
  for (const std::string& name : repo.ModelNames()) {
    const ModelVersion& v = **repo.Find(name);
    if (v.config.task != task || !v.variant_of.empty()) continue;
    absl::StatusOr<std::vector<ModelVariant>> generated = GenerateVariants(v.config, kinds);
    if (!generated.ok()) continue;  // graphs, stateful models, models without accuracy or profile
    for (ModelVariant& g : *generated) variants.push_back(std::move(g));
  }
  if (variants.empty()) {
    return absl::NotFoundError(absl::StrCat("no model of task '", task, "' in ", repo.root(),
                                            " can have variants (stateless, with an accuracy and a cpu profile)"));
  }
  return variants;
}

ModelVersion VariantVersion(const ModelRepository& repo, const ModelVariant& variant) {
  ModelVersion v = **repo.Find(variant.model);
  v.config.name = variant.name;
  v.config.profiles = {{variant.hardware, variant.profile}};
  v.variant_of = variant.model;
  return v;
}

}  // namespace tutti
